import ActomatonHost
import Synchronization

/// Tells a listener each transition once its commit is durable, in the order they were made,
/// never two at once; one the journal refused (fenced, or a failed commit) is not told at all.
///
/// It has no task of its own. Whoever learns that a commit ended tells what it made durable:
/// the request that sent an action, once its acknowledgement returned (between
/// ``beginSend()`` and ``endSend()`` it is the only one to wait); otherwise — a timer's
/// transition, or one left when the request ended — one task that waits for the oldest
/// transition's commit, started only while there is something to wait for. A request thus
/// costs no task switch beyond its own wait for the journal.
final class DurableDelivery: Sendable {
    private struct Item: Sendable {
        let transition: InstanceTransition
        /// `nil`: nothing to wait for.
        let acknowledgement: PluginAcknowledgement?
        let tell: @Sendable (InstanceTransition) -> Void

        /// Where its acknowledgement stands (the journal's lock taken once).
        var state: PluginAcknowledgement.State { acknowledgement?.state ?? .acknowledged }
    }

    private struct State {
        /// Made and not yet told, oldest first.
        var queue: [Item] = []
        /// Someone is telling the queue's head (only one at a time, to keep the order).
        var draining = false
        /// Someone found the queue being told meanwhile: the teller looks again before it stops.
        var drainAgain = false
        /// A request is between ``beginSend()`` and ``endSend()``: it tells what its wait settles.
        var sending = false
        /// The task that waits for commits is running.
        var waiting = false
        /// The seq of the last transition told or refused.
        var delivered: UInt64 = 0
        var finished = false
        var waiters: [(seq: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    /// Queues `transition`, to be told (with `tell`) once `acknowledgement` is settled and every
    /// transition before it was told or refused: at once when there is nothing to wait for.
    func deliver(_ transition: InstanceTransition, once acknowledgement: PluginAcknowledgement?,
                 tell: @escaping @Sendable (InstanceTransition) -> Void) {
        state.withLock { $0.queue.append(Item(transition: transition, acknowledgement: acknowledgement, tell: tell)) }
        drain()
    }

    /// A request is about to submit its action: until ``endSend()``, no task waits for commits
    /// (the request does, and tells what its wait settled).
    func beginSend() {
        state.withLock { $0.sending = true }
    }

    /// The request's wait for its acknowledgement ended (returned or threw): tells what is
    /// settled, and leaves what is not to the task that waits for commits.
    func endSend() {
        state.withLock { $0.sending = false }
        drain()
    }

    /// Tells, in order, the queued transitions whose commit is settled, up to the first one
    /// that still waits; then, unless a request or the waiting task will come back for that
    /// one, starts the task.
    private func drain() {
        let claimed = state.withLock { state in
            if state.draining {
                state.drainAgain = true
                return false
            }
            state.draining = true
            return true
        }
        guard claimed else { return }
        while true {
            // Only the one draining removes items: the head stays put while it is looked at.
            let head: Item? = state.withLock { $0.queue.first }
            if let head, case let settled = head.state, settled != .pending {
                if settled == .acknowledged { head.tell(head.transition) }
                let ready = state.withLock { state in
                    state.queue.removeFirst()
                    state.delivered = max(state.delivered, head.transition.seq)
                    return Self.ready(&state)
                }
                for continuation in ready { continuation.resume() }
                continue
            }
            let startWaiting: Bool? = state.withLock { state in
                if state.drainAgain {
                    state.drainAgain = false
                    return nil
                }
                state.draining = false
                guard !state.queue.isEmpty, !state.sending, !state.waiting else { return false }
                state.waiting = true
                return true
            }
            guard let startWaiting else { continue }
            if startWaiting { Task { await self.waitForCommits() } }
            return
        }
    }

    /// Waits for the commit of the oldest transition not told, tells it and the ones after it
    /// that are settled, and goes on while any is left.
    private func waitForCommits() async {
        var previous: UInt64?
        while true {
            let head: Item? = state.withLock { state in
                guard let head = state.queue.first else {
                    state.waiting = false
                    return nil
                }
                return head
            }
            guard let head else { return }
            if head.transition.seq == previous {
                // Settled, and being told by another: let it finish.
                await Task.yield()
            }
            previous = head.transition.seq
            try? await head.acknowledgement?.wait()
            drain()
        }
    }

    /// Returns once the transition numbered `seq` was told or refused (at once after ``finish()``).
    func waitUntilDelivered(_ seq: UInt64) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                guard !state.finished, state.delivered < seq else { return true }
                state.waiters.append((seq, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Stops making anyone wait for ``waitUntilDelivered(_:)``; the transitions queued are still
    /// settled in order (telling a detached listener nothing).
    func finish() {
        let ready = state.withLock { state in
            state.finished = true
            return Self.ready(&state)
        }
        for continuation in ready { continuation.resume() }
    }

    private static func ready(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let (delivered, finished) = (state.delivered, state.finished)
        let ready = state.waiters.filter { finished || $0.seq <= delivered }.map(\.continuation)
        state.waiters.removeAll { finished || $0.seq <= delivered }
        return ready
    }
}
