import ActomatonCore
@testable import ActomatonEffect
import Testing

/// `tracksFeedbacks` changes what a send's task waits for, never what is cancelled: an effect
/// cancelled by a rule (its ID, a replacement, a queue policy) does not take with it the effects
/// its actions started, which live by their own IDs; the send's task still waits for those.
/// Only the caller cancelling the send's task cancels the whole tree.
///
/// Regression (review): an effect cancelled by a rule cancelled the effects its actions had
/// started, so a repeating timer replaced from its own tick (as a plugin's timer, which the host
/// always sends with `tracksFeedbacks`) cancelled its replacement, and a tick that stopped its
/// timer and scheduled a last action lost that action.
@Suite("Tracked feedbacks")
struct TrackedFeedbacksTests {
    private struct TimerID: EffectID {}

    private enum Action: Sendable { case start, tick, delayed, stop, twoDelayed }

    /// What each tick does.
    private enum OnTick: Sendable {
        /// Starts a new timer with the same ID (replacing the one that ticked) on the first tick.
        case replaceOnce
        /// Starts a new timer with the same ID on every tick.
        case replaceEveryTime
        /// Cancels the timer and schedules a delayed action.
        case stopAndSchedule
        /// Schedules a delayed action; the timer goes on.
        case schedule
    }

    private struct State: Sendable {
        var ticks = 0
        var delayedFired = 0
    }

    /// Ticks every second until cancelled.
    private static let timer = Effect<Action>(id: TimerID(), sequence: { context in
        AsyncStream<Action> {
            do {
                try await context.clock.sleep(for: .seconds(1))
                return .tick
            } catch {
                return nil
            }
        }
    })

    /// Sends `.delayed` after a second.
    private static let delayed = Effect<Action> { context in
        try await context.clock.sleep(for: .seconds(1))
        return .delayed
    }

    private static func host(
        _ onTick: OnTick, clock: ManualClock, reclaimer: EffectMemoryReclaimer = .shared
    ) -> TestHost<Action, State> {
        TestHost(state: State(), reducer: MealyReducer<Action, State, Void, Effect<Action>> { action, state, _ in
            switch action {
            case .start:
                return timer
            case .tick:
                state.ticks += 1
                switch onTick {
                case .replaceOnce: return state.ticks == 1 ? timer : .empty
                case .replaceEveryTime: return timer
                case .stopAndSchedule: return .cancel(id: TimerID()) + delayed
                case .schedule: return delayed
                }
            case .delayed:
                state.delayedFired += 1
                return .empty
            case .stop:
                return .cancel(id: TimerID())
            case .twoDelayed:
                return delayed + delayed
            }
        }, clock: clock, reclaimer: reclaimer)
    }

    @Test(.timeLimit(.minutes(10)))
    func aRepeatingTimerReplacedFromItsOwnTickKeepsTicking() async throws {
        let clock = ManualClock()
        let host = Self.host(.replaceOnce, clock: clock)
        let task = try #require(await host.send(.start, tracksFeedbacks: true))
        for expected in 1...3 {
            #expect(await clock.waitForSleepers(1), "tick \(expected): the timer is sleeping")
            await clock.advance(by: .seconds(1))
            #expect(await eventually { await host.state.ticks == expected })
        }
        #expect(await host.runningEffectCount == 1)
        await host.send(.stop)
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(await host.runningEffectCount == 0)
    }

