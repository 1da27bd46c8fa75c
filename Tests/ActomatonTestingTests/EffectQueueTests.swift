import Actomaton
import ActomatonTesting
import Testing

// The seed README's example 1-4, fetches through a queue that runs 3 at once, suspends the
// rest and spaces starts by a random 0.1–0.3 s, tested with `TestMachine`: queue delays run on
// its test clock, and every fetched result is received in the order the server answers.
private enum Action: Sendable, Equatable {
    case fetch(id: String)
    case _didFetch(String)
}

private struct State: Sendable, Equatable {
    var fetched: [String] = []
}

private struct Environment: Sendable {
    let fetch: @Sendable (_ id: String) async throws -> String
}

private struct DelayedEffectQueue: EffectQueue {
    // First 3 effects will run concurrently, and other sent effects will be suspended.
    var effectQueuePolicy: EffectQueuePolicy {
        .runOldest(maxCount: 3, .suspendNew)
    }

    // Adds delay between effect start. (This is useful for throttling / deboucing)
    var effectQueueDelay: EffectQueueDelay {
        .random(0.1 ... 0.3)
    }
}

private let reducer = Reducer<Action, State, Environment> { action, state, environment in
    switch action {
    case let .fetch(id):
        return Effect(queue: DelayedEffectQueue()) {
            let data = try await environment.fetch(id)
            return ._didFetch(data)
        }
    case let ._didFetch(data):
        state.fetched.append(data)
        return .empty
    }
}

/// A fake server: records which fetches started, and answers when the test says so.
private actor Server {
    private(set) var started: [String] = []
    private var waiting: [String: CheckedContinuation<Void, Never>] = [:]

    func fetch(_ id: String) async -> String {
        started.append(id)
        await withCheckedContinuation { waiting[id] = $0 }
        return "data of \(id)"
    }

    func respond(to id: String) {
        waiting.removeValue(forKey: id)?.resume()
    }
}

@Suite("TestMachine: effect queue")
struct EffectQueueTests {
    @Test func delayedEffectQueue() async {
        let server = Server()
        let machine = TestMachine(
            state: State(),
            reducer: reducer,
            environment: Environment(fetch: { await server.fetch($0) })
        )

        // Sending changes no state: the fetches are queued.
        await machine.send(.fetch(id: "item1"))
        await machine.send(.fetch(id: "item2")) // min delay of 0.1
        await machine.send(.fetch(id: "item3")) // min delay of 0.1 (after item2 actually starts)
        await machine.send(.fetch(id: "item4")) // starts when item1 or 2 or 3 finishes
        #expect(await machine.runningEffectCount == 4)

        #expect(await eventually { await server.started == ["item1"] })
        await machine.advance(by: .milliseconds(99))
        #expect(await server.started == ["item1"])
        await machine.advance(by: .milliseconds(201))
        #expect(await eventually { await server.started == ["item1", "item2"] })
        await machine.advance(by: .milliseconds(300))
        #expect(await eventually { await server.started == ["item1", "item2", "item3"] })

        // item4 waits for a free slot, however long.
        await machine.advance(by: .seconds(60))
        #expect(await server.started == ["item1", "item2", "item3"])

        await server.respond(to: "item2")
        await machine.receive(._didFetch("data of item2")) { $0.fetched = ["data of item2"] }
        await machine.advance(by: .milliseconds(300))
        #expect(await eventually { await server.started == ["item1", "item2", "item3", "item4"] })

        for id in ["item3", "item1", "item4"] {
            await server.respond(to: id)
            await machine.receive(._didFetch("data of \(id)")) { $0.fetched.append("data of \(id)") }
        }
        #expect(await machine.state.fetched == ["data of item2", "data of item3", "data of item1", "data of item4"])
    }

    @Test func resultsAreReceivedInTheOrderTheServerAnswers() async {
        let server = Server()
        let machine = TestMachine(
            state: State(),
            reducer: reducer,
            environment: Environment(fetch: { await server.fetch($0) })
        )

        await machine.send(.fetch(id: "a"))
        await machine.advance(by: .milliseconds(300))
        await machine.send(.fetch(id: "b"))
        #expect(await eventually { await server.started == ["a", "b"] })

        // Both answer before the test looks: they are received in order, each with the state
        // change it caused at the time.
        await server.respond(to: "b")
        #expect(await eventually { await machine.state.fetched.count == 1 })
        await server.respond(to: "a")
        await machine.receive(._didFetch("data of b")) { $0.fetched = ["data of b"] }
        await machine.receive(._didFetch("data of a")) { $0.fetched = ["data of b", "data of a"] }
    }
}
