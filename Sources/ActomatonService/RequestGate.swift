import NIOCore
import NIOHTTP1

/// Sits right after the HTTP parser: refuses what the parser, or the WebSocket upgrade that
/// follows, cannot handle — with a status, after the answers to the requests before it, then
/// closing the connection.
///
/// - A request the parser refuses is answered 400 (431 for a head past its limits). The
///   requests pipelined before it are answered first: answering at once cut off the answer
///   to a request already applied.
/// - An `Upgrade` to anything but WebSocket is ignored (the header dropped): NIO's upgrade
///   handler lost the request's head when no upgrader matched, and closed without an answer
///   (`curl --http2` offers `h2c`).
/// - A WebSocket handshake without its key, or without `Connection: Upgrade`, is 400; one of
///   another version is 426 with `Sec-WebSocket-Version: 13`. Those too lost their head.
///
/// Once a WebSocket handshake is passed on, the connection may become a WebSocket: the gate
/// then passes everything on untouched.
final class RequestGate: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// A WebSocket handshake went on: what passes now may be frames.
    private var passingThrough = false
    /// Requests passed on, and whether the last one was passed on whole.
    private var requests = 0
    private var lastRequestComplete = true
    /// Responses written whole.
    private var responses = 0
    /// Set once a request is refused: the status to answer with (`nil`: none, only a close),
    /// and how many responses to wait for first.
    private var refusal: (status: HTTPResponseStatus?, after: Int)?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if passingThrough {
            context.fireChannelRead(data)
            return
        }
        // After a refusal, what follows on the connection is dropped.
        guard refusal == nil else { return }
        switch unwrapInboundIn(data) {
        case let .head(head):
            var head = head
            let protocols = head.headers[canonicalForm: "upgrade"].map { $0.lowercased() }
            if !protocols.isEmpty {
                if !protocols.contains("websocket") {
                    head.headers.remove(name: "upgrade")
                } else if let status = Self.webSocketRefusal(head) {
                    refuse(context, status: status, headers: status == .upgradeRequired ? [("Sec-WebSocket-Version", "13")] : [])
                    return
                } else {
                    passingThrough = true
                }
            }
            requests += 1
            lastRequestComplete = false
            context.fireChannelRead(wrapInboundOut(.head(head)))
        case .body:
            context.fireChannelRead(data)
        case .end:
            lastRequestComplete = true
            context.fireChannelRead(data)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !passingThrough, let parsing = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        refuse(context, status: parsing == .headerOverflow ? .requestHeaderFieldsTooLarge : .badRequest)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if passingThrough {
            context.write(data, promise: promise)
            return
        }
        if case .end = unwrapOutboundIn(data) { responses += 1 }
        context.write(data, promise: promise)
        answerIfDue(context)
    }

    /// Refuses with `status` once the requests passed on whole are answered. A request whose
    /// body broke off is the one refused, unless it was answered already: then only a close.
    private func refuse(_ context: ChannelHandlerContext, status: HTTPResponseStatus, headers: [(String, String)] = []) {
        guard refusal == nil else { return }
        let whole = lastRequestComplete ? requests : requests - 1
        refusal = (responses > whole ? nil : status, whole)
        extraHeaders = headers
        answerIfDue(context)
    }

    private var extraHeaders: [(String, String)] = []
    private var answered = false

    private func answerIfDue(_ context: ChannelHandlerContext) {
        guard let refusal, !answered, responses >= refusal.after else { return }
        answered = true
        let channel = context.channel
        guard let status = refusal.status else {
            context.flush()
            channel.close(promise: nil)
            return
        }
        var headers = HTTPHeaders([("Connection", "close"), ("Content-Length", "0")])
        headers.add(contentsOf: extraHeaders)
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Why a WebSocket handshake cannot be passed on, or `nil`: no key, no `Connection:
    /// Upgrade` (400), another version than 13 (426).
    static func webSocketRefusal(_ head: HTTPRequestHead) -> HTTPResponseStatus? {
        let connection = head.headers[canonicalForm: "connection"].map { $0.lowercased() }
        guard connection.contains("upgrade"), head.headers.first(name: "sec-websocket-key")?.isEmpty == false else { return .badRequest }
        guard head.headers[canonicalForm: "sec-websocket-version"] == ["13"] else { return .upgradeRequired }
        return nil
    }
}
