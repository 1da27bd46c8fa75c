import Synchronization

/// One subscriber to an instance's transitions, with a bounded buffer.
///
/// The instance offers each transition's message; the watcher's connection takes them from
/// ``messages``. A watcher that falls more than its buffer behind — in messages, or in their
/// bytes (an instance's state can be large, and each message carries it) — is ended with
/// ``EndReason/tooSlow(buffer:)`` or ``EndReason/tooManyBytes(limit:)`` instead of being
/// buffered without bound; the messages already buffered are delivered first. Its connection
/// tells it each message it took (``took(_:)``), which frees that message's bytes.
public final class Watcher: Sendable {
    /// Why a watcher was ended by the service (the close frame's code and reason).
    public enum EndReason: Sendable, Hashable, CustomStringConvertible {
        /// More than `buffer` messages waited to be sent.
        case tooSlow(buffer: Int)
        /// More than `limit` bytes of messages waited to be sent.
        case tooManyBytes(limit: Int)
        /// The instance was deleted.
        case instanceDeleted
        /// The service is shutting down.
        case shuttingDown
        /// Another host of the cluster owns the instance now: watch it again (with `after`).
        case movedToAnotherHost

        /// The WebSocket close code: 1008 (policy), 1000 (normal) or 1001 (going away).
        public var closeCode: UInt16 {
            switch self {
            case .tooSlow, .tooManyBytes: 1008
            case .instanceDeleted: 1000
            case .shuttingDown, .movedToAnotherHost: 1001
            }
        }

        /// The close frame's reason, one line.
        public var description: String {
            switch self {
            case let .tooSlow(buffer): "too slow: more than \(buffer) transitions waited to be sent"
            case let .tooManyBytes(limit): "too slow: more than \(limit) bytes of transitions waited to be sent"
            case .instanceDeleted: "the instance was deleted"
            case .shuttingDown: "the service is shutting down"
            case .movedToAnotherHost: "another host owns the instance now; watch it again with after=SEQ"
            }
        }
    }

    /// The messages to send, in order; it ends when the watcher is ended (see ``endReason``).
    public let messages: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation
    private let reason = Mutex<EndReason?>(nil)
    private let buffer: Int
    private let byteLimit: Int
    /// The bytes of the counted messages offered and not yet taken, and how many of the missed
    /// ones (offered first, not counted) are still to be taken.
    private let bufferedBytes: Mutex<(bytes: Int, missedLeft: Int, missedToOffer: Int)>
    /// Finished when the watcher is ended or its client leaves.
    private let endSignal: AsyncStream<Never>
    private let endSignalContinuation: AsyncStream<Never>.Continuation

    /// Creates a watcher that buffers at most `buffer` messages, and at most `bytes` bytes of
    /// them, besides the `missed` messages offered first (a resuming watcher's backlog).
    public init(buffer: Int, bytes: Int = .max, missed: Int = 0) {
        self.buffer = buffer
        byteLimit = bytes
        bufferedBytes = Mutex((0, missed, missed))
        let (messages, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingOldest(buffer.addingReportingOverflow(missed).overflow ? .max : buffer + missed))
        self.messages = messages
        self.continuation = continuation
        (endSignal, endSignalContinuation) = AsyncStream.makeStream(of: Never.self)
    }

    /// Returns once the watcher is ended (``end(_:)``) or its client left, or the task is cancelled.
    func waitUntilEnded() async {
        for await _ in endSignal {}
    }

    /// Why the service ended the watcher, or `nil` while it runs (or when its client left).
    public var endReason: EndReason? { reason.withLock { $0 } }

    /// Offers a message; ends the watcher if its buffer is full.
    public func offer(_ message: String) {
        let size = message.utf8.count
        let fits = bufferedBytes.withLock { buffered in
            if buffered.missedToOffer > 0 {
                buffered.missedToOffer -= 1
                return true
            }
            // One message always fits when none waits: a state larger than the limit still reaches a watcher that keeps up.
            guard buffered.bytes == 0 || buffered.bytes <= byteLimit - size else { return false }
            buffered.bytes += size
            return true
        }
        guard fits else {
            end(.tooManyBytes(limit: byteLimit))
            return
        }
        if case .dropped = continuation.yield(message) { end(.tooSlow(buffer: buffer)) }
    }

    /// Tells the watcher its connection took `message` from ``messages`` (to write it): its
    /// bytes no longer count against the limit. The missed messages come first, uncounted.
    public func took(_ message: String) {
        let size = message.utf8.count
        bufferedBytes.withLock { buffered in
            if buffered.missedLeft > 0 {
                buffered.missedLeft -= 1
            } else {
                buffered.bytes -= size
            }
        }
    }

    /// The bytes of the counted messages offered and not yet taken.
    var bytesWaiting: Int { bufferedBytes.withLock { $0.bytes } }

    /// Ends the watcher for `why`: its connection sends what is buffered, then closes.
    public func end(_ why: EndReason) {
        let first = reason.withLock { reason in
            if reason != nil { return false }
            reason = why
            return true
        }
        if first {
            continuation.finish()
            endSignalContinuation.finish()
        }
    }

    /// Ends the stream when the client went away.
    func finish() {
        continuation.finish()
        endSignalContinuation.finish()
    }
}
