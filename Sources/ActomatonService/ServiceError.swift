import ActomatonHost
import Hummingbird
import ActomatonPluginContract

/// Why the service refused or failed a request: each case one meaning and one HTTP status.
///
/// Its ``description`` is one line, sent as the body `{"error": "…"}`; the status comes from
/// ``status``. Errors thrown by a handler or a middleware reach the client this way (see
/// ``ServiceErrorMiddleware``).
public enum ServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// 400: the request cannot be read (bad JSON, an unknown action, wrong arguments, a bad
    /// key or query); the message says what.
    case badRequest(String)
    /// 401: no token, or not a valid one.
    case unauthorized(String)
    /// 403: the token is valid but its scopes do not cover the request.
    case forbidden(String)
    /// 404: no such plugin, instance or route.
    case notFound(String)
    /// 405: the path names a route that does not take the request's method; `allowed` is what
    /// it takes, sent as the `Allow` field.
    case methodNotAllowed(method: String, path: String, allowed: [HTTPRequest.Method])
    /// 410: what was asked for is no longer kept (a watcher's `after` older than the
    /// transitions kept); the message says what is.
    case gone(String)
    /// 413: the body is longer than the limit, in bytes.
    case bodyTooLarge(limit: Int)
    /// 431: the request's header fields are longer than the limit, in bytes.
    case headersTooLarge(limit: Int)
    /// 422: the plugin refused the action (its message), or an idempotency key was reused
    /// with another request.
    case unprocessable(String)
    /// 429: over a limit (instances, watchers, requests per second, idempotency keys);
    /// `retryAfter`, where the service knows it, is how many seconds until the limit lets the
    /// request through (the `Retry-After` field).
    case overLimit(String, retryAfter: Int? = nil)
    /// 500: the plugin failed (a crash in its worker, a trap in its sandbox, a broken
    /// contract); the instance was restored or stopped as the message says.
    case pluginFailed(String)
    /// 503: the service is shutting down.
    case shuttingDown
    /// The instance is owned by another host of the cluster, at this URL (421, when it cannot
    /// be forwarded there).
    case ownedElsewhere(name: String, owner: String)
    /// The instance's owner could not be reached, or ownership moved meanwhile: retry (503).
    case unavailable(String)
    /// 502: the instance's owner answered what this host cannot pass on (a status the API
    /// does not use, a body that is not JSON).
    case badGateway(String)
    /// 504: the instance's owner was sent the request and did not answer in time: it may have
    /// applied it.
    case gatewayTimeout(String)

    /// The HTTP status the error is sent with.
    public var status: HTTPResponse.Status {
        switch self {
        case .badRequest: .badRequest
        case .unauthorized: .unauthorized
        case .forbidden: .forbidden
        case .notFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .gone: .gone
        case .bodyTooLarge: .contentTooLarge
        case .headersTooLarge: .requestHeaderFieldsTooLarge
        case .unprocessable: .unprocessableContent
        case .overLimit: .tooManyRequests
        case .pluginFailed: .internalServerError
        case .shuttingDown, .unavailable: .serviceUnavailable
        case .ownedElsewhere: .misdirectedRequest
        case .badGateway: .badGateway
        case .gatewayTimeout: .gatewayTimeout
        }
    }

    /// The error, as one line: what came from outside in it (an action's name, a plugin's
    /// message, a peer's address) with its control and invisible characters escaped
    /// (`TerminalText.escaping(_:)`).
    public var description: String {
        switch self {
        case let .badRequest(message), let .unauthorized(message), let .forbidden(message), let .notFound(message),
             let .unprocessable(message), let .overLimit(message, _), let .pluginFailed(message), let .gone(message),
             let .unavailable(message), let .badGateway(message), let .gatewayTimeout(message):
            TerminalText.escaping(message)
        case let .bodyTooLarge(limit):
            "the request body is longer than \(limit) bytes, the limit (--max-body-size)"
        case let .headersTooLarge(limit):
            "the request's header fields are longer than \(limit) bytes, the limit (--max-header-size)"
        case .shuttingDown:
            "the service is shutting down"
        case let .methodNotAllowed(method, path, allowed):
            TerminalText.escaping("\(path) does not take \(method); it takes \(RouteMethods.allowField(allowed))")
        case let .ownedElsewhere(name, owner):
            TerminalText.escaping("\(name) is owned by another host of the cluster, at \(owner)")
        }
    }

    /// `{"error": "…"}`.
    public var json: String { Self.jsonLine(description) }

    /// `{"error": line}`.
    static func jsonLine(_ line: String) -> String { JSONText.object([("error", ServiceJSON.string(line))]) }

    /// The fields the response carries besides its content type: `Allow` for a 405, the
    /// scheme to authenticate with for a 401 (`WWW-Authenticate: Bearer`, as RFC 9110 requires),
    /// and `Retry-After` for a 429 whose wait is known.
    public var headers: HTTPFields {
        switch self {
        case let .methodNotAllowed(_, _, allowed): [.allow: RouteMethods.allowField(allowed)]
        case .unauthorized: [.wwwAuthenticate: #"Bearer realm="actomaton-host""#]
        case let .overLimit(_, seconds?): [.retryAfter: String(seconds)]
        default: [:]
        }
    }

    /// `duration` in whole seconds, rounded up, from 1 to 10^12: a `Retry-After`. Read to the
    /// millisecond first: a wait a rate computed as 1 s and some attoseconds is 1.
    static func wholeSecondsRoundedUp(_ duration: Duration) -> Int {
        let seconds = (duration / .milliseconds(1)).rounded() / 1000
        return Int(min(max(seconds, 1), 1e12).rounded(.up))
    }

    /// `value` as a refusal quotes what a request sent: in quotes, at most 100 bytes of it
    /// (whole characters), its control characters escaped, so that the refusal stays one line.
    static func quoted(_ value: some StringProtocol) -> String {
        "'" + TerminalText.escaping(value.cut(utf8Bytes: 100)) + "'"
    }

    /// The response: its status, its ``headers`` and `{"error": "…"}`.
    var response: Response { .json(json, status: status, headers: headers) }
}

