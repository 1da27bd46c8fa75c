import ActomatonHost
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1

/// The server's connections, HTTP/1.1 with WebSocket upgrades, made to end: a client cannot
/// hold one of the `--max-connections` by sending nothing, half a request, or a request the
/// HTTP parser refuses.
///
/// - A connection's first request head must arrive, to its blank line, within
///   ``ServiceConfiguration/connectionIdleTimeout`` (past it, 408 when part of it came, else
///   only a close); after that, ``RequestGate`` bounds how
///   long a request takes to arrive whole and how long a connection idles between requests,
///   by the same timeout. Before, the first request had no deadline at all.
/// - A request the HTTP parser refuses is answered 400 (431 for a head past the parser's
///   limits) with `{"error": "…"}`, after the requests before it, and its connection closed
///   (``RequestGate``): the first request's refusal was left unanswered, and its connection
///   open for ever.
struct GuardedServerChannel: ServerChildChannel {
    typealias Value = HTTP1WebSocketUpgradeChannel.Value

    let inner: HTTP1WebSocketUpgradeChannel
    let headTimeout: TimeAmount
    /// The largest request body (`--max-body-size`): a request that says `Expect: 100-continue`
    /// with a longer one is refused before it sends it.
    var maxBodySize = Int.max

    /// The builder `makeApplication` serves with: `router` answers the requests and the
    /// WebSocket upgrades, each connection guarded with `idleTimeout` and `maxBodySize`.
    static func builder(router: Router<ServiceRequestContext>, idleTimeout: Duration, maxBodySize: Int = .max,
                        webSocketPingInterval: Duration = .seconds(30)) -> HTTPServerBuilder {
        let webSocketResponder = router.buildResponder()
        let timeout = TimeAmount(idleTimeout)
        return HTTPServerBuilder { responder in
            GuardedServerChannel(
                inner: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder,
                                                    configuration: .init(http1: .init(idleTimeout: nil),
                                                                         // Twice a message's limit: a frame past the
                                                                         // message limit is read, and closed with 1009
                                                                         // and a reason. The decoder's default, 16 KiB,
                                                                         // cut one of 16 KiB + 1 with no reason, and a
                                                                         // reset.
                                                                         // Once a handler has ended, the client has as
                                                                         // long to answer the close as a watcher has:
                                                                         // Hummingbird's 15 s held every shutdown that
                                                                         // a client which never answers was part of.
                                                                         ws: .init(maxFrameSize: ServiceRoutes.maxClientFrameBytes,
                                                                                   autoPing: .enabled(timePeriod: webSocketPingInterval),
                                                                                   closeTimeout: ServiceRoutes.closeReplyTimeout,
                                                                                   validateUTF8: true))),
                headTimeout: timeout, maxBodySize: maxBodySize)
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        // Last so far: after a TLS handler, before the HTTP parser the inner setup adds.
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(RequestHeadDeadline(timeout: headTimeout, logger: logger))
        }.flatMap {
            inner.setup(channel: channel, logger: logger)
        }.flatMapThrowing { value in
            // Right after the parser, which the inner setup added: its errors come here first.
            let parser = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try channel.pipeline.syncOperations.addHandler(RequestGate(requestTimeout: headTimeout, maxBodySize: maxBodySize, logger: logger), position: .after(parser))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        var logger = logger
        logger.handler = ClientConnectionErrorsAtDebug(inner: logger.handler)
        await inner.handle(value: value, logger: logger)
        value.channel.close(promise: nil)
    }
}

/// Forwards to `inner`, but at debug level the WebSocket channel's one line for a connection
/// whose first request never settled — the client closed it, or sent what ``RequestGate``
/// answered 400, 408 or 431. It was an error-level line per client mistake; the refusal's
/// status says what happened, to the client.
struct ClientConnectionErrorsAtDebug: LogHandler {
    /// The line hummingbird-websocket logs (`WebSocketChannel.handle(value:logger:)`).
    static let upgradeFailure = "Error handling upgrade result"

    var inner: any LogHandler

    var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        guard event.level > .debug, event.message.description == Self.upgradeFailure else { return inner.log(event: event) }
        guard inner.logLevel <= .debug else { return }
        var demoted = event
        demoted.level = .debug
        inner.log(event: demoted)
    }
}

/// Closes the connection unless the first request's head — its bytes up to the blank line
/// that ends it — arrives within `timeout`, answering 408 first when part of it came; then
/// leaves the pipeline.
final class RequestHeadDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?
    /// The last bytes seen, for a blank line split between two reads.
    private var previous: [UInt8] = []
    private var headEnded = false
    /// Whether any byte came: a close for a head cut short is answered 408 first.
    private var receivedAny = false

    /// Where a 408 is logged, at warning.
    private let logger: Logger

    init(timeout: TimeAmount, logger: Logger = Logger(label: "actomaton-host")) {
        self.timeout = timeout
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        if bytes.readableBytes > 0 { receivedAny = true }
        if !headEnded, Self.endsHead(previous: &previous, bytes: bytes.readableBytesView) {
            headEnded = true
            deadline?.cancel()
            deadline = nil
        }
        context.fireChannelRead(data)
        if headEnded { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard deadline == nil, !headEnded else { return }
        let channel = context.channel
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let (timeout, logger) = (timeout, logger)
        deadline = context.eventLoop.scheduleTask(in: timeout) {
            guard handler.value.receivedAny else { return channel.close(promise: nil) }
            let line = "the request's head did not arrive whole within \(seconds(.nanoseconds(timeout.nanoseconds))), "
                + "the limit (--connection-idle-timeout)"
            logger.warning("a request: 408 \(line)")
            let body = ServiceError.jsonLine(line)
            // Every answer of the service says nosniff (`NoSniffMiddleware`), this one too.
            let answer = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json\r\n"
                + "X-Content-Type-Options: nosniff\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
            boundContext.value.writeAndFlush(NIOAny(ByteBuffer(string: answer))).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// Whether `bytes`, after the last bytes seen (`previous`, kept up to date), hold the blank
    /// line that ends a head: CR LF CR LF, or LF LF.
    static func endsHead(previous: inout [UInt8], bytes: some Collection<UInt8>) -> Bool {
        var window = previous
        for byte in bytes {
            window.append(byte)
            if window.count > 4 { window.removeFirst(window.count - 4) }
            if window.suffix(2) == [10, 10] || window == [13, 10, 13, 10] { return true }
        }
        previous = window
        return false
    }
}
