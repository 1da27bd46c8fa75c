import ActomatonHost
import Hummingbird
import HTTPTypes
import HummingbirdWebSocket
import Logging
import NIOWebSocket
import Synchronization

/// Turns every error into `{"error": "one line"}` with its status, and logs it at warning.
///
/// ``ServiceError`` keeps its status and line; Hummingbird's own errors (no such route, a body
/// over the limit) keep their status; anything else is a 500 whose line names no internals.
///
/// A WebSocket handshake (a request with `Upgrade: websocket` and a `Sec-WebSocket-Key`) that
/// is refused is accepted instead and closed at once with code 4000 + the status (4404, 4410,
/// 4429, …) and the line as its reason (at most ``maxCloseReasonBytes``): the WebSocket server
/// answers any refused upgrade with a bare 400, and a browser shows a client no status at all.
public struct ServiceErrorMiddleware: RouterMiddleware {
    /// The context of the service's routes.
    public typealias Context = ServiceRequestContext

    /// The body limit 413 answers name.
    let maxBodySize: Int

    /// Creates the middleware; `maxBodySize` is the limit a 413 names.
    public init(maxBodySize: Int) {
        self.maxBodySize = maxBodySize
    }

    /// Runs the rest of the chain and converts what it throws.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch is RequestCutShort {
            // The connection's gate answered it and logged it; this answer is dropped.
            return Response(status: .badRequest)
        } catch {
            let serviceError = Self.serviceError(for: error, request: request, maxBodySize: maxBodySize)
            // A plugin's refusal is its own text: escaped, it stays one line of the log.
            let line = TerminalText.escaping(serviceError.description)
            context.logger.warning("\(request.method) \(request.uri.path): \(serviceError.status.code) \(line)")
            if request.headers[.upgrade]?.lowercased() == "websocket", request.headers[.secWebSocketKey] != nil {
                let code = ServiceRoutes.refusal(serviceError.status)
                let line = serviceError.description
                // The subprotocol a browser offered is taken, or the browser fails the handshake.
                let closing = WebSocketUpgradeMiddleware<Context>(
                    shouldUpgrade: { request, _ in .upgrade(WebSocketToken.upgradeHeaders(for: request.headers)) },
                    onUpgrade: { _, outbound, _ in try await outbound.close(code, line: line) })
                return try await closing.handle(request, context: context) { _, _ in Response(status: .ok) }
            }
            return serviceError.response
        }
    }

    /// The most bytes of a WebSocket close frame's reason (its payload is at most 125 bytes,
    /// 2 of them the code).
    public static let maxCloseReasonBytes = 123

    /// The ``ServiceError`` an error is answered with: the router's "no such route" is a 405
    /// when the path names a route that takes other methods (``RouteMethods``).
    static func serviceError(for error: any Error, request: Request, maxBodySize: Int) -> ServiceError {
        if let error = error as? ServiceError { return error }
        if let error = error as? HTTPError {
            let message = error.body ?? error.status.reasonPhrase
            switch error.status {
            case .notFound:
                if error.body == nil, let allowed = RouteMethods.allowed(forPath: request.uri.path), !allowed.contains(request.method) {
                    return .methodNotAllowed(method: request.method.rawValue, path: request.uri.path, allowed: allowed)
                }
                return .notFound(error.body ?? "no such route")
            case .contentTooLarge: return .bodyTooLarge(limit: maxBodySize)
            case .badRequest: return .badRequest(message)
            case .methodNotAllowed: return .notFound("no such route for this method")
            default: return .pluginFailed("internal error: \(message)")
            }
        }
        if let error = error as? any HTTPResponseError, error.status == .contentTooLarge {
            return .bodyTooLarge(limit: maxBodySize)
        }
        return .pluginFailed("internal error")
    }
}

extension WebSocketOutboundWriter {
    /// Closes the WebSocket with `code` and `line` as its reason: cut, with `…`, to the
    /// ``ServiceErrorMiddleware/maxCloseReasonBytes`` a close frame holds.
    func close(_ code: WebSocketErrorCode, line: String) async throws {
        let limit = ServiceErrorMiddleware.maxCloseReasonBytes
        let reason = line.utf8.count > limit ? line.prefix(utf8Bytes: limit - "…".utf8.count) + "…" : line
        try await close(code, reason: reason)
    }
}

/// Adds `X-Content-Type-Options: nosniff` to every answer, so that a browser takes each as the
/// media type it names (an instance's state, a plugin's text, read as JSON, never as a page).
public struct NoSniffMiddleware: RouterMiddleware {
    /// The context of the service's routes.
    public typealias Context = ServiceRequestContext

    static let field = HTTPField.Name("X-Content-Type-Options")!

    /// Creates the middleware.
    public init() {}

    /// Runs the rest of the chain and marks its answer.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[Self.field] = "nosniff"
        return response
    }
}

/// Refuses, 404, a path with an empty segment — `//` in it, or a `/` at its end but for `/`
/// itself. The router reads `/v1/machines/counter/k/` and `/v1//machines/counter//k` as
/// `/v1/machines/counter/k`: an action sent to a path no route names was applied.
public struct EmptySegmentMiddleware: RouterMiddleware {
    /// The context of the service's routes.
    public typealias Context = ServiceRequestContext

