import Synchronization

/// Tasks waiting until a condition that another lock (or an atomic) guards holds — no request
/// in flight, a shutdown begun, no watcher left, no effect holding a place in a budget — woken
/// by whoever makes it hold.
///
/// A waiter registers first and then checks the condition, and a waker changes the state
/// first and then wakes everyone registered, so no wake is missed between the two.
package final class ConditionWaiters: Sendable {
    private struct State {
        var next = 0
        var waiting: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    /// No task waiting yet.
    package init() {}

    /// Returns once `holds()` is true — at once, or at the next ``wakeAll()`` — or when the
    /// task is cancelled.
    package func wait(until holds: () -> Bool) async {
        let id = state.withLock { state in
            defer { state.next += 1 }
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                state.withLock { $0.waiting[id] = continuation }
                if holds() || Task.isCancelled { state.withLock { $0.waiting.removeValue(forKey: id) }?.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiting.removeValue(forKey: id) }?.resume()
        }
    }

    /// Wakes every waiter: call it after making the condition hold.
    package func wakeAll() {
        for waiter in state.withLock({ state in defer { state.waiting = [:] }; return Array(state.waiting.values) }) {
            waiter.resume()
        }
    }
}
