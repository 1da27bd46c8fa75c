import Actomaton
import ActomatonDebugging
import Testing

private struct State: Sendable, Equatable {
    var count = 0
    var title = "Counter"
}

private enum Action: Sendable, Equatable {
    case increment, rename(String), noop
}

private let reducer = Reducer<Action, State, Void> { action, state, _ in
    switch action {
    case .increment:
        state.count += 1
    case let .rename(title):
        state.title = title
    case .noop:
        break
    }
    return .empty
}

private func entries(_ format: DebugLogFormat, name: String? = "Counter", actions: [Action]) -> [String] {
    let recorder = RecordingSink()
    let logged = reducer.debug(name, format: format, to: recorder.sink)
    var state = State()
    for action in actions {
        _ = logged.run(action, &state, ())
    }
    return recorder.messages
}

@Suite("debug: formats")
struct FormatTests {
    @Test func actionOnly() {
        #expect(entries(.action, actions: [.increment, .rename("Score")]) == [
            """
            Counter: received action:
              Action.increment
            """,
            """
            Counter: received action:
              Action.rename("Score")
            """,
        ])
    }

    @Test func actionAndState() {
        #expect(entries(.actionAndState, actions: [.increment]) == [
            """
            Counter: received action:
              Action.increment
              State(
                count: 1,
                title: "Counter"
              )
            """,
        ])
    }

    @Test func actionAndStateDiff() {
        #expect(entries(.actionAndStateDiff, actions: [.increment, .noop]) == [
            """
            Counter: received action:
              Action.increment
              State(
            -   count: 0,
            +   count: 1,
                title: "Counter"
              )
            """,
            """
            Counter: received action:
              Action.noop
              (No state changes)
            """,
        ])
    }

    @Test func stateDiffIsTheDefault() {
        let recorder = RecordingSink()
        var state = State()
        _ = reducer.debug(to: recorder.sink).run(.rename("Score"), &state, ())
        #expect(recorder.messages == [
            """
            received action:
              Action.rename("Score")
              State(
                count: 0,
            -   title: "Counter"
            +   title: "Score"
              )
            """,
        ])
    }

    @Test func withoutAName() {
        #expect(entries(.action, name: nil, actions: [.increment]) == [
            """
            received action:
              Action.increment
            """,
        ])
    }

    @Test func filterLeavesOutNoisyActions() {
        let recorder = RecordingSink()
        let logged = reducer.debug("Counter", format: .action, to: recorder.sink, filter: { $0 != .increment })
        var state = State()
        for action in [Action.increment, .rename("Score"), .increment] {
            _ = logged.run(action, &state, ())
        }
        #expect(state == State(count: 2, title: "Score"))
        #expect(recorder.messages == [
            """
            Counter: received action:
              Action.rename("Score")
            """,
        ])
    }
}