    /// Creates the middleware.
    public init() {}

    /// Refuses the request when its path has an empty segment; otherwise runs the rest.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if Self.hasEmptySegment(path) {
            throw ServiceError.notFound("no such route: \(path.prefix(utf8Bytes: 256)) has an empty segment")
        }
        return try await next(request, context)
    }

    /// Whether a path has two slashes in a row, or ends with one after its first byte.
    static func hasEmptySegment(_ path: String) -> Bool {
        // Bytes, not `contains("//")`: Foundation's substring search was 1.5% of a request.
        var previousIsSlash = false
        for byte in path.utf8 {
            let isSlash = byte == UInt8(ascii: "/")
            if isSlash, previousIsSlash { return true }
            previousIsSlash = isSlash
        }
        return previousIsSlash && path.utf8.count > 1
    }
}

/// Refuses a request whose header fields are longer than the limit (431), before anything
/// else reads them.
///
/// The size counted is that of the fields as HTTP/1.1 sends them: `name: value` and a line
/// break each (the request line aside). The HTTP parser itself refuses a head over 80 KiB.
public struct HeaderLimitMiddleware: RouterMiddleware {
    /// The context of the service's routes.
    public typealias Context = ServiceRequestContext

    /// The largest size of a request's header fields, in bytes.
    let maxHeaderSize: Int

    /// Creates the middleware.
    ///
    /// - Parameter maxHeaderSize: The largest size of a request's header fields, in bytes.
    public init(maxHeaderSize: Int) {
        self.maxHeaderSize = maxHeaderSize
    }

    /// Checks the size, then runs the rest of the chain.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var size = 0
        for field in request.headers {
            size += field.name.rawName.utf8.count + field.value.utf8.count + 4
        }
        // `Host` arrives as the request's authority, outside its header fields: counted as sent.
        if let authority = request.head.authority { size += "Host".utf8.count + authority.utf8.count + 4 }
        guard size <= maxHeaderSize else { throw ServiceError.headersTooLarge(limit: maxHeaderSize) }
        return try await next(request, context)
    }
}

/// Whether the service takes new requests, and how many are in flight: what a graceful
/// shutdown waits for.
public final class ServiceLifecycleState: Sendable {
    private struct State {
        var draining = false
        var inFlight = 0
        var cutOff = 0
    }

    private let state = Mutex(State())
    private let idleWaiters = ConditionWaiters()
    private let drainingWaiters = ConditionWaiters()

    /// Creates the state of a running service.
    public init() {}

    /// Whether shutdown has begun: new requests get 503, `/readyz` says not ready.
    public var isDraining: Bool { state.withLock { $0.draining } }

    /// How many requests the end of the shutdown's time cut off.
    public var cutOff: Int { state.withLock { $0.cutOff } }

    /// Counts a request cut off by the end of the shutdown's time (its task cancelled).
    func noteCutOff() {
        state.withLock { $0.cutOff += 1 }
    }

    /// Stops taking new requests.
    public func beginDraining() {
        state.withLock { $0.draining = true }
        drainingWaiters.wakeAll()
    }

    /// Returns once shutdown has begun, or when the task is cancelled.
    func waitUntilDraining() async {
        await drainingWaiters.wait { isDraining }
    }

    /// Counts a request in; `false` when draining (it is then answered 503).
    func enter() -> Bool {
        state.withLock { state in
            if state.draining { return false }
            state.inFlight += 1
            return true
        }
    }

    /// Counts a request out.
    func leave() {
        let idle = state.withLock { state in
            state.inFlight -= 1
            return state.inFlight == 0
        }
        if idle { idleWaiters.wakeAll() }
    }

    /// How many requests are in flight.
    public var inFlight: Int { state.withLock { $0.inFlight } }

    /// Returns once no request is in flight, or when the task is cancelled (a shutdown past
    /// its timeout).
    public func waitUntilIdle() async {
        await idleWaiters.wait { inFlight == 0 }
    }
}

/// Answers 503 once shutdown has begun (`/healthz` aside), and counts the requests in flight.
public struct DrainMiddleware: RouterMiddleware {
    /// The context of the service's routes.
    public typealias Context = ServiceRequestContext
    let lifecycle: ServiceLifecycleState

    /// Creates the middleware over `lifecycle`.
    public init(lifecycle: ServiceLifecycleState) {
        self.lifecycle = lifecycle
    }

    /// Refuses or counts the request.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if request.uri.path == "/healthz" { return try await next(request, context) }
        guard lifecycle.enter() else { throw ServiceError.shuttingDown }
        defer { lifecycle.leave() }
        return try await next(request, context)
    }
}

