import Actomaton
import ActomatonDebugging
import Clocks
import Testing

// Logging never changes behaviour: a logged reducer leaves the same states, returns the same
// effects and feeds back the same actions as the reducer itself.
private struct State: Sendable, Equatable {
    var count = 0
    var log: [String] = []
}

private enum Action: Sendable, Equatable {
    case start, step(Int), done
}

private let reducer = Reducer<Action, State, Void> { action, state, _ in
    switch action {
    case .start:
        state.log.append("start")
        return .nextAction(.step(1)) + Effect { context in
            try await context.clock.sleep(for: .seconds(1))
            return .done
        }
    case let .step(n):
        state.count += n
        state.log.append("step \(n)")
        return n < 3 ? .nextAction(.step(n + 1)) : .empty
    case .done:
        state.log.append("done")
        return .empty
    }
}

/// What one run of the scenario saw: the state after each send, and whether it started effects.
private struct Trace: Equatable {
    var states: [State] = []
    var startedEffects: [Bool] = []
}

private func runScenario(_ reducer: Reducer<Action, State, Void>) async throws -> Trace {
    let clock = TestClock()
    let actomaton = Actomaton<Action, State>(state: State(), reducer: reducer, clock: clock)
    var trace = Trace()

    let task = await actomaton.send(.start)
    trace.startedEffects.append(task != nil)
    trace.states.append(await actomaton.state)

    await waitForSleeper(on: clock)
    await clock.advance(by: .seconds(1))
    try await task?.value
    trace.states.append(await actomaton.state)

    let again = await actomaton.send(.step(10))
    trace.startedEffects.append(again != nil)
    trace.states.append(await actomaton.state)
    return trace
}

/// Waits, by yielding, until the effect started has gone to sleep on `clock`, so that
/// advancing the clock wakes it.
private func waitForSleeper(on clock: TestClock<Duration>) async {
    for _ in 0..<10_000 {
        do {
            try await clock.checkSuspension()
        } catch {
            return
        }
        await Task.yield()
    }
    Issue.record("No effect went to sleep on the clock")
}

@Suite("debug: behaviour")
struct BehaviourTests {
    @Test func aLoggedActomatonBehavesLikeTheReducerItself() async throws {
        let recorder = RecordingSink()
        let plain = try await runScenario(reducer)
        let logged = try await runScenario(reducer.debug("Scenario", to: recorder.sink))

        #expect(logged == plain)
        #expect(plain.states.last == State(count: 16, log: ["start", "step 1", "step 2", "step 3", "done", "step 10"]))
        #expect(plain.startedEffects == [true, false])
        // Every transition was logged, the ones fed back included.
        #expect(recorder.messages.count == 6)
    }

    @Test func theLoggedOutputIsTheReducersOutput() {
        let recorder = RecordingSink()
        let feedback = MealyReducer<Action, Int, Void, [Action]> { action, count, _ in
            count += 1
            return action == .start ? [.step(1), .done] : []
        }
        var plainState = 0
        var loggedState = 0
        for action in [Action.start, .done] {
            let plainOutput = feedback.run(action, &plainState, ())
            let loggedOutput = feedback.debug(to: recorder.sink).run(action, &loggedState, ())
            #expect(loggedOutput == plainOutput)
        }
        #expect(loggedState == plainState)
    }

    @Test func aLoggedMachineFeedsBackTheSameActions() {
        let recorder = RecordingSink()
        let feedback = MealyReducer<Action, [Action], Void, [Action]> { action, seen, _ in
            seen.append(action)
            if case let .step(n) = action, n < 3 { return [.step(n + 1)] }
            return action == .start ? [.step(1), .done] : []
        }
        var plain = MealyMachine(state: [], reducer: feedback, effectManager: ActionEffectManager())
        var logged = MealyMachine(state: [], reducer: feedback.debug(to: recorder.sink), effectManager: ActionEffectManager())

        #expect(logged.send(.start) == plain.send(.start))
        #expect(logged.state == plain.state)
        #expect(plain.state == [.start, .step(1), .step(2), .step(3), .done])
        #expect(recorder.messages.count == 5)
    }
}
