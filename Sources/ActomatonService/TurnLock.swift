import Synchronization

/// A lock for async code that hands itself over in the order callers asked for it: the turns
/// of one instance's actions. Uncontended, taking it neither suspends nor allocates.
final class TurnLock: Sendable {
    private struct Waiter {
        let id: UInt64
        /// `nil` once it was cancelled: the turn passes over it.
        var continuation: CheckedContinuation<Bool, Never>?
    }

    private struct State {
        var held = false
        var waiters: [Waiter] = []
        var head = 0
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Waits for the turn.
    func acquire() async {
        _ = await acquire(cancellable: false)
    }

    /// Waits for the turn unless the task is cancelled first: then returns `false`, without the
    /// turn. A request cut off by the end of a shutdown's time waited for its turn, and then
    /// applied its action, long after its client was told nothing.
    ///
    /// `inLine` is called once the caller holds the turn or waits in line for it (not when it
    /// is cancelled first): a caller after it is behind it.
    func acquireUnlessCancelled(inLine: (@Sendable () -> Void)? = nil) async -> Bool {
        await acquire(cancellable: true, inLine: inLine)
    }

    private func acquire(cancellable: Bool, inLine: (@Sendable () -> Void)? = nil) async -> Bool {
        if cancellable, Task.isCancelled { return false }
        // The turn, when it is free; else the ID this caller waits under.
        let waiting: UInt64? = state.withLock { state in
            guard state.held else {
                state.held = true
                return nil
            }
            defer { state.nextID &+= 1 }
            return state.nextID
        }
        guard let id = waiting else {
            inLine?()
            return true
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now: Bool? = state.withLock { state in
                    if cancellable, Task.isCancelled { return false }
                    if !state.held {
                        state.held = true
                        inLine?()
                        return true
                    }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    inLine?()
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            guard cancellable else { return }
            let cancelled = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                guard let index = state.waiters[state.head...].firstIndex(where: { $0.id == id }) else { return nil }
                defer { state.waiters[index].continuation = nil }
                return state.waiters[index].continuation
            }
            cancelled?.resume(returning: false)
        }
    }

    /// Takes the turn when it is free, without waiting; returns whether it did.
    func acquireIfFree() -> Bool {
        state.withLock { state in
            // A turn handed to a waiter stays held: a free turn has no one waiting.
            guard !state.held else { return false }
            state.held = true
            return true
        }
    }

    /// Hands the turn to the next waiter, or frees it.
    func release() {
        let next: CheckedContinuation<Bool, Never>? = state.withLock { state in
            while state.head < state.waiters.count {
                let waiter = state.waiters[state.head]
                state.head += 1
                if let continuation = waiter.continuation {
                    compact(&state)
                    return continuation
                }
            }
            state.held = false
            state.waiters.removeAll(keepingCapacity: true)
            state.head = 0
            return nil
        }
        next?.resume(returning: true)
    }

    private func compact(_ state: inout State) {
        if state.head >= 64, state.head * 2 >= state.waiters.count {
            state.waiters.removeFirst(state.head)
            state.head = 0
        }
    }

    /// How many callers wait for the turn (tests).
    var waiting: Int {
        state.withLock { state in state.waiters[state.head...].count { $0.continuation != nil } }
    }

    /// Runs `body` in a turn of its own.
    func withTurn<T, E: Error>(_ body: () async throws(E) -> T) async throws(E) -> T {
        await acquire()
        defer { release() }
        return try await body()
    }
}
