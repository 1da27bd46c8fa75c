@testable import ActomatonService
import NIOCore
import NIOEmbedded
import Synchronization
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

    /// A write past ``WriteStallDeadline/pieceBytes`` goes on as pieces of its bytes, in order;
    /// its promise completes once the last is taken.
    @Test func aLargeWriteGoesOnInPieces() throws {
        let (channel, held) = try makeChannel()
        let piece = WriteStallDeadline.pieceBytes
        let bytes = (0..<(3 * piece + 1)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let promise = channel.eventLoop.makePromise(of: Void.self)
        let written = Mutex(false)
        promise.futureResult.whenSuccess { written.withLock { $0 = true } }
        channel.writeAndFlush(ByteBuffer(bytes: bytes), promise: promise)
        #expect(held.waiting.map(\.readableBytes) == [piece, piece, piece, 1])
        #expect(held.waiting.flatMap { Array($0.readableBytesView) } == bytes)
        held.take(3)
        #expect(!written.withLock { $0 })
        held.take(1)
        #expect(written.withLock { $0 })
        // At the limit, one write as it came.
        channel.writeAndFlush(ByteBuffer(bytes: bytes.prefix(piece)), promise: nil)
        #expect(held.waiting.map(\.readableBytes) == [piece])
        _ = try channel.finish()
    }

    /// A client that takes a large message slowly, a piece within each timeout, is not cut,
    /// however long all of it takes; once it stops taking, it is.
    @Test func aSlowButSteadyReaderIsNotCut() throws {
        let (channel, held) = try makeChannel()
        let pieces = 20
        channel.writeAndFlush(ByteBuffer(repeating: 1, count: pieces * WriteStallDeadline.pieceBytes), promise: nil)
        for _ in 0..<(pieces - 1) {
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(1900))
            #expect(channel.isActive)
            held.take(1)
        }
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1999))
        #expect(channel.isActive, "38 s in all, never 2 s without progress")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
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
    /// The writes not taken yet, in order.
    private(set) var waiting: [ByteBuffer] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        promises.append(promise ?? context.eventLoop.makePromise())
        waiting.append(unwrapOutboundIn(data))
    }

    func take(_ count: Int) {
        for promise in promises.prefix(count) { promise.succeed() }
        promises.removeFirst(count)
        waiting.removeFirst(count)
    }

    func fail(_ count: Int) {
        for promise in promises.prefix(count) { promise.fail(ChannelError.ioOnClosedChannel) }
        promises.removeFirst(count)
        waiting.removeFirst(count)
    }
}
