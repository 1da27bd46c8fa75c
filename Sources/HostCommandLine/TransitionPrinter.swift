import ActomatonHost
import Synchronization

/// Prints the transitions of the machines — in the order each machine made them, each once it
/// is acknowledged (`PluginTransition.acknowledgement`): what `run` and `serve` print.
///
/// Two sources: a send's transitions are the value its submission returns, handed over by
/// ``printing(sendTo:_:)``; the transitions a machine makes on its own (its timers' actions)
/// come from its observer (``observer``, given without `observesSends`). While a send to a
/// machine is under way, that machine's own transitions are held, then merged with the send's
/// by `PluginTransition.ordinal`: input actions and the actions of timers print in the order
/// they were applied. A transition with nothing to wait for, and nothing before it waiting,
/// prints at once; the others wait in order, for one acknowledgement per batch (a journal
/// acknowledges in order). A transition that is never acknowledged is not printed: its
/// action's error says so.
public final class TransitionPrinter: Sendable {
    /// A machine's sends under way, and its own transitions made meanwhile.
    private struct Held {
        var sends = 0
        var transitions: [PluginTransition] = []
    }

    private struct Queue {
        /// Handed over and not printed (nor dropped) yet, oldest first.
        var waiting: [PluginTransition] = []
        /// How many were ever taken off the front of `waiting`.
        var removed = 0
        var draining = false
        var idle: [CheckedContinuation<Void, Never>] = []
        /// By machine address (`PluginTransition.address`): what is held while it is sent to.
        var held: [String: Held] = [:]

        /// Takes `transition` in line; prints it at once (with `print`) when it has nothing to
        /// wait for and nothing waits before it. Returns whether a drain must start.
        mutating func take(_ transition: PluginTransition, _ print: (PluginTransition) -> Void) -> Bool {
            if waiting.isEmpty && transition.acknowledgement.isImmediate {
                print(transition)
                return false
            }
            waiting.append(transition)
            if draining { return false }
            draining = true
            return true
        }

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

    /// The observer to give the machines, without `observesSends` (a send's transitions come
    /// from ``printing(sendTo:_:)``; with it, they would print twice).
    public var observer: PluginMachine.Observer {
        { [self] transition in enqueue(transition) }
    }

    /// Prints `transition` once it and everything before it is acknowledged; held while a
    /// send to its machine is under way (``printing(sendTo:_:)``).
    public func enqueue(_ transition: PluginTransition) {
        let startsDrain: Bool = queue.withLock { queue in
            if queue.held[transition.address] != nil {
                queue.held[transition.address]?.transitions.append(transition)
                return false
            }
            return queue.take(transition, print)
        }
        if startsDrain { Task { await drain() } }
    }

    /// Runs `send` — a submission to the machine whose address is `address` — and prints the
    /// transitions it returns (the action's and its feedback's) among the machine's own, in the
    /// order the machine made them. A send that throws prints nothing: its error says why.
    ///
    /// - Returns: What `send` returned.
    public func printing(
        sendTo address: String, _ send: () async throws(PluginCallError) -> PluginSubmission
    ) async throws(PluginCallError) -> PluginSubmission {
        queue.withLock { queue in queue.held[address, default: Held()].sends += 1 }
        let result: Result<PluginSubmission, PluginCallError>
        do { result = .success(try await send()) } catch { result = .failure(error) }
        let sent = (try? result.get()).map { [$0.transition] + $0.feedback } ?? []
        let startsDrain: Bool = queue.withLock { queue in
            guard var held = queue.held[address] else { return false }
            held.sends -= 1
            held.transitions += sent
            guard held.sends == 0 else {
                queue.held[address] = held
                return false
            }
            queue.held[address] = nil
            var startsDrain = false
            // Sorted by ordinal, stably: a machine numbers every transition it makes.
            for transition in held.transitions.enumerated().sorted(by: { ($0.element.ordinal, $0.offset) < ($1.element.ordinal, $1.offset) }) {
                startsDrain = queue.take(transition.element, print) || startsDrain
            }
            return startsDrain
        }
        if startsDrain { Task { await drain() } }
        return try result.get()
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
