import ActomatonUI
import Observation
import Testing

private struct Counter: Equatable, Sendable {
    var count = 0
}

@CasePathable
private enum CounterAction: Sendable {
    case increment
}

private let counterReducer = Reducer<CounterAction, Counter, Void> { action, state, _ in
    switch action {
    case .increment: state.count += 1
    }
    return .empty
}

@CasePathable
private enum Screen: Equatable, Sendable {
    case list(Counter)
    case detail(String)
}

private struct Root: Equatable, Sendable {
    var left = Counter()
    var right = Counter()
    var screen = Screen.list(Counter())
}

@CasePathable
private enum RootAction: Sendable {
    case left(CounterAction)
    case right(CounterAction)
    case list(CounterAction)
    case showDetail(String)
}

private let rootReducer = Reducer<RootAction, Root, Void>.combine(
    counterReducer
        .contramap(action: \RootAction.Cases.left)
        .contramap(state: \Root.left),
    counterReducer
        .contramap(action: \RootAction.Cases.right)
        .contramap(state: \Root.right),
    counterReducer
        .contramap(action: \RootAction.Cases.list)
        .contramap(state: \Screen.Cases.list)
        .contramap(state: \Root.screen),
    Reducer { action, state, _ in
        if case .showDetail(let text) = action { state.screen = .detail(text) }
        return .empty
    }
)

@MainActor
@Suite("Store: scoping")
struct StoreScopingTests {
    @Test func aScopedStoreSeesItsSliceAndSendsThroughTheParent() async throws {
        let store = Store<RootAction, Root, Void>(state: Root(), reducer: rootReducer)
        let left = store.scope(state: \.left, action: \.left)
        let right = store.map(state: \.right).contramap(action: { RootAction.right($0) })

        try await left.send(.increment).value
        try await left.send(.increment).value
        try await right.send(.increment).value

        #expect(left.state == Counter(count: 2))
        #expect(right.count == 1)
        #expect(store.state.left.count == 2)
        #expect(store.state.right.count == 1)
    }

    @Test func aScopedStoreIsNotToldOfOtherSlices() async throws {
        let store = Store<RootAction, Root, Void>(state: Root(), reducer: rootReducer)
        let left = store.scope(state: \.left, action: \.left)
        let leftReader = track { _ = left.state }
        let parentReader = track { _ = store.state }

        try await store.send(.right(.increment)).value
        #expect(leftReader.count == 0)
        #expect(parentReader.count == 1)

        try await store.send(.left(.increment)).value
        #expect(leftReader.count == 1)
    }

    @Test func aCasePathScopeFollowsTheCase() async throws {
        let store = Store<RootAction, Root, Void>(state: Root(), reducer: rootReducer)
        let list = store.map(state: \.screen).map(state: \.list)
        let listStore = try #require(list.optionalize()).contramap(action: \.list)
        #expect(list.state == Counter())

        try await listStore.send(.increment).value
        #expect(listStore.count == 1)
        #expect(list.state == Counter(count: 1))

        try await store.send(.showDetail("hello")).value
        #expect(list.state == nil)
        #expect(listStore.count == 1) // keeps its last value while the case is gone
        #expect(store.map(state: \.screen).map(state: \.detail).state == "hello")
        #expect(store.map(state: \.screen).map(state: \.list).optionalize() == nil)
    }

    @Test func environmentsMapAndDrop() {
        let store = Store<CounterAction, Counter, Int>(state: Counter(), reducer: counterReducer.contramap(environment: { _ in () }), environment: 42)
        #expect(store.environment == 42)
        #expect(store.map(environment: { "\($0)" }).environment == "42")
        let plain: Store<CounterAction, Counter, Void> = store.noEnvironment
        #expect(plain.state == Counter())
    }
}
