import ActomatonCore
import Testing

private enum CounterAction: Sendable { case increment, decrement }

/// The statically dispatched form of the counter.
private struct Counter: MealyReducerProtocol {
    func reduce(_ action: CounterAction, into count: inout Int, environment: Void) {
        switch action {
        case .increment: count += 1
        case .decrement: count -= 1
        }
    }
}

@Suite("MealyMachine")
struct MealyMachineTests {
    @Test func closureReducerOnNoOpManager() {
        let counter = MealyReducer<CounterAction, Int, Void, Void> { action, count, _ in
            switch action {
            case .increment: count += 1
            case .decrement: count -= 1
            }
        }
        var machine = MealyMachine(state: 0, reducer: counter)
        machine.send(.increment)
        machine.send(.increment)
        machine.send(.decrement)
        #expect(machine.state == 1)
    }

    @Test func structReducerOnNoOpManager() {
        var machine = MealyMachine(state: 10, reducer: Counter())
        for _ in 0..<5 { machine.send(.decrement) }
        #expect(machine.state == 5)
    }

    @Test func structReducerWrapsIntoTheClosureForm() {
        let reducer = MealyReducer(Counter()).contramap(action: { (n: Int) in n > 0 ? .increment : .decrement })
        var machine = MealyMachine(state: 0, reducer: reducer)
        machine.send(5)
        machine.send(-5)
        machine.send(1)
        #expect(machine.state == 1)
    }

    @Test func environmentReachesTheReducer() {
        let add = MealyReducer<CounterAction, Int, Int, Void> { _, count, step in count += step }
        var machine = MealyMachine(state: 0, reducer: add, environment: 7)
        machine.send(.increment)
        #expect(machine.state == 7)
    }

    @Test func settingStateRestoresWithoutRunningTheReducer() {
        var machine = MealyMachine(state: 0, reducer: Counter())
        machine.send(.increment)
        let snapshot = machine.state
        machine.send(.increment)
        machine.state = snapshot
        #expect(machine.state == 1)
    }

    @Test func replyManagerReturnsEachOutput() {
        let echo = MealyReducer<Int, Int, Void, String> { n, total, _ in
            total += n
            return "total \(total)"
        }
        var machine = MealyMachine(state: 0, reducer: echo, effectManager: ReplyEffectManager())
        #expect(machine.send(2) == "total 2")
        #expect(machine.send(3) == "total 5")
    }
}

@Suite("SplitMix64")
struct SplitMix64Tests {
    @Test func theSameSeedGivesTheSameNumbers() {
        var a = SplitMix64(seed: 42), b = SplitMix64(seed: 42), c = SplitMix64(seed: 43)
        let first = (0..<5).map { _ in a.next() }
        #expect(first == (0..<5).map { _ in b.next() })
        #expect(first != (0..<5).map { _ in c.next() })
        // The reference sequence of SplitMix64 for seed 0.
        var zero = SplitMix64(seed: 0)
        #expect(zero.next() == 0xE220_A839_7B1D_CDAF)
    }
}
