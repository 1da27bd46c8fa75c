import ActomatonHost
import Synchronization

/// Prints the transitions the machines hand over — in the order they were made, each once it
/// is acknowledged (`PluginTransition.acknowledgement`): what `run` and `serve` print.
///
/// Machines hand their transitions over as they make them (as observer, with
/// `observesSends`), so input actions and the actions of timers print in the order they were
/// applied. A transition with nothing to wait for, and nothing before it waiting, prints at
/// once; the others wait in order, for one acknowledgement per batch (a journal acknowledges in
/// order). A transition that is never acknowledged is not printed: its action's error says so.
public final class TransitionPrinter: Sendable {
    private struct Queue {
        /// Handed over and not printed (nor dropped) yet, oldest first.
        var waiting: [PluginTransition] = []
        /// How many were ever taken off the front of `waiting`.
        var removed = 0
        var draining = false
        var idle: [CheckedContinuation<Void, Never>] = []

        /// Prints (with `print`) the transitions at the front that are acknowledged, up to
        /// `end` (a count of removals), and drops the ones that never will be.
        mutating func printAcknowledged(upTo end: Int, _ print: (PluginTransition) -> Void) {
            while removed < end, let first = waiting.first {
                switch first.acknowledgement.state {
                case .acknowledged: print(first)
                case .refused: break
                case .pending: return
                }
                waiting.removeFirst()
                removed += 1
            }
        }
    }

    // Held while printing: a transition is printed once, in order, by whoever takes it.
    private let queue = Mutex(Queue())
    private let print: @Sendable (PluginTransition) -> Void

    /// Creates a printer that hands each acknowledged transition to `print`, in order.
    ///
    /// - Parameter print: Prints one transition; called with the printer's lock held.
    public init(print: @escaping @Sendable (PluginTransition) -> Void) {
        self.print = print
    }

    /// The observer to give the machines (with `observesSends: true`).
    public var observer: PluginMachine.Observer {
        { [self] transition in enqueue(transition) }
    }

    /// Prints `transition` once it and everything before it is acknowledged.
    public func enqueue(_ transition: PluginTransition) {
        let startsDrain: Bool = queue.withLock { queue in
            if queue.waiting.isEmpty && transition.acknowledgement.isImmediate {
                print(transition)
                return false
            }
            queue.waiting.append(transition)
            if queue.draining { return false }
            queue.draining = true
            return true
        }
        if startsDrain { Task { await drain() } }
    }

    /// Prints, at once, every transition handed over that is acknowledged now, in order: for a
    /// host about to exit (a failed commit), so that every acknowledged action is printed.
    public func printAcknowledged() {
        queue.withLock { queue in queue.printAcknowledged(upTo: .max, print) }
    }

    /// Returns once every transition handed over so far is printed (or known never to be).
    public func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = queue.withLock { queue -> Bool in
                if queue.waiting.isEmpty && !queue.draining { return true }
                queue.idle.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func drain() async {
        while true {
            let batch: (end: Int, last: PluginTransition?)? = queue.withLock { queue in
                guard !queue.waiting.isEmpty else { return nil }
                return (queue.removed + queue.waiting.count, queue.waiting.last(where: { !$0.acknowledgement.isImmediate }))
            }
            guard let batch else {
                let idle: [CheckedContinuation<Void, Never>]? = queue.withLock { queue in
                    guard queue.waiting.isEmpty else { return nil }
                    queue.draining = false
                    defer { queue.idle = [] }
                    return queue.idle
                }
                guard let idle else { continue }
                for continuation in idle { continuation.resume() }
                return
            }
            // Acknowledgements come in order: waiting for the batch's last covers the batch.
            try? await batch.last?.acknowledgement.wait()
            queue.withLock { queue in queue.printAcknowledged(upTo: batch.end, print) }
        }
    }
}
