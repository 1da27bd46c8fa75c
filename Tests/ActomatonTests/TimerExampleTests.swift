import Actomaton
import Testing

// The seed README's example 1-3: a timer as an AsyncSequence effect, stopped by EffectID.
private typealias State = Int

private enum Action: Sendable {
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

@Suite("Example: timer")
struct TimerExampleTests {
    @Test func timer() async {
        let clock = ManualClock()
        let actomaton = Actomaton<Action, State>(
            state: 0,
            reducer: reducer,
            environment: environment,
            clock: clock
        )

        #expect(await actomaton.state == 0)

        await actomaton.send(.start)

        #expect(await actomaton.state == 0)

        await clock.waitForSleepers(1)
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await actomaton.state == 1 })

        await clock.waitForSleepers(1)
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await actomaton.state == 2 })

        await clock.waitForSleepers(1)
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await actomaton.state == 3 })

        await actomaton.send(.stop)
        #expect(await eventually { await actomaton.runningEffectCount == 0 })

        await clock.advance(by: .seconds(10))
        #expect(await actomaton.state == 3, "Should not increment because timer is stopped.")
    }
}
