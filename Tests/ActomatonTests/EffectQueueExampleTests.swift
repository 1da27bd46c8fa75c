import Actomaton
import Testing

// The seed README's example 1-4: fetches through a queue that runs 3 at once, suspends the
// rest, and spaces starts by a random 0.1–0.3 s.
private enum Action: Sendable {
    case fetch(id: String)
    case _didFetch(String)
}

private struct State: Sendable {
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

@Suite("Example: effect queue")
struct EffectQueueExampleTests {
    @Test func delayedEffectQueue() async throws {
        let clock = ManualClock()
        let server = Server()
        let actomaton = Actomaton<Action, State>(
            state: State(),
            reducer: reducer,
            environment: Environment(fetch: { await server.fetch($0) }),
            clock: clock
        )

        await actomaton.send(.fetch(id: "item1"))
        await actomaton.send(.fetch(id: "item2")) // min delay of 0.1
        await actomaton.send(.fetch(id: "item3")) // min delay of 0.1 (after item2 actually starts)
        let item4 = await actomaton.send(.fetch(id: "item4")) // starts when item1 or 2 or 3 finishes

        #expect(await eventually { await server.started == ["item1"] })
        #expect(await clock.waitForSleepers(2)) // item2 and item3 wait for their start times
        await clock.advance(by: .milliseconds(99))
        #expect(await server.started == ["item1"])
        // item2 starts 0.1–0.3 s after item1, item3 0.1–0.3 s after item2 (maybe by 0.3 s too).
        await clock.advance(by: .milliseconds(201))
        #expect(await eventually { await server.started.starts(with: ["item1", "item2"]) })
        await clock.advance(by: .milliseconds(300))
        #expect(await eventually { await server.started == ["item1", "item2", "item3"] })

        // item4 waits for a free slot, however long.
        await clock.advance(by: .seconds(60))
        #expect(await server.started == ["item1", "item2", "item3"])

        await server.respond(to: "item2")
        #expect(await eventually { await actomaton.state.fetched == ["data of item2"] })
        await clock.advance(by: .milliseconds(300))
        #expect(await eventually { await server.started == ["item1", "item2", "item3", "item4"] })

        for id in ["item1", "item3", "item4"] { await server.respond(to: id) }
        try await item4?.value
        #expect(await eventually { await actomaton.state.fetched.count == 4 })
    }
}
