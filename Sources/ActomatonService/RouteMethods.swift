import Hummingbird

/// The methods each of the service's routes answers, for a `405 Method Not Allowed` and its
/// `Allow` field: a request whose path names a route, with a method that route does not take.
///
/// Every `GET` route also answers `HEAD` (the router makes it from the `GET`: the same status
/// and fields, no body). A path that names no route stays a 404.
public enum RouteMethods {
    /// One route: its path's segments (`nil` for a parameter, which matches any segment) and
    /// the methods it answers.
    struct Route: Sendable {
        let segments: [String?]
        let methods: [HTTPRequest.Method]
    }

    static let readOnly: [HTTPRequest.Method] = [.get, .head]

    /// Every route the service's router holds (see `ServiceRoutes`, `InspectorRoutes`,
    /// `DiagramRoute`); a test checks each against the router.
    static let routes: [Route] = [
        Route(segments: [], methods: readOnly),
        Route(segments: ["healthz"], methods: readOnly),
        Route(segments: ["readyz"], methods: readOnly),
        Route(segments: ["metrics"], methods: readOnly),
        Route(segments: ["v1", "openapi.yaml"], methods: readOnly),
        Route(segments: ["v1", "plugins"], methods: readOnly),
        Route(segments: ["v1", "plugins", nil, "diagram"], methods: readOnly),
        Route(segments: ["v1", "machines", nil], methods: readOnly),
        Route(segments: ["v1", "machines", nil, nil], methods: [.get, .head, .post, .delete]),
        Route(segments: ["v1", "machines", nil, nil, "watch"], methods: readOnly),
        Route(segments: ["inspector", nil], methods: readOnly),
        Route(segments: ["play", nil, nil], methods: readOnly),
    ]

    /// The methods the route `path` names answers, or `nil` when it names none. The path is
    /// split as the router splits it: a run of `/` is one.
    public static func allowed(forPath path: some StringProtocol) -> [HTTPRequest.Method]? {
        let parts = path.split(separator: "/")
        return routes.first { route in
            route.segments.count == parts.count && zip(route.segments, parts).allSatisfy { segment, part in segment.map { $0 == part } ?? true }
        }?.methods
    }

    /// The `Allow` field's value for `methods`: `GET, HEAD, POST, DELETE`.
    public static func allowField(_ methods: [HTTPRequest.Method]) -> String {
        methods.map(\.rawValue).joined(separator: ", ")
    }
}
