import Actomaton
import ActomatonTesting
import Testing

// The seed README's example 1-3, a timer as an AsyncSequence effect stopped by EffectID,
// tested with `TestMachine`: each second is one `advance`, each tick one `receive`.
private typealias State = Int

private enum Action: Sendable, Equatable {
    case start, tick, stop
}

private struct TimerID: EffectID {}

private struct Environment: Sendable {
    let timerEffect: Effect<Action>
}

private let environment = Environment(
    timerEffect: Effect(id: TimerID(), sequence: { context in
        AsyncStream<Action> { continuation in
            let task = Task {
                while true {
                    try await context.clock.sleep(for: .seconds(1))
                    continuation.yield(.tick)
                }
            }

            continuation.onTermination = { @Sendable _ in
                task.cancel()
            }
        }
    })
)

private let reducer = Reducer<Action, State, Environment> { action, state, environment in
    switch action {
    case .start:
        return environment.timerEffect
    case .tick:
        state += 1
        return .empty
    case .stop:
        return Effect.cancel(id: TimerID())
    }
}

@Suite("TestMachine: timer")
struct TimerTests {
    @Test func timer() async {
        let machine = TestMachine(state: 0, reducer: reducer, environment: environment)

        await machine.send(.start)

        await machine.advance(by: .seconds(1))
        await machine.receive(.tick) { $0 = 1 }
        await machine.advance(by: .seconds(1))
        await machine.receive(.tick) { $0 = 2 }
        await machine.advance(by: .seconds(1))
        await machine.receive(.tick) { $0 = 3 }

        await machine.send(.stop)

        // Should not tick any more because the timer is stopped: a tick would be an
        // unexpected action when the test ends.
        await machine.advance(by: .seconds(10))
    }

    @Test func noTickBeforeASecond() async {
        let machine = TestMachine(state: 0, reducer: reducer, environment: environment)

        await machine.send(.start)
        await machine.advance(by: .milliseconds(999))
        #expect(await machine.state == 0)

        await machine.advance(by: .milliseconds(1))
        await machine.receive(.tick) { $0 = 1 }
        await machine.send(.stop)
    }

    @Test func timerTestedLoosely() async {
        let machine = TestMachine(state: 0, reducer: reducer, environment: environment, exhaustivity: .off)

        await machine.send(.start)
        for _ in 1...5 {
            await machine.advance(by: .seconds(1))
        }
        // The ticks are not received one by one: only where they led is checked.
        #expect(await eventually { await machine.state == 5 })

        // The timer is never stopped: a non-exhaustive test may end with it running.
    }

    @Test func timerLeftRunningOnPurpose() async {
        let machine = TestMachine(state: 0, reducer: reducer, environment: environment)

        await machine.send(.start)
        await machine.advance(by: .seconds(1))
        await machine.receive(.tick) { $0 = 1 }

        await machine.skipInFlightEffects()
        #expect(await machine.runningEffectCount == 0)
    }
}

/// A timer that re-arms itself: each tick schedules the next with the same effect ID.
private struct CycleID: EffectID {}

private let rearmingReducer = Reducer<Action, State, Void> { action, state, _ in
    let next = Effect<Action>(id: CycleID()) { context in
        try await context.clock.sleep(for: .seconds(1))
        return .tick
    }
    switch action {
    case .start:
        return next
    case .tick:
        state += 1
        return state < 3 ? next : .empty
    case .stop:
        return .cancel(id: CycleID())
    }
}

@Suite("TestMachine: a timer that re-arms itself")
struct RearmingTimerTests {
    @Test func keepsTicking() async {
        let machine = TestMachine(state: 0, reducer: rearmingReducer)
        await machine.send(.start)
        await machine.advance(by: .seconds(1))
        await machine.receive(.tick) { $0 = 1 }
        await machine.advance(by: .seconds(1))
        await machine.receive(.tick) { $0 = 2 }
        await machine.advance(by: .seconds(1))
        await machine.receive(.tick) { $0 = 3 }
    }

    @Test func onAnActomatonTrackingFeedbacks() async throws {
        let clock = ManualClock()
        let actomaton = Actomaton<Action, State>(state: 0, reducer: rearmingReducer, clock: clock)
        let task = await actomaton.send(.start, tracksFeedbacks: true)
        for expected in 1...3 {
            #expect(await clock.waitForSleepers(1))
            await clock.advance(by: .seconds(1))
            #expect(await eventually { await actomaton.state == expected })
        }
        try await task?.value
        #expect(await actomaton.state == 3)
    }
}
