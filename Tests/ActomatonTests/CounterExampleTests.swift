import Actomaton
import Testing

// The seed README's example 1-1: a counter, with and without side effects.
private struct State: Sendable {
    var count: Int = 0
}

private enum Action: Sendable {
    case increment
    case decrement
}

private typealias Environment = Void

@Suite("Example: counter")
struct CounterExampleTests {
    @Test func counter() async {
        let reducer: Reducer<Action, State, Environment>
        reducer = Reducer { action, state, environment in
            switch action {
            case .increment:
                state.count += 1
                return Effect.empty
            case .decrement:
                state.count -= 1
                return Effect.empty
            }
        }

        let actomaton = Actomaton<Action, State>(
            state: State(),
            reducer: reducer
        )

        #expect(await actomaton.state.count == 0)
        await actomaton.send(.increment)
        #expect(await actomaton.state.count == 1)
        await actomaton.send(.increment)
        #expect(await actomaton.state.count == 2)
        await actomaton.send(.decrement)
        #expect(await actomaton.state.count == 1)
        await actomaton.send(.decrement)
        #expect(await actomaton.state.count == 0)
    }

    @Test func counterWithFireAndForgetEffects() async throws {
        let log = Log()
        let clock = ManualClock()
        let reducer = Reducer<Action, State, Environment> { action, state, environment in
            switch action {
            case .increment:
                state.count += 1
                return Effect.fireAndForget {
                    await log.append("increment")
                }
            case .decrement:
                state.count -= 1
                return Effect.fireAndForget { context in
                    await log.append("decrement and sleep...")
                    try await context.clock.sleep(for: .seconds(1))
                    await log.append("I'm awake!")
                }
            }
        }
        let actomaton = Actomaton<Action, State>(state: State(), reducer: reducer, clock: clock)

        try await actomaton.send(.increment)?.value
        let decrement = await actomaton.send(.decrement)
        #expect(await eventually { await log.lines == ["increment", "decrement and sleep..."] })
        await clock.waitForSleepers(1)
        await clock.advance(by: .seconds(1))
        try await decrement?.value
        #expect(await log.lines == ["increment", "decrement and sleep...", "I'm awake!"])
        #expect(await actomaton.state.count == 0)
    }
}

actor Log {
    private(set) var lines: [String] = []
    func append(_ line: String) { lines.append(line) }
}
