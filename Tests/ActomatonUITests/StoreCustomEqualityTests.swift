import ActomatonUI
import Testing

/// A state whose `==` compares identity only, as many `Identifiable` models do.
private struct Item: Equatable, Sendable {
    var id = 1
    var title = "draft"
    static func == (lhs: Item, rhs: Item) -> Bool { lhs.id == rhs.id }
}

private enum ItemAction: Sendable {
    case rename(String)
    case nothing
}

/// A value that is not `Equatable`: a store of it counts every new value as a change.
private struct Opaque: Sendable {
    var title: String
}

extension Item {
    /// The title, as a value that is not `Equatable`.
    fileprivate var opaque: Opaque {
        get { Opaque(title: title) }
        set { title = newValue.title }
    }
}

private let itemReducer = Reducer<ItemAction, Item, Void> { action, state, _ in
    switch action {
    case let .rename(title): state.title = title
    case .nothing: break
    }
    return .empty
}

@MainActor
@Suite("Store: a state whose == ignores some fields")
struct StoreCustomEqualityTests {
    /// `send`'s task promises that, once it completes, `state` includes every transition the
    /// machine made. A state the machine changed in a field its `==` ignores may notify nobody,
    /// but the store must not go on showing the old value.
    @Test func theStoreShowsTheMachinesStateEvenWhenItsEqualToTheLastOne() async throws {
        let store = Store(state: Item(), reducer: itemReducer)
        try await store.send(.rename("final")).value
        #expect(store.state.title == "final")
        #expect(store.title == "final")
        let child = store.map(state: \.title)
        #expect(child.state == "final")
    }

    /// Taking an equal state notifies nobody, down to the children whose slices are not
    /// `Equatable`.
    @Test func anEqualStateNotifiesNoChildWhoseSliceIsNotEquatable() async throws {
        let store = Store(state: Item(), reducer: itemReducer)
        let child = store.map(state: \.opaque)
        let reader = track { _ = child.state }
        try await store.send(.nothing).value
        #expect(reader.count == 0)
        // Equal to the parent's `==` too, yet the child shows the new title.
        try await store.send(.rename("final")).value
        #expect(reader.count == 0)
        #expect(child.state.title == "final")
    }
}
