import Actomaton
import Synchronization
import Testing

// An `Actomaton` runs any `MealyReducerProtocol` whose output is an `Effect`: a struct reducer
// is called statically dispatched, with no closure box; a `Reducer` as before.
private enum Action: Sendable {
    case increment
    case incrementLater
    case loop
    case fail
}

private struct State: Sendable, Equatable {
    var count = 0
}

private struct Environment: Sendable {
    let step: Int
}

private struct Boom: Error {}

private struct StepCounter: MealyReducerProtocol, Sendable {
    func reduce(_ action: Action, into state: inout State, environment: Environment) -> Effect<Action> {
        switch action {
        case .increment:
            state.count += environment.step
            return .empty
        case .incrementLater:
            return Effect { context in
                try await context.clock.sleep(for: .seconds(1))
                return .increment
            }
        case .loop:
            return .nextAction(.loop)
        case .fail:
            return .fireAndForget { throw Boom() }
        }
    }
}

/// The same counter, needing no environment.
private struct PlainCounter: MealyReducerProtocol, Sendable {
    func reduce(_ action: Action, into count: inout Int, environment: Void) -> Effect<Action> {
        count += 1
        return .empty
    }
}

/// The failures a handler received.
private final class Failures: Sendable {
    private let failures = Mutex<[String]>([])
    func append(_ failure: EffectFailure) { failures.withLock { $0.append("\(failure)") } }
    var all: [String] { failures.withLock { $0 } }
}

@Suite("Actomaton: struct reducers and the failure handler")
struct StructReducerTests {
    @Test func aStructReducerRunsOnTheActor() async throws {
        let clock = ManualClock()
        let actomaton = Actomaton(state: State(), reducer: StepCounter(), environment: Environment(step: 2), clock: clock)
        await actomaton.send(.increment)
        #expect(await actomaton.state.count == 2)

        let task = await actomaton.send(.incrementLater)
        #expect(await clock.waitForSleepers(1))
        await clock.advance(by: .seconds(1))
        try await task?.value
        #expect(await actomaton.state.count == 4)
        #expect(await actomaton.runningEffectCount == 0)

        let plain = Actomaton(state: 0, reducer: PlainCounter())
        await plain.send(.increment)
        #expect(await plain.state == 1)
    }

    /// The README's example.
    @Test func theReadmeExample() async {
        struct Tally: MealyReducerProtocol {
            func reduce(_ action: Int, into total: inout Int, environment: Void) -> Effect<Int> {
                total += action
                return .empty
            }
        }

        let tally = Actomaton(state: 0, reducer: Tally())
        await tally.send(5)
        #expect(await tally.state == 5)
    }

    /// The `Reducer` spellings still compile, and pick the same machine.
    @Test func aClosureReducerStillRuns() async {
        let reducer = Reducer<Action, State, Environment> { action, state, environment in
            StepCounter().reduce(action, into: &state, environment: environment)
        }
        let actomaton = Actomaton<Action, State>(state: State(), reducer: reducer, environment: Environment(step: 3))
        await actomaton.send(.increment)
        #expect(await actomaton.state.count == 3)
    }

    @Test func failuresReachTheActomatonsHandler() async {
        let failures = Failures()
        let actomaton = Actomaton(
            state: State(), reducer: StepCounter(), environment: Environment(step: 1), onFailure: failures.append
        )
        await actomaton.send(.loop)
        _ = await actomaton.send(.fail)?.result
        #expect(failures.all == [
            "an Effect.nextAction loop was cut off (depthLimitReached(steps: 101)); the actions still waiting were dropped: check the reducer for a cycle",
            "an effect threw an error, and delivers nothing more: Boom()",
        ])
    }
}
