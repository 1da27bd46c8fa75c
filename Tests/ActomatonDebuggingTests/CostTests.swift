import ActomatonCore
import ActomatonDebugging
import Testing

// Logging costs nothing when it is off: no value is formatted for an entry that is not written.
private let counter = DumpCounter()

private struct State: Sendable, Equatable, CustomReflectable {
    var count = 0

    var customMirror: Mirror {
        counter.record()
        return Mirror(self, children: ["count": count])
    }
}

private enum Action: Sendable, Equatable {
    case increment, tick
}

private let reducer = MealyReducer<Action, State, Void, Void> { action, state, _ in
    if action == .increment { state.count += 1 }
}

@Suite("debug: cost when off", .serialized)
struct CostTests {
    private func run(_ reducer: MealyReducer<Action, State, Void, Void>, _ actions: [Action]) -> (state: State, dumps: Int) {
        let before = counter.dumps
        var state = State()
        for action in actions {
            reducer.run(action, &state, ())
        }
        return (state, counter.dumps - before)
    }

    @Test func aDisabledSinkFormatsNothing() {
        let recorder = RecordingSink(isEnabled: false)
        let result = run(reducer.debug(format: .actionAndStateDiff, to: recorder.sink), [.increment, .increment])

        #expect(result.state.count == 2)
        #expect(result.dumps == 0)
        #expect(recorder.messages.isEmpty)
        #expect(recorder.enabledChecks == 2)
    }

    @Test func theDisabledSinkIsNotEvenAsked() {
        let result = run(reducer.debug(format: .actionAndState, to: .disabled), [.increment])

        #expect(result.state.count == 1)
        #expect(result.dumps == 0)
    }

    @Test func filteredActionsAreNotFormatted() {
        let recorder = RecordingSink()
        let result = run(reducer.debug(format: .actionAndState, to: recorder.sink, filter: { $0 != .tick }), [.tick, .tick])

        #expect(result.state.count == 0)
        #expect(result.dumps == 0)
        #expect(recorder.messages.isEmpty)
    }

    @Test func anEnabledSinkFormatsTheState() {
        let recorder = RecordingSink()
        let result = run(reducer.debug(format: .actionAndState, to: recorder.sink), [.increment])

        #expect(result.dumps > 0)
        #expect(recorder.messages.count == 1)
    }
}
