import HTTPTypes
import Hummingbird

/// One file of the inspector: its text and media type.
struct InspectorAsset: Sendable {
    let contentType: String
    let text: String
}

/// The pages a browser opens: the inspector at `/`, its files at `/inspector/NAME`, and the
/// games for two at `/play/tictactoe/{key}` and `/play/platformer/{key}`. The pages hold no
/// data: they ask the API for it, with the token the person enters, so they need none
/// themselves (``AccessRequirement/of(method:path:)``).
struct InspectorRoutes: Sendable {
    /// What the pages may do: load only their own files, talk only to this host, run no
    /// inline script (a diagram or a state cannot smuggle one in), submit no form (each is
    /// handled by the page's script).
    static let contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        + "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The games with a page of their own, by plugin name.
    static let games = ["tictactoe", "platformer"]

    func add(to router: Router<ServiceRequestContext>) {
        router.get("/") { _, _ in try Self.response(for: "index.html") }
        router.get("/inspector/:file") { _, context in
            try Self.response(for: context.parameters.get("file") ?? "")
        }
        router.get("/play/:game/:key") { _, context in
            let game = context.parameters.get("game") ?? ""
            guard Self.games.contains(game) else { throw ServiceError.notFound("no game named \(game); there are \(Self.games.joined(separator: ", "))") }
            _ = try InstanceKey(try PathParameter.decoded(context.parameters.get("key") ?? ""))
            return try Self.response(for: "play-\(game).html")
        }
    }

    /// The file called `name`, with headers that keep the page to itself; 404 for any other.
    static func response(for name: String) throws(ServiceError) -> Response {
        guard let asset = InspectorAssets.files[name] else { throw .notFound("no file \(name)") }
        var headers: HTTPFields = [.contentType: asset.contentType, .cacheControl: "no-cache"]
        headers[HTTPField.Name("Content-Security-Policy")!] = contentSecurityPolicy
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: asset.text)))
    }
}
