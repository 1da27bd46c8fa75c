import Actomaton
import ActomatonTesting
import Testing

// Actions fed back with `Effect.nextAction` run within the same send, depth-first, as in an
// `Actomaton`; a `TestMachine` makes the test receive each one, with its own state change.
private enum Action: Sendable, Equatable {
    case a, b, c, d
}

private struct State: Sendable, Equatable {
    var log: [Action] = []
}

private let reducer = Reducer<Action, State, Void> { action, state, _ in
    state.log.append(action)
    switch action {
    case .a: return .nextAction(.b) + .nextAction(.c)
    case .b: return .nextAction(.d)
    case .c, .d: return .empty
    }
}

@Suite("TestMachine: synchronous feedback")
struct FeedbackTests {
    @Test func nextActionsAreReceivedDepthFirst() async {
        let machine = TestMachine(state: State(), reducer: reducer)

        await machine.send(.a) { $0.log = [.a] }
        await machine.receive(.b) { $0.log = [.a, .b] }
        await machine.receive(.d) { $0.log = [.a, .b, .d] }
        await machine.receive(.c) { $0.log = [.a, .b, .d, .c] }
    }

    @Test func theStateAlreadyHoldsEveryFedBackStep() async {
        let machine = TestMachine(state: State(), reducer: reducer)

        await machine.send(.a) { $0.log = [.a] }
        // As in an `Actomaton`, the whole chain ran within the send.
        #expect(await machine.state.log == [.a, .b, .d, .c])
        await machine.skipReceivedActions()
    }
}
