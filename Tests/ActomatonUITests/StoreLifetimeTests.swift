import ActomatonUI
import Testing

private struct Timer: Equatable, Sendable {
    var ticks = 0
}

@CasePathable
private enum TimerAction: Sendable {
    /// Sleeps a second on the machine's clock, then ticks.
    case start
    case tick
}

private let timerReducer = Reducer<TimerAction, Timer, Void> { action, state, _ in
    switch action {
    case .start:
        return Effect { context in
            try await context.clock.sleep(for: .seconds(1))
            return .tick
        }
    case .tick:
        state.ticks += 1
        return .empty
    }
}

private struct Wrapper: Equatable, Sendable {
    var timer = Timer()
}

@MainActor
@Suite("Store: lifetime")
struct StoreLifetimeTests {
    @Test func aReleasedStoreReleasesItsMachineWhichCancelsItsEffects() async throws {
        let clock = ManualClock()
        weak var weakStore: Store<TimerAction, Timer, Void>?
        weak var weakMachine: Actomaton<TimerAction, Timer>?
        var effect: Task<Void, Error>?
        do {
            let machine = Actomaton<TimerAction, Timer>(state: Timer(), reducer: timerReducer, clock: clock)
            let store = Store(actomaton: machine, state: Timer(), environment: ())
            weakStore = store
            weakMachine = machine
            effect = store.send(.start)
            await clock.waitForSleepers(1)
        }
        #expect(weakStore == nil)
        #expect(await eventually { weakMachine == nil })
        await #expect(throws: CancellationError.self) { try await effect?.value }
    }

    @Test func aReleasedChildStoreCancelsNothing() async throws {
        let clock = ManualClock()
        let store = Store<TimerAction, Wrapper, Void>(
            state: Wrapper(),
            reducer: timerReducer.contramap(state: \Wrapper.timer),
            clock: clock
        )
        weak var weakChild: Store<TimerAction, Timer, Void>?
        var effect: Task<Void, Error>?
        do {
            let child = store.map(state: \.timer)
            weakChild = child
            effect = child.send(.start)
            await clock.waitForSleepers(1)
        }
        #expect(weakChild == nil)
        await clock.advance(by: .seconds(1))
        try await effect?.value
        #expect(store.state.timer.ticks == 1)
    }

    @Test func aChildKeepsItsRootAndItsEffectsAlive() async throws {
        let clock = ManualClock()
        weak var weakRoot: Store<TimerAction, Wrapper, Void>?
        let child: Store<TimerAction, Timer, Void>
        do {
            let root = Store<TimerAction, Wrapper, Void>(
                state: Wrapper(),
                reducer: timerReducer.contramap(state: \Wrapper.timer),
                clock: clock
            )
            weakRoot = root
            child = root.map(state: \.timer)
        }
        #expect(weakRoot != nil)
        let effect = child.send(.start)
        await clock.waitForSleepers(1)
        await clock.advance(by: .seconds(1))
        try await effect.value
        #expect(child.ticks == 1)
    }

    @Test func cancellingASendsTaskCancelsItsEffects() async throws {
        let clock = ManualClock()
        let store = Store<TimerAction, Timer, Void>(state: Timer(), reducer: timerReducer, clock: clock)
        let effect = store.send(.start)
        await clock.waitForSleepers(1)
        effect.cancel()
        await #expect(throws: CancellationError.self) { try await effect.value }
        await clock.advance(by: .seconds(1))
        try await store.send(.tick).value
        #expect(store.ticks == 1) // the cancelled effect's tick never came
    }

    @Test func cancellingASendBeforeItReachesTheMachineCancelsItsEffects() async throws {
        let clock = ManualClock()
        let store = Store<TimerAction, Timer, Void>(state: Timer(), reducer: timerReducer, clock: clock)
        let effect = store.send(.start)
        effect.cancel() // before the machine has run the action
        await #expect(throws: CancellationError.self) { try await effect.value }
        #expect(clock.sleeperCount == 0)
        await clock.advance(by: .seconds(1))
        try await store.send(.tick).value
        #expect(store.ticks == 1)
    }

    @Test func aReleasedRouteStoreLeaksNothing() async throws {
        weak var weakStore: RouteStore<TimerAction, Timer, Void, Int>?
        do {
            let store = RouteStore(
                state: Timer(),
                reducer: Reducer<TimerAction, Timer, SendRouteEnvironment<Void, Int>> { _, _, environment in
                    .fireAndForget { environment.sendRoute(1) }
                },
                routeType: Int.self
            )
            weakStore = store
            store.subscribeRoutes { _ in }
            try await store.send(.tick).value
        }
        #expect(weakStore == nil)
    }
}
