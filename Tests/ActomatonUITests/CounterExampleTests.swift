import ActomatonUI
import Observation
import Testing

// The upstream tutorial's first example, a counter, on a Store. The article
// "Stores, observation and routes" shows this code.
private enum Action: Sendable {
    case increment
    case decrement
}

private struct State: Equatable, Sendable {
    var count: Int = 0
}

private let reducer = Reducer<Action, State, Void> { action, state, environment in
    switch action {
    case .increment:
        state.count += 1
        return Effect.empty
    case .decrement:
        state.count -= 1
        return Effect.empty
    }
}

/// A view without a UI framework: it renders a line, and renders again when what it read changes.
@MainActor
@Observable
private final class CounterLine {
    let store: Store<Action, State, Void>
    private(set) var rendered: [String] = []

    init(store: Store<Action, State, Void>) {
        self.store = store
        render()
    }

    func render() {
        let line = withObservationTracking {
            "Count: \(store.count)"
        } onChange: { [weak self] in
            Task { @MainActor in self?.render() }
        }
        rendered.append(line)
    }
}

@MainActor
@Suite("Example: counter")
struct CounterExampleTests {
    @Test func counter() async throws {
        let store = Store<Action, State, Void>(state: State(), reducer: reducer)

        try await store.send(.increment).value
        try await store.send(.increment).value
        try await store.send(.decrement).value

        #expect(store.state.count == 1)
        #expect(store.count == 1)
    }

    @Test func aViewRendersAgainWhenWhatItReadChanges() async throws {
        let store = Store<Action, State, Void>(state: State(), reducer: reducer)
        let line = CounterLine(store: store)
        #expect(line.rendered == ["Count: 0"])

        try await store.send(.increment).value
        await waitUntil { line.rendered.count == 2 }
        #expect(line.rendered == ["Count: 0", "Count: 1"])
    }
}
