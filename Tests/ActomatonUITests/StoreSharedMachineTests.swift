import ActomatonUI
import Testing

private enum CountAction: Sendable {
    case increment
}

private let countReducer = Reducer<CountAction, Int, Void> { _, state, _ in
    state += 1
    return .empty
}

@MainActor
@Suite("Store: on a machine that outlives it")
struct StoreSharedMachineTests {
    /// `Store(actomaton:state:environment:)` is for a machine made (and kept) elsewhere. A store
    /// released while its machine lives on must end its subscription to the machine's states;
    /// otherwise every store ever made on the machine keeps a task and an observer for ever.
    @Test func aReleasedStoreEndsItsSubscriptionToAMachineThatLivesOn() async throws {
        let machine = Actomaton<CountAction, Int>(state: 0, reducer: countReducer)
        weak var weakStore: Store<CountAction, Int, Void>?
        do {
            let store = Store(actomaton: machine, state: 0, environment: ())
            weakStore = store
            try await store.send(.increment).value
            #expect(store.state == 1)
            #expect(await machine.stateObserverCount == 1)
        }
        #expect(weakStore == nil)
        #expect(await eventually { await machine.stateObserverCount == 0 })
    }
}