/// Checks the `Authorization: Bearer TOKEN` header against the tokens file, and the token's
/// scopes against what the request needs (``AccessRequirement/of(method:path:)``): 401 without
/// a valid token, 403 outside its scopes, 429 past its requests per second. Without a tokens
/// file the listen address is loopback only, and a request passes when it is addressed to this
/// machine (its `Host` localhost, an address of 127.0.0.0/8 or ::1) and was not sent by a page
/// of another site (its `Origin`, when it has one, names this machine too): else 403.
///
/// Guessing is slowed down: a client address (an IPv4 address, or an IPv6 address's /64
/// network) whose failed authentications used up its budget
/// (``ServiceConfiguration/maxFailedAuthenticationsPerMinute``) is answered 429 before its
/// token is looked at, until time refills the budget.
///
/// A browser cannot set a header on a WebSocket, so a watch request may carry its token as a
/// subprotocol instead: `Sec-WebSocket-Protocol: actomaton.v1, actomaton.token.HEX`, the
/// token's bytes in lowercase hexadecimal (the host answers with `actomaton.v1`).
public struct AccessMiddleware: RouterMiddleware {
    /// The context of the service's routes.
    public typealias Context = ServiceRequestContext
    let tokens: TokenTable?
    let limiter: RateLimiter<Int>
    let rate: Int
    let failedAuthentications: RateLimiter<ClientAddress>
    let failureRate: Int
    /// The host names a request without tokens may address besides this machine's:
    /// `--allow-host`'s, and in a cluster the host of this host's `--advertise` URL (forwarded
    /// requests name it).
    let allowedHosts: Set<String>

    init(tokens: TokenTable?, limiter: RateLimiter<Int>, rate: Int, failedAuthentications: RateLimiter<ClientAddress>, failureRate: Int,
         allowedHosts: Set<String> = []) {
        self.allowedHosts = allowedHosts
        self.tokens = tokens
        self.limiter = limiter
        self.rate = rate
        self.failedAuthentications = failedAuthentications
        self.failureRate = failureRate
    }

    /// Authenticates and authorizes the request.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let tokens else {
            // What would need no token needs no local address either (the path read only when
            // the request is refused: nearly every request is local).
            if let refusal = LocalRequests.refusal(authority: request.head.authority, origin: request.headers[.origin], alsoAllowed: allowedHosts),
               AccessRequirement.of(method: request.method.rawValue, path: request.uri.path) != .none {
                throw ServiceError.forbidden(refusal)
            }
            return try await next(request, context)
        }
        // The plugin the router matched, where it matched one: the check reads the path as it does.
        // Decoded as the route decodes it (one it cannot decode is refused there, 400, and read
        // here as written).
        let requirement = context.parameters.get("plugin").map { raw in
            AccessRequirement.of(method: request.method.rawValue, plugin: (try? PathParameter.decoded(raw)) ?? raw)
        }
            ?? AccessRequirement.of(method: request.method.rawValue, path: request.uri.path)
        if requirement == .none { return try await next(request, context) }
        let client = ClientAddress(context.channel.remoteAddress)
        guard !failedAuthentications.isExhausted(client) else {
            throw ServiceError.overLimit("more than \(failureRate) failed authentications from this address in a minute, its limit "
                                         + "(--max-failed-authentications-per-minute): wait, then retry with a valid token",
                                         retryAfter: failedAuthentications.secondsUntilAdmitted(client))
        }
        let token: AccessToken
        do {
            token = try Self.authenticate(request, with: tokens)
        } catch {
            _ = failedAuthentications.admit(client)
            throw error
        }
        guard token.allows(requirement) else {
            let need: String = switch requirement {
            case let .read(plugin): "read:\(plugin)"
            case let .send(plugin): "send:\(plugin)"
            case .admin: "admin"
            case .none, .anyToken: "a token"
            }
            throw ServiceError.forbidden("the token's scopes do not allow this request (it needs \(need))")
        }
        guard limiter.admit(token.line) else {
            throw ServiceError.overLimit("the token used up its \(rate) requests per second (bursts of up to \(rate)), its limit (--max-requests-per-second)",
                                         retryAfter: limiter.secondsUntilAdmitted(token.line))
        }
        var context = context
        context.token = token
        return try await next(request, context)
    }

    /// The token `request` carries, looked up in `tokens`; 401 without a valid one.
    static func authenticate(_ request: Request, with tokens: TokenTable) throws(ServiceError) -> AccessToken {
        if let header = request.headers[.authorization] {
            guard header.utf8.count <= 16 + TokenTable.maxTokenLength, let secret = bearerToken(in: header),
                  let valid = tokens.authenticate(secret)
            else {
                throw .unauthorized("the token is not valid")
            }
            return valid
        }
        if let secret = try WebSocketToken.secret(in: request.headers) {
            guard let valid = tokens.authenticate(secret) else { throw .unauthorized("the token is not valid") }
            return valid
        }
        throw .unauthorized("no token: send the header Authorization: Bearer TOKEN")
    }

    /// The token of an `Authorization` header of the `Bearer` scheme — its name in any case,
    /// then one or more spaces (RFC 9110, 11.1 and 11.4) — or `nil`.
    static func bearerToken(in header: String) -> Substring? {
        guard let space = header.firstIndex(of: " "), header[..<space].lowercased() == "bearer" else { return nil }
        let token = header[space...].drop { $0 == " " }
        return token.isEmpty ? nil : token
    }
}
