import ActomatonUI
import Observation
import Testing

private struct Profile: Equatable, Sendable {
    var count = 0
    var name = ""
}

private enum ProfileAction: Sendable {
    case increment
    case rename(String)
    case nothing
}

private let profileReducer = Reducer<ProfileAction, Profile, Void> { action, state, _ in
    switch action {
    case .increment: state.count += 1
    case .rename(let name): state.name = name
    case .nothing: break
    }
    return .empty
}

/// A state that is not `Equatable`: every transition is a change.
private struct Opaque: Sendable {
    var count = 0
}

@MainActor
@Suite("Store: observation")
struct StoreObservationTests {
    private func makeStore() -> Store<ProfileAction, Profile, Void> {
        Store(state: Profile(), reducer: profileReducer)
    }

    @Test func aChangeToAFieldTheReaderUsedNotifiesIt() async throws {
        let store = makeStore()
        let reader = track { _ = store.count }
        try await store.send(.increment).value
        #expect(reader.count == 1)
        #expect(store.count == 1)
    }

    @Test func aChangeToAnotherFieldDoesNotNotify() async throws {
        let store = makeStore()
        let countReader = track { _ = store.count }
        let nameReader = track { _ = store.name }
        try await store.send(.rename("alice")).value
        #expect(store.name == "alice")
        #expect(countReader.count == 0)
        #expect(nameReader.count == 1)
    }

    @Test func readingTheWholeStateTracksEveryField() async throws {
        let store = makeStore()
        let reader = track { _ = store.state }
        try await store.send(.rename("alice")).value
        #expect(reader.count == 1)
        #expect(store.state == Profile(count: 0, name: "alice"))
    }

    @Test func aSendThatLeavesTheStateEqualNotifiesNobody() async throws {
        let store = makeStore()
        let stateReader = track { _ = store.state }
        let countReader = track { _ = store.count }
        try await store.send(.nothing).value
        try await store.send(.rename("")).value
        #expect(stateReader.count == 0)
        #expect(countReader.count == 0)
    }

    @Test func aStateThatIsNotEquatableNotifiesOnEveryTransition() async throws {
        let store = Store<Void, Opaque, Void>(state: Opaque(), reducer: Reducer { _, _, _ in .empty })
        let reader = track { _ = store.state }
        try await store.send(()).value
        #expect(reader.count == 1)
    }

    @Test func aBindingReadsTheFieldAndSendsItsAction() async throws {
        let store = makeStore()
        let name = store.binding(get: \.name, onChange: ProfileAction.rename)
        let reader = track { _ = name.wrappedValue }
        name.wrappedValue = "bob"
        await waitUntil { store.name == "bob" }
        #expect(name.wrappedValue == "bob")
        #expect(reader.count == 1)

        let count = store.binding(get: { $0.count * 10 }, onChange: { _ in ProfileAction.increment })
        count.wrappedValue = 0
        await waitUntil { store.count == 1 }
        #expect(count.wrappedValue == 10)
    }

    @Test func actionsReachTheMachineInTheOrderSent() async throws {
        let store = makeStore()
        var last: Task<Void, Error>?
        for index in 0..<50 {
            store.send(.rename("\(index)"))
            last = store.send(.increment)
        }
        try await last?.value
        #expect(store.state == Profile(count: 50, name: "49"))
    }

    @Test func aStoreSeesTransitionsOthersSendToItsMachine() async throws {
        let actomaton = Actomaton<ProfileAction, Profile>(state: Profile(), reducer: profileReducer)
        let store = Store(actomaton: actomaton, state: Profile(), environment: ())
        let reader = track { _ = store.count }
        await actomaton.send(.increment)
        await waitUntil { store.count == 1 }
        #expect(reader.count == 1)
    }
}
