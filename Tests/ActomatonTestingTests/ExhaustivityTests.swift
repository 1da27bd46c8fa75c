import Actomaton
import ActomatonTesting
import Testing

// Non-exhaustive tests check only what they assert.
private enum Action: Sendable, Equatable {
    case signUp(String)
    case validated, saved, welcomed
}

private struct State: Sendable, Equatable {
    var name = ""
    var isValid = false
    var isSaved = false
    var greeting = ""
}

private let reducer = Reducer<Action, State, Void> { action, state, _ in
    switch action {
    case let .signUp(name):
        state.name = name
        state.isValid = false
        return Effect(sequence: { AsyncStream<Action> { continuation in
            continuation.yield(.validated)
            continuation.yield(.saved)
            continuation.yield(.welcomed)
            continuation.finish()
        } })
    case .validated:
        state.isValid = true
        return .empty
    case .saved:
        state.isSaved = true
        return .empty
    case .welcomed:
        state.greeting = "Welcome, \(state.name)!"
        return .empty
    }
}

@Suite("TestMachine: exhaustivity")
struct ExhaustivityTests {
    @Test func exhaustiveTestAssertsEverything() async {
        let machine = TestMachine(state: State(), reducer: reducer)

        await machine.send(.signUp("Ada")) { $0.name = "Ada" }
        await machine.receive(.validated) { $0.isValid = true }
        await machine.receive(.saved) { $0.isSaved = true }
        await machine.receive(.welcomed) { $0.greeting = "Welcome, Ada!" }
    }

    @Test func nonExhaustiveTestAssertsWhatItCaresAbout() async {
        let machine = TestMachine(state: State(), reducer: reducer, exhaustivity: .off)

        // Only the greeting is checked: `.validated` and `.saved` are skipped, and their
        // changes are not asserted.
        await machine.send(.signUp("Ada"))
        await machine.receive(.welcomed) { $0.greeting = "Welcome, Ada!" }
        #expect(await machine.state.isSaved)
    }

    @Test func exhaustivityCanBeSwitchedOffForPartOfATest() async {
        let machine = TestMachine(state: State(), reducer: reducer)

        await machine.setExhaustivity(.off)
        await machine.send(.signUp("Ada")) { $0.name = "Ada" }
        await machine.receive(.saved)

        await machine.setExhaustivity(.on)
        await machine.receive(.welcomed) { $0.greeting = "Welcome, Ada!" }
    }

    @Test func receiveWithAPredicate() async {
        let machine = TestMachine(state: State(), reducer: reducer)

        await machine.send(.signUp("Ada")) { $0.name = "Ada" }
        await machine.receive({ $0 == .validated }) { $0.isValid = true }
        await machine.receive({ $0 == .saved }) { $0.isSaved = true }
        await machine.receive({ $0 == .welcomed }) { $0.greeting = "Welcome, Ada!" }
    }
}
