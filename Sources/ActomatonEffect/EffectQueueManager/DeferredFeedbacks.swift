/// The tasks of a queued sequence's feedbacks (with `tracksFeedbacks`), awaited once the
/// sequence has ended and freed its slot (``EffectRuntimeStorage``): each is held only until it
/// ends, so a sequence that never ends (a repeating timer in a queue) holds only those still
/// running, not one per action it ever sent.
final class DeferredFeedbacks: Sendable {
    private struct State {
        var nextID = 0
        var running: [Int: Task<Void, Error>] = [:]
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Locked(State())

    /// How many of the tasks have not ended yet.
    var runningCount: Int { state.withLock { $0.running.count } }

    /// Holds `task` until it ends.
    func add(_ task: Task<Void, Error>) {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.running[state.nextID] = task
            return state.nextID
        }
        Task {
            _ = try? await task.value
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.running[id] = nil
                guard state.running.isEmpty else { return nil }
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }

    /// Returns once every task added has ended; cancelling the waiting task cancels them.
    /// Call it once, after the last ``add(_:)``.
    func waitForAll() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ended = state.withLock { state in
                    if state.running.isEmpty { return true }
                    state.waiter = continuation
                    return false
                }
                if ended { continuation.resume() }
            }
        } onCancel: {
            for task in state.withLock({ Array($0.running.values) }) { task.cancel() }
        }
    }
}
