@testable import ActomatonEffect
import ActomatonCore
import Testing

/// The timer queue with plain values for its waiters: no task, no clock, no lock.
private typealias Queue = EffectTimerQueue<Int>

@Suite struct EffectTimerQueueTests {
    /// Due sleeps come out in deadline order, and only those due.
    @Test func dueSleepsComeOutInDeadlineOrder() {
        var queue = Queue()
        let deadlines: [UInt64] = [50, 10, 40, 20, 30]
        for (waiter, deadline) in deadlines.enumerated() {
            let id = queue.reserve()
            let (cancelled, _) = queue.arm(id, deadline: deadline, waiter: waiter)
            #expect(cancelled == nil)
        }
        #expect(queue.nextDeadline == 10)
        #expect(queue.popDue(now: 25) == [1, 3])
        #expect(queue.popDue(now: 25) == [])
        #expect(queue.popDue(now: 100) == [4, 2, 0])
        #expect(queue.count == 0)
        #expect(queue.nextDeadline == nil)
    }

    /// Only a deadline earlier than every other one needs the timer thread to wake.
    @Test func onlyAnEarlierDeadlineWakesTheThread() {
        var queue = Queue()
        #expect(queue.arm(queue.reserve(), deadline: 20, waiter: 0).isEarliest)
        #expect(!queue.arm(queue.reserve(), deadline: 30, waiter: 1).isEarliest)
        #expect(queue.arm(queue.reserve(), deadline: 10, waiter: 2).isEarliest)
    }

    /// A cancelled armed sleep gives its waiter back at once and never comes out as due.
    @Test func aCancelledSleepIsResumedAtOnceAndNeverDue() {
        var queue = Queue()
        let first = queue.reserve()
        _ = queue.arm(first, deadline: 10, waiter: 7)
        let second = queue.reserve()
        _ = queue.arm(second, deadline: 20, waiter: 8)
        #expect(queue.cancel(first) == 7)
        #expect(queue.cancel(first) == nil, "a second cancellation finds nothing")
        #expect(queue.count == 1)
        #expect(queue.popDue(now: 100) == [8])
        #expect(queue.cancel(second) == nil, "its deadline passed first")
    }

    /// A sleep cancelled before it armed (its task was cancelled while installing its handler)
    /// gets its waiter back from `arm`, and leaves nothing behind.
    @Test func aSleepCancelledBeforeItArmsIsResumedByArm() {
        var queue = Queue()
        let id = queue.reserve()
        #expect(queue.cancel(id) == nil)
        let (cancelled, _) = queue.arm(id, deadline: 10, waiter: 3)
        #expect(cancelled == 3)
        #expect(queue.count == 0)
        #expect(queue.heapCount == 0)
    }

    /// A churn of cancelled sleeps (each new sleep cancelling the last, as a runNewest(1) queue
    /// does) keeps no more heap entries than twice the live ones, above a small floor.
    @Test func aChurnOfCancelledSleepsStaysSmall() {
        var queue = Queue()
        var last: UInt64?
        for waiter in 0..<100_000 {
            if let last { #expect(queue.cancel(last) != nil) }
            let id = queue.reserve()
            _ = queue.arm(id, deadline: 3_600_000_000_000 + UInt64(waiter), waiter: waiter)
            last = id
        }
        #expect(queue.count == 1)
        #expect(queue.heapCount <= 65)
        #expect(queue.popDue(now: .max) == [99_999])
    }

    /// Once every sleep is over, the queue gives back its storage.
    @Test func anIdleQueueGivesBackItsStorage() {
        var queue = Queue()
        var ids: [UInt64] = []
        for waiter in 0..<10_000 {
            let id = queue.reserve()
            _ = queue.arm(id, deadline: UInt64(waiter), waiter: waiter)
            ids.append(id)
        }
        #expect(queue.capacity >= 10_000)
        for id in ids.dropLast() { _ = queue.cancel(id) }
        #expect(queue.capacity >= 1, "one sleep is still armed")
        _ = queue.cancel(ids.last!)
        #expect(queue.capacity < 64)
        #expect(queue.heapCount == 0)
    }
}

/// The timer thread itself, on its own instance. No test waits for real time to pass: sleeps
/// are an hour long and end by cancellation.
@Suite struct EffectTimersTests {
    /// A cancelled sleep throws `CancellationError` at once and leaves nothing in the timers.
    @Test func aCancelledSleepEndsAtOnceAndReleasesItsEntry() async {
        let timers = EffectTimers()
        let sleeper = Task { try await timers.sleep(for: .seconds(3600)) }
        #expect(await eventually { timers.count == 1 })
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(timers.count == 0)
        #expect(timers.capacity < 64)
    }

    /// A task cancelled before it sleeps throws at once, without arming a timer.
    @Test func aSleepInACancelledTaskThrowsAtOnce() async {
        let timers = EffectTimers()
        let sleeper = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await timers.sleep(for: .seconds(3600))
        }
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(timers.count == 0)
    }

    /// With a real clock, effects sleep on the timers, and a cancelled effect's hour-long sleep
    /// ends at once.
    @Test func aManagerOnARealClockSleepsOnTheTimers() async {
        let host = TestHost<Int, Int>(
            state: 0,
            reducer: MealyReducer { _, _, _ in
                Effect(id: SleepID()) { context in
                    try await context.clock.sleep(for: .seconds(3600))
                    return nil
                }
            },
            clock: ContinuousClock()
        )
        let context = await host.context
        #expect(context.clock is EffectTimerClock<ContinuousClock>)
        let task = await host.send(1)
        #expect(await eventually { await host.runningEffectCount == 1 })
        task?.cancel()
        await #expect(throws: CancellationError.self) { try await task?.value }
    }
}

private struct SleepID: EffectID {}
