import Actomaton
import Testing

@Suite("Actomaton.states")
struct StateSequenceTests {
    @Test func theCurrentStateThenEachTransition() async {
        let machine = Actomaton<Int, Int>(state: 0, reducer: Reducer { action, state, _ in
            state += action
            return .empty
        })
        var states = machine.states.makeAsyncIterator()
        #expect(await states.next() == 0)
        await machine.send(5)
        #expect(await states.next() == 5)
    }

    @Test func aSlowSubscriberSeesTheNewestStateNotABacklog() async {
        let machine = Actomaton<Int, Int>(state: 0, reducer: Reducer { action, state, _ in
            state += action
            return .empty
        })
        var states = machine.states.makeAsyncIterator()
        #expect(await states.next() == 0)
        for _ in 0..<10 { await machine.send(1) }
        #expect(await states.next() == 10)
        await machine.send(1)
        #expect(await states.next() == 11)
    }

    @Test func anyNumberOfSubscribersEachSeeEveryState() async {
        let machine = Actomaton<Int, Int>(state: 0, reducer: Reducer { action, state, _ in
            state += action
            return .empty
        })
        var first = machine.states.makeAsyncIterator()
        var second = machine.states.makeAsyncIterator()
        #expect(await first.next() == 0)
        #expect(await second.next() == 0)
        await machine.send(2)
        #expect(await first.next() == 2)
        #expect(await second.next() == 2)
    }

    @Test func effectsTransitionsAreStatesToo() async throws {
        let machine = Actomaton<Int, Int>(state: 0, reducer: Reducer { action, state, _ in
            state += action
            return action == 1 ? Effect { 10 } : .empty
        })
        var states = machine.states.makeAsyncIterator()
        #expect(await states.next() == 0)
        try await machine.send(1)?.value
        #expect(await states.next() == 11)
    }

    @Test func theSequenceEndsWhenTheMachineIsReleased() async {
        var machine: Actomaton<Int, Int>? = Actomaton<Int, Int>(state: 0, reducer: Reducer { _, _, _ in .empty })
        var states = machine!.states.makeAsyncIterator()
        #expect(await states.next() == 0)
        weak let weakMachine = machine
        machine = nil
        #expect(weakMachine == nil) // a subscriber does not keep the machine alive
        #expect(await states.next() == nil)
    }

    @Test func aCancelledSubscriberUnsubscribes() async {
        let machine = Actomaton<Int, Int>(state: 0, reducer: Reducer { action, state, _ in
            state += action
            return .empty
        })
        let subscriber = Task {
            var count = 0
            for await _ in machine.states { count += 1 }
            return count
        }
        #expect(await eventually { await machine.stateObserverCount == 1 })
        subscriber.cancel()
        _ = await subscriber.value
        #expect(await eventually { await machine.stateObserverCount == 0 })
    }
}