    @Test(.timeLimit(.minutes(10)))
    func aTickThatStopsItsTimerKeepsTheActionItSchedules() async throws {
        let clock = ManualClock()
        let host = Self.host(.stopAndSchedule, clock: clock)
        let task = try #require(await host.send(.start, tracksFeedbacks: true))
        let firedWhenTheSendEnded = Task { () -> Int in
            _ = try? await task.value
            return await host.state.delayedFired
        }
        #expect(await clock.waitForSleepers(1))
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await host.state.ticks == 1 })
        #expect(await clock.waitForSleepers(1), "the delayed action is sleeping")
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await host.state.delayedFired == 1 })
        // The send's task waited for the delayed action, though the timer that started it was
        // cancelled; it says the timer was cancelled.
        #expect(await firedWhenTheSendEnded.value == 1)
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(await host.runningEffectCount == 0)
    }

    /// The caller cancelling the send's task still cancels what its effects' actions started.
    @Test(.timeLimit(.minutes(10)))
    func cancellingTheSendsTaskCancelsTheEffectsItsEffectsStarted() async throws {
        let clock = ManualClock()
        let host = Self.host(.schedule, clock: clock)
        let task = try #require(await host.send(.start, tracksFeedbacks: true))
        #expect(await clock.waitForSleepers(1))
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await host.state.ticks == 1 })
        #expect(await clock.waitForSleepers(2), "the timer and the delayed action are sleeping")
        #expect(await host.runningEffectCount == 2)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(await eventually { await host.runningEffectCount == 0 })
        await clock.advance(by: .seconds(5))
        #expect(await host.state.delayedFired == 0)
    }

    /// `waitUntilIdle()` waits, without tracking, for the effects the effects' actions start,
    /// however they were cancelled.
    @Test(.timeLimit(.minutes(10)))
    func waitingUntilIdleWaitsForWhatTheEffectsStarted() async throws {
        let clock = ManualClock()
        let host = Self.host(.stopAndSchedule, clock: clock)
        await host.send(.start)
        let firedWhenIdle = Task { () -> Int in
            await host.waitUntilIdle()
            return await host.state.delayedFired
        }
        #expect(await clock.waitForSleepers(1))
        await clock.advance(by: .seconds(1))
        #expect(await clock.waitForSleepers(1), "the delayed action is sleeping")
        await clock.advance(by: .seconds(1))
        #expect(await firedWhenIdle.value == 1)
        #expect(await host.runningEffectCount == 0)
        await host.waitUntilIdle()
    }

    /// A machine that is never idle: the wait ends when its task is cancelled.
    @Test(.timeLimit(.minutes(10)))
    func waitingUntilIdleEndsWhenCancelled() async throws {
        let clock = ManualClock()
        let host = Self.host(.replaceEveryTime, clock: clock)
        await host.send(.start)
        let waiting = Task { await host.waitUntilIdle() }
        #expect(await clock.waitForSleepers(1))
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await host.state.ticks == 1 })
        waiting.cancel()
        await waiting.value
        #expect(await host.runningEffectCount == 1)
        await host.send(.stop)
        await host.waitUntilIdle()
    }

    /// Without `returnsTask` (a host running an effect's action, which never awaits the task),
    /// `send` makes no task, even for several effects, tracked or not; the effects run alike.
    @Test(.timeLimit(.minutes(10)), arguments: [false, true])
    func withoutReturnsTaskNoTaskIsMade(tracksFeedbacks: Bool) async throws {
        let clock = ManualClock()
        let reclaimer = EffectMemoryReclaimer(configuration: .init(isEnabled: false))
        let host = Self.host(.schedule, clock: clock, reclaimer: reclaimer)
        let task = await host.send(.twoDelayed, options: .init(tracksFeedbacks: tracksFeedbacks, returnsTask: false))
        #expect(task == nil)
        #expect(reclaimer.effectsInFlight == 2)
        #expect(await clock.waitForSleepers(2))
        await clock.advance(by: .seconds(1))
        await host.waitUntilIdle()
        #expect(await host.state.delayedFired == 2)
        #expect(await eventually { reclaimer.effectsInFlight == 0 })
    }

    /// A timer replaced from every one of its ticks holds no chain of tasks: each one replaced
    /// ends, though the send's task waits for its replacement.
    @Test(.timeLimit(.minutes(10)))
    func aTimerReplacedOnEveryTickHoldsNoChainOfTasks() async throws {
        let clock = ManualClock()
        let reclaimer = EffectMemoryReclaimer(configuration: .init(isEnabled: false))
        let host = Self.host(.replaceEveryTime, clock: clock, reclaimer: reclaimer)
        let task = try #require(await host.send(.start, tracksFeedbacks: true))
        for expected in 1...200 {
            #expect(await clock.waitForSleepers(1))
            await clock.advance(by: .seconds(1))
            #expect(await eventually { await host.state.ticks == expected })
        }
        #expect(await eventually { reclaimer.effectsInFlight == 1 }, "\(reclaimer.effectsInFlight) effects' tasks in flight")
        await host.send(.stop)
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(await eventually { reclaimer.effectsInFlight == 0 })
    }
}
