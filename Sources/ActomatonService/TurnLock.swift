import Synchronization

/// A lock for async code that hands itself over in the order callers asked for it: the turns
/// of one instance's actions. Uncontended, taking it neither suspends nor allocates.
final class TurnLock: Sendable {
    private struct State {
        var held = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }

    private let state = Mutex(State())

    /// Waits for the turn.
    func acquire() async {
        let free = state.withLock { state in
            if state.held { return false }
            state.held = true
            return true
        }
        if free { return }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if !state.held {
                    state.held = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Hands the turn to the next waiter, or frees it.
    func release() {
        let next: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard state.head < state.waiters.count else {
                state.held = false
                state.waiters.removeAll(keepingCapacity: true)
                state.head = 0
                return nil
            }
            defer {
                state.head += 1
                if state.head >= 64, state.head * 2 >= state.waiters.count {
                    state.waiters.removeFirst(state.head)
                    state.head = 0
                }
            }
            return state.waiters[state.head]
        }
        next?.resume()
    }

    /// Runs `body` in a turn of its own.
    func withTurn<T, E: Error>(_ body: () async throws(E) -> T) async throws(E) -> T {
        await acquire()
        defer { release() }
        return try await body()
    }
}
