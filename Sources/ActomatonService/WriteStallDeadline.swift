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
final class WriteStallDeadline: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = Any

    private let timeout: TimeAmount
    /// Writes passed on whose promise has not completed.
    private var waiting = 0
    private var deadline: Scheduled<Void>?

    init(timeout: Duration) {
        self.timeout = TimeAmount(timeout)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let promise = promise ?? context.eventLoop.makePromise()
        waiting += 1
        if deadline == nil { arm(context) }
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        promise.futureResult.whenComplete { _ in handler.value.progressed(boundContext.value) }
        context.write(data, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
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
