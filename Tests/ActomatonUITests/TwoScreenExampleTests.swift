import ActomatonUI
import Observation
import Testing

// The upstream tutorial's RouteStore example: two screens, each its own machine, that message
// each other through routes. The counter screen pushes a detail screen with its count; the
// detail screen edits the number and sends it back when it closes.
enum CounterScreen {
    enum Action: Sendable {
        case increment
        case set(Int)
        case push
    }

    struct State: Equatable, Sendable {
        var count: Int = 0
    }

    enum Route: Sendable {
        case push(count: Int)
    }

    typealias Environment = SendRouteEnvironment<Void, Route>

    static let reducer = Reducer<Action, State, Environment> { action, state, environment in
        switch action {
        case .increment:
            state.count += 1
            return Effect.empty
        case let .set(count):
            state.count = count
            return Effect.empty
        case .push:
            let count = state.count
            return Effect.fireAndForget {
                environment.sendRoute(Route.push(count: count))
            }
        }
    }
}

enum DetailScreen {
    enum Action: Sendable {
        case double
        case close
    }

    struct State: Equatable, Sendable {
        var number: Int
    }

    enum Route: Sendable {
        case close(number: Int)
    }

    typealias Environment = SendRouteEnvironment<Void, Route>

    static let reducer = Reducer<Action, State, Environment> { action, state, environment in
        switch action {
        case .double:
            state.number *= 2
            return Effect.empty
        case .close:
            let number = state.number
            return Effect.fireAndForget {
                environment.sendRoute(Route.close(number: number))
            }
        }
    }
}

/// The owner of the screens: it makes each screen's store and handles its routes, as a
/// navigation controller would.
@MainActor
@Observable
final class Navigation {
    let counter: RouteStore<CounterScreen.Action, CounterScreen.State, Void, CounterScreen.Route>
    private(set) var detail: RouteStore<DetailScreen.Action, DetailScreen.State, Void, DetailScreen.Route>?

    init() {
        counter = RouteStore(state: CounterScreen.State(), reducer: CounterScreen.reducer)
        counter.subscribeRoutes { [weak self] route in
            switch route {
            case let .push(count):
                self?.showDetail(number: count)
            }
        }
    }

    private func showDetail(number: Int) {
        let detail = RouteStore(state: DetailScreen.State(number: number), reducer: DetailScreen.reducer)
        detail.subscribeRoutes { [weak self] route in
            switch route {
            case let .close(number):
                self?.detail = nil
                self?.counter.send(.set(number))
            }
        }
        self.detail = detail
    }
}

@MainActor
@Suite("Example: two screens with RouteStore")
struct TwoScreenExampleTests {
    @Test func screensMessageEachOtherThroughRoutes() async throws {
        let navigation = Navigation()
        navigation.counter.send(.increment)
        navigation.counter.send(.increment)
        navigation.counter.send(.push)
        await waitUntil { navigation.detail != nil }

        let detail = try #require(navigation.detail)
        #expect(detail.state.number == 2)
        try await detail.send(.double).value
        detail.send(.close)

        await waitUntil { navigation.detail == nil && navigation.counter.count == 4 }
        #expect(navigation.counter.state == CounterScreen.State(count: 4))
    }
}
