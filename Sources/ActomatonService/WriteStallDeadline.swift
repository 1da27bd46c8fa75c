import NIOCore

/// Closes a connection whose writes make no progress for `timeout`: something waits to be
/// written and none of it has reached the socket for that long — a client that reads nothing,
/// its socket full.
///
/// It watches the writes themselves, at the socket's end of the pipeline, not the calls that
/// make them: an asynchronous writer accepts a burst of writes before the channel says it is
/// full (a watcher fed from the journal handed 45 messages, 1 MB, to one that read nothing,
/// then waited for the next transition with its connection held), and a write accepted is not a
/// write taken. Only writes still waiting count: a connection with nothing to write is not
/// stalled, however long it is quiet.
///
/// Progress is counted in pieces of at most ``pieceBytes``: a write larger than that is passed
/// on as slices of the same bytes (no copy), each of which reaching the socket starts the clock
/// over. So a client that reads a large message slowly but steadily is not cut for taking
/// longer than `timeout` over all of it; one that reads nothing for `timeout` is.
final class WriteStallDeadline: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    /// The most bytes one write passed on holds: the unit of progress.
    static let pieceBytes = 16 * 1024

    private let timeout: TimeAmount
    /// Writes passed on whose promise has not completed.
    private var waiting = 0
    private var deadline: Scheduled<Void>?

    init(timeout: Duration) {
        self.timeout = TimeAmount(timeout)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(var buffer) = unwrapOutboundIn(data), buffer.readableBytes > Self.pieceBytes else {
            pass(data, promise: promise, context: context)
            return
        }
        var pieces: [EventLoopFuture<Void>] = []
        pieces.reserveCapacity(buffer.readableBytes / Self.pieceBytes + 1)
        while let piece = buffer.readSlice(length: min(Self.pieceBytes, buffer.readableBytes)), piece.readableBytes > 0 {
            let written = context.eventLoop.makePromise(of: Void.self)
            pieces.append(written.futureResult)
            pass(wrapOutboundOut(.byteBuffer(piece)), promise: written, context: context)
        }
        if let promise {
            EventLoopFuture.andAllSucceed(pieces, on: context.eventLoop).cascade(to: promise)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    /// Passes `data` on, counted among the writes waiting until its promise completes.
    private func pass(_ data: NIOAny, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        let promise = promise ?? context.eventLoop.makePromise()
        waiting += 1
        if deadline == nil { arm(context) }
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        promise.futureResult.whenComplete { _ in handler.value.progressed(boundContext.value) }
        context.write(data, promise: promise)
    }

    /// A write reached the socket (or failed): the clock starts over for those still waiting.
    private func progressed(_ context: ChannelHandlerContext) {
        waiting -= 1
        deadline?.cancel()
        deadline = nil
        if waiting > 0 { arm(context) }
    }

    private func arm(_ context: ChannelHandlerContext) {
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }
}
