import ActomatonService
import NIOCore
import NIOPosix
import Testing
@testable import ActomatonCluster

/// The forwarder against a peer that answers what is not an answer.
@Suite("Cluster: forwarding to a peer that answers badly")
struct ClusterForwarderTests {
    /// Sends `reply` to whoever connects, once it has read anything, and closes.
    final class Replier: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let reply: [UInt8]
        init(_ reply: [UInt8]) { self.reply = reply }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let channel = context.channel
            context.writeAndFlush(NIOAny(channel.allocator.buffer(bytes: reply))).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// A peer on a loopback port the system picks, answering `reply`.
    func withPeer(answering reply: [UInt8], _ body: (Int) async throws -> Void) async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Replier(reply)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        do {
            try await body(server.localAddress!.port!)
        } catch {
            try? await server.close()
            throw error
        }
        try await server.close()
    }

    func forward(to port: Int) async -> RequestForwardingError? {
        let request = ForwardedRequest(method: .post, path: "/v1/machines/counter/k", headers: [:], body: ByteBuffer(string: "{}"))
        let forwarder = ClusterForwarder(timeout: .seconds(30))
        defer { forwarder.shutdown() }
        do {
            _ = try await forwarder.forward(request, to: "http://127.0.0.1:\(port)")
            return nil
        } catch {
            return error as? RequestForwardingError
        }
    }

    /// Regression (audit): an owner that answered garbage was taken as one that did not answer
    /// (504); it answered, badly, and says so (502), the request possibly applied.
    @Test func garbageIsAnAnswerThatCannotBeRead() async throws {
        try await withPeer(answering: Array("this is not HTTP at all\r\n\r\n".utf8)) { port in
            let error = await forward(to: port)
            #expect(error?.ownerAnswered == true, "\(String(describing: error))")
            #expect(error?.mayHaveReachedTheOwner == true)
        }
    }

    /// A peer that closes without a word did not answer: the request may have reached it.
    @Test func aPeerThatClosesDidNotAnswer() async throws {
        try await withPeer(answering: []) { port in
            let error = await forward(to: port)
            #expect(error?.ownerAnswered == false, "\(String(describing: error))")
            #expect(error?.mayHaveReachedTheOwner == true)
        }
    }
}
