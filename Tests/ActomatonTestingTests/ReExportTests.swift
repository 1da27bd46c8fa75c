import Actomaton
import ActomatonTesting
import Testing

// This file imports `ActomatonTesting` and not `Clocks`: it compiles only while
// `ActomatonTesting` re-exports swift-clocks' `TestClock`, as *Testing with TestMachine* says
// (`TestMachine(…, clock: TestClock())` needs no other import or dependency).

private enum Action: Sendable, Equatable {
    case ring, rang
}

private let reducer = Reducer<Action, Int, Void> { action, state, _ in
    switch action {
    case .ring:
        return Effect { context in
            try await context.clock.sleep(for: .seconds(1))
            return .rang
        }
    case .rang:
        state += 1
        return .empty
    }
}

@Suite("ActomatonTesting re-exports TestClock")
struct ReExportTests {
    @Test func aTestClockNeedsNoOtherImport() async {
        let clock = TestClock()
        let machine = TestMachine(state: 0, reducer: reducer, environment: (), clock: clock)
        await machine.send(.ring)
        await clock.advance(by: .seconds(1))
        await machine.receive(.rang) { $0 = 1 }
        await machine.finish()
    }
}