extension ServiceError: HTTPResponseError {
    /// The error as a response: its status and `{"error": "…"}`.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response
    }
}

extension Response {
    /// A response whose body is `text`, already JSON.
    static func json(_ text: String, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}

extension ServiceError {
    /// The status and one line for a failed plugin call: 400 for what the command line also
    /// refuses before calling the plugin (unknown action, wrong arguments), 422 when the plugin
    /// refused the action or the machine's limits did, 500 when the plugin failed, 503 when the
    /// journal did not take the action (it was not applied: retry).
    init(_ error: PluginCallError) {
        let line = error.description
        switch error.reason {
        case .unknownAction, .wrongArgumentCount, .wrongArgumentType, .integerOutOfRange, .missingArgument, .unknownParameter,
             .stringContainsNUL, .stringTooLong:
            self = .badRequest(line)
        case .refused, .invalidRequest, .effectLimitReached, .effectTotalReached, .timerKeysUsedUp, .feedbackLimitReached:
            self = .unprocessable(line)
        case .describeFailed, .snapshotFailed, .restoreRefused, .workerFailed, .pluginStopped, .sandboxTrapped:
            self = .pluginFailed(line)
        case let .wasmMemoryTotalReached(_, _, _, failure) where failure.mayHaveChangedState:
            // Not "retry": the plugin's change may stand, and a retry would apply it again.
            self = .unprocessable(line)
        case .wasmMemoryTotalReached:
            // Not applied, and another instance passivated may make room: retry.
            self = .overLimit(line, retryAfter: 1)
        case .notAcknowledged:
            // Not durable, so not applied: in a cluster, another host took the instance over
            // (fencing) and brings it back without this action. Retry, as for a moving instance.
            self = .unavailable(line + "; retry")
        }
    }
}
