import ActomatonUI
import Observation
import Testing

private struct Sent: Equatable, Sendable {
    var bursts = 0
}

private enum BurstAction: Sendable {
    /// Starts an effect, on a task of its own, that sends `count` routes tagged `source`.
    case burst(source: Int, count: Int)
    /// Sends one route from the reducer's effect.
    case mark(Int)
}

private struct Tagged: Equatable, Sendable {
    var source: Int
    var index: Int
}

private let burstReducer = Reducer<BurstAction, Sent, SendRouteEnvironment<Void, Tagged>> { action, state, environment in
    switch action {
    case let .burst(source, count):
        state.bursts += 1
        return .fireAndForget {
            for index in 0..<count {
                environment.sendRoute(Tagged(source: source, index: index))
                await Task.yield()
            }
        }
    case let .mark(value):
        return .fireAndForget { environment.sendRoute(Tagged(source: -1, index: value)) }
    }
}

/// A route that asks its handler for a number.
private enum NumberRoute: Sendable {
    case ask(@Sendable (sending Int) -> Void)
}

/// An effect that asks with `sendRouteAsync` and puts what it got in the environment's stream.
private let askReducer = Reducer<Void, Int, SendRouteEnvironment<AsyncStream<Int?>.Continuation, NumberRoute>> { _, _, environment in
    .fireAndForget {
        let answer: Int? = await environment.sendRouteAsync { NumberRoute.ask($0) }
        environment.environment.yield(answer)
    }
}

/// Collects the routes a handler gets, and wakes a waiter when enough have come.
@MainActor
@Observable
private final class Received {
    var routes: [Tagged] = []
}

@MainActor
@Suite("RouteStore")
struct RouteStoreTests {
    @Test func routesArriveOnceInOrderFromEffectsOnOtherTasks() async throws {
        let store = RouteStore(state: Sent(), reducer: burstReducer, routeType: Tagged.self)
        let received = Received()
        store.subscribeRoutes { received.routes.append($0) }

        let sources = 8, perSource = 50
        var tasks: [Task<Void, Error>] = []
        for source in 0..<sources {
            tasks.append(store.send(.burst(source: source, count: perSource)))
        }
        for task in tasks { try await task.value }
        await waitUntil { received.routes.count >= sources * perSource }

        // A last route, sent after every burst: the next one the handler gets, so none of the
        // bursts' routes is delivered twice.
        store.send(.mark(99))
        await waitUntil { received.routes.count > sources * perSource }
        #expect(received.routes.count == sources * perSource + 1)
        #expect(received.routes.last == Tagged(source: -1, index: 99))

        for source in 0..<sources {
            let indices = received.routes.filter { $0.source == source }.map(\.index)
            #expect(indices == Array(0..<perSource), "source \(source)")
        }
    }

    @Test func routesSentBeforeTheHandlerWaitForIt() async throws {
        let store = RouteStore(state: Sent(), reducer: burstReducer, routeType: Tagged.self)
        try await store.send(.burst(source: 1, count: 3)).value
        let received = Received()
        store.subscribeRoutes { received.routes.append($0) }
        await waitUntil { received.routes.count == 3 }
        #expect(received.routes.map(\.index) == [0, 1, 2])
    }

    @Test func aSecondHandlerReplacesTheFirst() async throws {
        let store = RouteStore(state: Sent(), reducer: burstReducer, routeType: Tagged.self)
        let first = Received(), second = Received()
        store.subscribeRoutes { first.routes.append($0) }
        try await store.send(.mark(1)).value
        await waitUntil { first.routes.count == 1 }
        store.subscribeRoutes { second.routes.append($0) }
        try await store.send(.mark(2)).value
        await waitUntil { second.routes.count == 1 }
        #expect(first.routes == [Tagged(source: -1, index: 1)])
        #expect(second.routes == [Tagged(source: -1, index: 2)])
    }

