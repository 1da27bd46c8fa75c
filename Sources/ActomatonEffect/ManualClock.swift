/// A clock whose time moves only when told to, and which tells how many tasks sleep on it.
///
/// For tests and simulations: give it to a machine (`Actomaton(…, clock: clock)`), then move
/// time with ``advance(by:)``. Effects run concurrently with the test, so before moving time
/// wait until the effects you expect are asleep — `waitForSleepers(_:)` — otherwise an effect
/// that reaches `context.clock.sleep(for:)` after the advance would sleep from the new time.
///
/// ```swift
/// let clock = ManualClock()
/// let task = await actomaton.send(.login)   // its effect sleeps for 1 s
/// await clock.waitForSleepers(1)
/// await clock.advance(by: .seconds(1))
/// try await task?.value
/// ```
public final class ManualClock: Clock, Sendable {
    /// A point in the clock's time: the time elapsed since the clock was made.
    public struct Instant: InstantProtocol, Sendable {
        /// Time since the clock's start.
        public var offset: Duration

        /// The instant `offset` after the clock's start.
        public init(offset: Duration = .zero) {
            self.offset = offset
        }

        /// The instant `duration` later.
        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: offset + duration)
        }

        /// The time from this instant to `other`.
        public func duration(to other: Instant) -> Duration {
            other.offset - offset
        }

        /// Whether `lhs` comes before `rhs`.
        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }
    }

    private struct Sleeper {
        let id: UInt64
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant()
        var sleepers: [Sleeper] = []
        var nextID: UInt64 = 0
        /// Sleeps given an ID but not registered yet. A cancellation before registration removes
        /// the ID, and the registration then finds it gone.
        var registering: Set<UInt64> = []
    }

    private let state = Locked(State())

    /// A clock at time zero.
    public init() {}

    /// The current time.
    public var now: Instant { state.withLock { $0.now } }

    /// The clock has no resolution limit.
    public var minimumResolution: Duration { .zero }

    /// How many tasks sleep on the clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// How many sleeps have an ID but are not registered yet (for tests: none once every sleep
    /// has registered, ended or been cancelled).
    var unregisteredSleepCount: Int { state.withLock { $0.registering.count } }

    /// Suspends until the clock reaches `deadline`; returns at once if it already has.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.registering.insert(state.nextID)
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    if state.registering.remove(id) == nil { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            // Not registered yet, registered, or already woken (then nothing is left to do).
            let sleeper: Sleeper? = state.withLock { state in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else {
                    state.registering.remove(id)
                    return nil
                }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward by `duration`, waking every sleeper due by then, earliest first.
    public func advance(by duration: Duration) async {
        await advance(to: now.advanced(by: duration))
    }

    /// Moves time forward to `deadline`, waking every sleeper due by then, earliest first.
    ///
    /// Time stops at each sleeper's deadline and the woken task gets a chance to run (and to
    /// sleep again, as a timer does) before time moves on.
    public func advance(to deadline: Instant) async {
        while true {
            let due: Sleeper? = state.withLock { state in
                guard let index = state.sleepers.indices
                    .filter({ state.sleepers[$0].deadline <= deadline })
                    .min(by: { state.sleepers[$0].deadline < state.sleepers[$1].deadline })
                else {
                    state.now = max(state.now, deadline)
                    return nil
                }
                let sleeper = state.sleepers.remove(at: index)
                state.now = max(state.now, sleeper.deadline)
                return sleeper
            }
            guard let due else { break }
            due.continuation.resume()
            for _ in 0..<100 { await Task.yield() }
        }
        for _ in 0..<100 { await Task.yield() }
    }

    /// Waits, by yielding (never sleeping), until at least `count` tasks sleep on the clock.
    ///
    /// - Returns: `false` if that did not happen within `maxYields` yields.
    @discardableResult
    public func waitForSleepers(_ count: Int, maxYields: Int = 100_000) async -> Bool {
        for _ in 0..<maxYields {
            if sleeperCount >= count { return true }
            await Task.yield()
        }
        return sleeperCount >= count
    }
}
