@testable import ActomatonService
import NIOCore
import NIOEmbedded
import Testing

/// ``WriteStallDeadline`` on an embedded channel whose "socket" (``HeldWrites``) takes a write
/// only when the test says so; the event loop's time is the test's.
@Suite struct WriteStallDeadlineTests {
    /// The channel: `HeldWrites` at the socket's end, the deadline after it.
    private func makeChannel(timeout: Duration = .seconds(2)) throws -> (EmbeddedChannel, HeldWrites) {
        let held = HeldWrites()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(held)
        try channel.pipeline.syncOperations.addHandler(WriteStallDeadline(timeout: timeout))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, held)
    }

    @Test func aWriteNotTakenWithinTheTimeoutCutsTheConnection() throws {
        let (channel, _) = try makeChannel()
        channel.writeAndFlush(ByteBuffer(string: "a message"), promise: nil)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }

    @Test func eachWriteTakenStartsTheClockOver() throws {
        let (channel, held) = try makeChannel()
        for index in 0..<3 { channel.writeAndFlush(ByteBuffer(string: "message \(index)"), promise: nil) }
        for _ in 0..<2 {
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(1500))
            held.take(1)
        }
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1999))
        #expect(channel.isActive, "the last write has waited less than the timeout")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }

    @Test func aConnectionWithNothingToWriteIsNeverCut() throws {
        let (channel, held) = try makeChannel()
        channel.writeAndFlush(ByteBuffer(string: "a message"), promise: nil)
        held.take(1)
        channel.embeddedEventLoop.advanceTime(by: .seconds(3600))
        #expect(channel.isActive)
        _ = try channel.finish()
    }

    @Test func aFailedWriteIsNoLongerWaitedOn() throws {
        let (channel, held) = try makeChannel()
        let promise = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(ByteBuffer(string: "a message"), promise: promise)
        held.fail(1)
        #expect(throws: (any Error).self) { try promise.futureResult.wait() }
        channel.embeddedEventLoop.advanceTime(by: .seconds(3600))
        #expect(channel.isActive)
        _ = try channel.finish()
    }
}

/// A socket that holds every write until told to take (or fail) it.
private final class HeldWrites: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    private var promises: [EventLoopPromise<Void>] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        promises.append(promise ?? context.eventLoop.makePromise())
    }

    func take(_ count: Int) {
        for promise in promises.prefix(count) { promise.succeed() }
        promises.removeFirst(count)
    }

    func fail(_ count: Int) {
        for promise in promises.prefix(count) { promise.fail(ChannelError.ioOnClosedChannel) }
        promises.removeFirst(count)
    }
}
