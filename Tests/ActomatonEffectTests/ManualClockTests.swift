@testable import ActomatonEffect
import Testing

/// A task executor that can hold the jobs of the tasks that prefer it: a task resumed while they
/// are held does not run again until ``release()``. Otherwise its jobs run on the global
/// concurrent executor.
private final class HoldingExecutor: TaskExecutor, @unchecked Sendable {
    private let state = Locked((isHolding: false, held: [UnownedJob]()))

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let isHeld = state.withLock { state in
            if state.isHolding { state.held.append(job) }
            return state.isHolding
        }
        if !isHeld { globalConcurrentExecutor.enqueue(job) }
    }

    /// Holds the jobs enqueued from now on.
    func hold() {
        state.withLock { $0.isHolding = true }
    }

    /// Runs the held jobs, and those enqueued from now on, on the global concurrent executor.
    func release() {
        let held = state.withLock { state in
            state.isHolding = false
            defer { state.held = [] }
            return state.held
        }
        for job in held { globalConcurrentExecutor.enqueue(job) }
    }
}

@Suite("ManualClock")
struct ManualClockTests {
    /// Regression: a sleep cancelled after it was woken, before its task ran again, was taken
    /// for one cancelled before it registered: its ID was kept, for ever, in the set meant for
    /// those (the clock grew by one ID per such sleep).
    @Test func aSleepCancelledAfterItWasWokenLeavesNothingBehind() async throws {
        let clock = ManualClock()
        let executor = HoldingExecutor()
        let sleeper = Task(executorPreference: executor) {
            try await clock.sleep(until: .init(offset: .seconds(1)))
        }
        #expect(await clock.waitForSleepers(1))
        executor.hold()
        // Woken: its task is resumed, but held before it leaves the sleep.
        await clock.advance(by: .seconds(1))
        sleeper.cancel()
        executor.release()
        try await sleeper.value
        #expect(clock.sleeperCount == 0)
        #expect(clock.unregisteredSleepCount == 0)
    }

    /// A sleep in a task already cancelled throws at once, before it takes an ID, and leaves
    /// nothing behind. (Not the race the test above covers: this one passed before that fix.)
    @Test func aSleepInACancelledTaskThrowsBeforeTakingAnID() async throws {
        let clock = ManualClock()
        let executor = HoldingExecutor()
        executor.hold()
        let sleeper = Task(executorPreference: executor) {
            try await clock.sleep(until: .init(offset: .seconds(1)))
        }
        sleeper.cancel()
        executor.release()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
        #expect(clock.unregisteredSleepCount == 0)
    }
}
