import ActomatonHost
import ActomatonService
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// Forwards requests for instances another host owns to that host, over HTTP/1.1 connections
/// kept alive between hosts (at most ``maxIdleConnectionsPerHost`` idle ones per host).
///
/// A connection carries one request at a time; a request that finds no idle connection opens
/// one. An answer must come within ``timeout``, and may be at most ``maxResponseBytes`` long;
/// past either the connection is closed and the forward fails (the client gets 503).
public final class ClusterForwarder: RequestForwarder, Sendable {
    /// The most idle connections kept to one host.
    public static let maxIdleConnectionsPerHost = 16
    /// The most bytes of a forwarded answer's body.
    public static let maxResponseBytes = 16 << 20

    /// How long a forwarded request may take, connecting included.
    public let timeout: TimeAmount
    private let group: any EventLoopGroup
    private let idle = NIOLockedValueBox<[String: [any Channel]]>([:])

    /// A forwarder whose requests must be answered within `timeout`.
    public init(timeout: TimeAmount = .seconds(10)) {
        self.timeout = timeout
        group = MultiThreadedEventLoopGroup.singleton
    }

    /// Closes the idle connections.
    public func shutdown() {
        let channels = idle.withLockedValue { idle in
            defer { idle = [:] }
            return idle.values.flatMap { $0 }
        }
        for channel in channels { channel.close(promise: nil) }
    }

    /// Sends `request` to the host at `owner` and returns its answer.
    ///
    /// Throws `RequestForwardingError`: one that says the request did not reach the owner when
    /// it could not connect, and one that says it may have when it failed after sending.
    public func forward(_ request: ForwardedRequest, to owner: String) async throws -> ForwardedResponse {
        let (host, port): (String, Int)
        do {
            (host, port) = try Self.hostAndPort(of: owner)
        } catch {
            throw RequestForwardingError("\(error)", mayHaveReachedTheOwner: false)
        }
        let channel: any Channel
        if let reused = idle.withLockedValue({ $0[owner]?.popLast() }), reused.isActive {
            channel = reused
        } else {
            do {
                channel = try await connect(host: host, port: port)
            } catch {
                throw RequestForwardingError("\(error)", mayHaveReachedTheOwner: false)
            }
        }
        var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method.rawValue), uri: request.path)
        head.headers.add(name: "Host", value: "\(host):\(port)")
        head.headers.add(name: "Content-Length", value: String(request.body.readableBytes))
        for field in request.headers { head.headers.add(name: field.name.rawName, value: field.value) }
        let promise = channel.eventLoop.makePromise(of: (HTTPResponseHead, ByteBuffer).self)
        let timeout = self.timeout
        let body = request.body
        let requestHead = head
        channel.eventLoop.execute {
            do {
                let collector = try channel.pipeline.syncOperations.handler(type: ResponseCollector.self)
                collector.expect(promise, deadline: timeout, on: channel)
                channel.write(HTTPClientRequestPart.head(requestHead), promise: nil)
                if body.readableBytes > 0 { channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
                channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
            } catch {
                promise.fail(error)
            }
        }
        let (responseHead, responseBody): (HTTPResponseHead, ByteBuffer)
        do {
            (responseHead, responseBody) = try await promise.futureResult.get()
        } catch {
            channel.close(promise: nil)
            throw RequestForwardingError("\(error)", mayHaveReachedTheOwner: true, ownerAnswered: (error as? ForwardingError)?.answered == true)
        }
        if responseHead.isKeepAlive {
            let kept = idle.withLockedValue { idle in
                guard idle[owner, default: []].count < Self.maxIdleConnectionsPerHost else { return false }
                idle[owner, default: []].append(channel)
                return true
            }
            if !kept { channel.close(promise: nil) }
        } else {
            channel.close(promise: nil)
        }
        var headers = HTTPFields()
        for (name, value) in responseHead.headers {
            if let field = HTTPField.Name(name) { headers.append(HTTPField(name: field, value: value)) }
        }
        return ForwardedResponse(status: Int(responseHead.status.code), headers: headers, body: responseBody)
    }

    private func connect(host: String, port: Int) async throws -> any Channel {
        try await ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(ResponseCollector())
                }
            }
            .connect(host: host, port: port)
            .get()
    }

    /// `http://HOST:PORT` split; only plain HTTP between hosts.
    static func hostAndPort(of url: String) throws -> (String, Int) {
        let refusal = ForwardingError("the owner's URL \(url.cut(utf8Bytes: 200)) is not http://HOST[:PORT]")
        // Read from the database, which may hold anything: a 5 MB address made every answer
        // that named it 10 MB.
        guard url.hasPrefix("http://"), url.utf8.count <= ClusterHost.maxAdvertiseLength else { throw refusal }
        var rest = url.dropFirst("http://".count)
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        var host = rest
        var port = 80
        // A colon after the host (an IPv6 address is in brackets) starts the port.
        if let colon = rest.lastIndex(of: ":"), !rest[colon...].contains("]") {
            guard let number = Int(rest[rest.index(after: colon)...]), (1...65535).contains(number) else { throw refusal }
            host = rest[..<colon]
            port = number
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0 == "@" || $0 == "[" || $0 == "]" }) else { throw refusal }
        return (String(host), port)
    }
}

/// Why a forward failed, in one line, and whether the owner answered (with what could not be
/// read as an answer).
struct ForwardingError: Error, CustomStringConvertible {
    let description: String
    let answered: Bool
    init(_ description: String, answered: Bool = false) {
        self.description = description
        self.answered = answered
    }
}

/// Gathers one response at a time on a connection and completes its promise.
private final class ResponseCollector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    private var promise: EventLoopPromise<(HTTPResponseHead, ByteBuffer)>?
    private var head: HTTPResponseHead?
    private var body = ByteBuffer()
    private var deadline: Scheduled<Void>?

    /// Waits for the next response, for at most `timeout` (on the channel's event loop).
    func expect(_ promise: EventLoopPromise<(HTTPResponseHead, ByteBuffer)>, deadline timeout: TimeAmount, on channel: any Channel) {
        self.promise = promise
        head = nil
        body.clear()
        let collector = NIOLoopBound(self, eventLoop: channel.eventLoop)
        deadline = channel.eventLoop.scheduleTask(in: timeout) {
            collector.value.fail(ForwardingError("no answer within \(timeout.nanoseconds / 1_000_000) ms"))
            channel.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .head(head):
            self.head = head
        case var .body(part):
            guard body.readableBytes + part.readableBytes <= ClusterForwarder.maxResponseBytes else {
                fail(ForwardingError("the answer is longer than \(ClusterForwarder.maxResponseBytes) bytes", answered: true))
                context.close(promise: nil)
                return
            }
            body.writeBuffer(&part)
        case .end:
            deadline?.cancel()
            if let head, let promise {
                self.promise = nil
                promise.succeed((head, body))
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(ForwardingError("the connection closed before the answer"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // What the HTTP decoder refused came from the owner: an answer, if not one of HTTP.
        fail(error is HTTPParserError || error is NIOTooManyBytesError ? ForwardingError("the answer is not HTTP: \(error)", answered: true) : error)
        context.close(promise: nil)
    }

    private func fail(_ error: any Error) {
        deadline?.cancel()
        promise?.fail(error)
        promise = nil
    }
}