    @Test func noSendRouteIsAPlainStoreOfTheSameMachine() async throws {
        let store = RouteStore(state: Sent(), reducer: burstReducer, routeType: Tagged.self)
        let plain: Store<BurstAction, Sent, Void> = store.noSendRoute
        try await plain.send(.burst(source: 0, count: 0)).value
        #expect(store.bursts == 1)
        #expect(plain.bursts == 1)
    }

    /// Regression: a route whose handler dropped its callback left `sendRouteAsync` waiting for
    /// ever (its continuation leaked). The time limit is only a safety net: when it cancels the
    /// test, the wait for the answer ends with no answer.
    @Test(.timeLimit(.minutes(2))) func sendRouteAsyncReturnsNilWhenTheHandlerDropsTheRoute() async throws {
        let (answers, answerInput) = AsyncStream.makeStream(of: Int?.self)
        let store = RouteStore(state: 0, reducer: askReducer, environment: answerInput, routeType: NumberRoute.self)
        store.subscribeRoutes { _ in }
        store.send(())
        var iterator = answers.makeAsyncIterator()
        let answer = try #require(await iterator.next(), "sendRouteAsync never returned")
        #expect(answer == nil)
    }

    /// Regression: a route still waiting for a handler when its store went away left
    /// `sendRouteAsync` waiting for ever.
    @Test(.timeLimit(.minutes(2))) func sendRouteAsyncReturnsNilWhenTheStoreGoesAway() async throws {
        let (answers, answerInput) = AsyncStream.makeStream(of: Int?.self)
        let (asked, askedInput) = AsyncStream.makeStream(of: Void.self)
        let reducer = Reducer<Void, Int, SendRouteEnvironment<AsyncStream<Int?>.Continuation, NumberRoute>> { _, _, environment in
            .fireAndForget {
                let answer: Int? = await environment.sendRouteAsync { answer in
                    askedInput.yield()
                    return NumberRoute.ask(answer)
                }
                environment.environment.yield(answer)
            }
        }
        var store: RouteStore? = RouteStore(state: 0, reducer: reducer, environment: answerInput, routeType: NumberRoute.self)
        store?.send(())
        var askedIterator = asked.makeAsyncIterator()
        try #require(await askedIterator.next() != nil, "the effect never asked")
        store = nil
        var iterator = answers.makeAsyncIterator()
        let answer = try #require(await iterator.next(), "sendRouteAsync never returned")
        #expect(answer == nil)
    }

    /// Regression (review): `sendRouteAsync` ignored cancellation: a handler that kept the
    /// callback without calling it held the caller for ever. The wait now ends with `nil`, and
    /// the callback called afterwards does nothing.
    @Test(.timeLimit(.minutes(2))) func sendRouteAsyncEndsWhenCancelled() async throws {
        enum AskRoute: Sendable { case ask(@Sendable (sending Int) -> Void) }
        let (kept, keptInput) = AsyncStream.makeStream(of: AskRoute.self)
        let environment = SendRouteEnvironment<Void, AskRoute>(environment: ()) { keptInput.yield($0) }
        let waiting = Task { await environment.sendRouteAsync { AskRoute.ask($0) } }
        var iterator = kept.makeAsyncIterator()
        let route = try #require(await iterator.next(), "the route was never sent")
        waiting.cancel()
        #expect(await waiting.value == nil)
        if case let .ask(answer) = route { answer(7) }

        // Cancelled before it asks: no route is sent.
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await environment.sendRouteAsync { AskRoute.ask($0) }
        }
        #expect(await cancelled.value == nil)
        keptInput.finish()
        #expect(await iterator.next() == nil, "no second route")
    }

    @Test func sendRouteAsyncWaitsForTheHandlersAnswer() async {
        enum AskRoute: Sendable { case ask(String, @Sendable (sending Int) -> Void) }
        let environment = SendRouteEnvironment<Void, AskRoute>(environment: ()) { route in
            if case let .ask(question, answer) = route { answer(question.count) }
        }
        let answer = await environment.sendRouteAsync { AskRoute.ask("four", $0) }
        #expect(answer == 4)
    }
}
