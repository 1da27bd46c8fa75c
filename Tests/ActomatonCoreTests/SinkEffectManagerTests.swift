import ActomatonCore
import Testing

/// Adds every output.
struct Total: OutputSink {
    var sum = 0
    mutating func receive(_ output: Int) { sum += output }
}

@Suite("SinkEffectManager and send(contentsOf:)")
struct SinkEffectManagerTests {
    /// Doubles each number into the state and outputs it.
    let doubler = MealyReducer<Int, Int, Void, Int> { number, last, _ in
        last = number * 2
        return last
    }

    @Test func everyOutputReachesTheSinkInOrder() {
        var machine = MealyMachine(state: 0, reducer: doubler, effectManager: SinkEffectManager<Int, Total>(Total()))
        machine.send(contentsOf: [1, 2, 3])
        #expect(machine.effectManager.sink.sum == 12)
        #expect(machine.state == 6)
        machine.send(contentsOf: EmptyCollection())
        #expect(machine.effectManager.sink.sum == 12)
    }

    /// The bulk send is the same as sending one by one, with any manager that returns nothing.
    @Test func bulkSendMatchesOneByOne() {
        let counter = MealyReducer<Int, Int, Void, Void> { number, total, _ in total &+= number }
        var bulk = MealyMachine(state: 0, reducer: counter, effectManager: NoOpEffectManager<Int>())
        var single = bulk
        bulk.send(contentsOf: 1...100)
        for number in 1...100 { single.send(number) }
        #expect(bulk.state == single.state)
    }
}
