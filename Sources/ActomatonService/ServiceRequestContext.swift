import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// The request context of the service's routes: Hummingbird's, the WebSocket upgrade's, and
/// the token the request came with (set by ``AccessMiddleware``).
public struct ServiceRequestContext: RequestContext, WebSocketRequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// Where a WebSocket route leaves its handler for the upgrade.
    public let webSocket: WebSocketHandlerReference<Self>
    /// The request's token; `nil` when the service runs without tokens.
    public var token: AccessToken?
    /// The request's connection: cut when a watcher the service ended does not take its last
    /// messages and the close in time (``ServiceConfiguration/watcherCloseTimeout``).
    let channel: any Channel

    /// Creates the context of a new request.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        token = nil
        channel = source.channel
    }
}
