import Actomaton
import Synchronization

/// A ``Store`` whose reducer can also send **routes**: outputs for its owner, such as "show the
/// next screen with this count", handled outside the machine.
///
/// The reducer's environment is a ``SendRouteEnvironment``: your environment plus
/// ``SendRouteEnvironment/sendRoute``. An effect calls `environment.sendRoute(route)`; the store's
/// owner installs a handler with ``subscribeRoutes(_:)``, which gets each route on the main
/// actor, exactly once, in the order `sendRoute` was called, also when effects on other tasks
/// send them. Routes sent before a handler is installed wait for it.
///
/// ```swift
/// let store = RouteStore(state: State(), reducer: reducer, environment: (), routeType: Route.self)
/// store.subscribeRoutes { route in
///     switch route {
///     case let .push(count):
///         navigation.push(count) // the next screen, its own store
///     }
/// }
/// ```
///
/// Each screen is then a machine of its own, and the handlers are the arrows between them: the
/// upstream tutorial's "object-oriented" way, next to composing one reducer for every screen.
@MainActor
public final class RouteStore<Action: Sendable, State: Sendable, Environment: Sendable, Route: Sendable>:
    Store<Action, State, SendRouteEnvironment<Environment, Route>>
{
    private let routes: AsyncStream<Route>
    private let routeInput: AsyncStream<Route>.Continuation
    private var routeHandler: (@MainActor (Route) -> Void)?
    private var isDeliveringRoutes = false

    /// Creates a store in `state` running `reducer`, whose environment is `environment` with
    /// ``SendRouteEnvironment/sendRoute`` added.
    ///
    /// - Parameters:
    ///   - state: The state the machine starts in.
    ///   - reducer: The transition function; its environment can send routes.
    ///   - environment: Your dependencies, handed to the reducer inside the wrapper.
    ///   - clock: What effects sleep on; tests pass a test clock (`ManualClock`).
    ///   - onFailure: Receives the failures no caller sees; see `EffectFailure`.
    ///   - routeType: The type of the routes, to help type inference.
    public init(
        state: State,
        reducer: Reducer<Action, State, SendRouteEnvironment<Environment, Route>>,
        environment: Environment,
        clock: some Clock<Duration> = ContinuousClock(),
        onFailure: @escaping @Sendable (EffectFailure) -> Void = EffectFailure.writeToStandardError,
        routeType: Route.Type = Route.self
    ) {
        let (routes, routeInput) = AsyncStream<Route>.makeStream()
        self.routes = routes
        self.routeInput = routeInput
        let wrapped = SendRouteEnvironment<Environment, Route>(
            environment: environment,
            sendRoute: { route in routeInput.yield(route) }
        )
        let actomaton = Actomaton<Action, State>(
            state: state, reducer: reducer, environment: wrapped, clock: clock, onFailure: onFailure
        )
        super.init(actomaton: actomaton, state: state, environment: wrapped)
    }

    /// Creates a store in `state` running `reducer`, which needs no environment but sending
    /// routes.
    ///
    /// - Parameters:
    ///   - state: The state the machine starts in.
    ///   - reducer: The transition function; its environment can send routes.
    ///   - clock: What effects sleep on; tests pass a test clock (`ManualClock`).
    ///   - routeType: The type of the routes, to help type inference.
    public convenience init(
        state: State,
        reducer: Reducer<Action, State, SendRouteEnvironment<Void, Route>>,
        clock: some Clock<Duration> = ContinuousClock(),
        routeType: Route.Type = Route.self
    ) where Environment == Void {
        self.init(state: state, reducer: reducer, environment: (), clock: clock, routeType: routeType)
    }

    deinit {
        routeInput.finish()
        // Drop the routes still waiting, so that their `sendRouteAsync` callers resume. With a
        // handler, its task drops them; without, nothing reads the stream.
        if !isDeliveringRoutes {
            Task { [routes] in for await _ in routes {} }
        }
    }

    /// Installs the handler of the routes the reducer's effects send, for as long as the store
    /// lives; a second call replaces the handler.
    ///
    /// The handler runs on the main actor, once per route, in the order the routes were sent.
    /// Routes sent before the first call are delivered to it then.
    ///
    /// - Parameter handler: Handles one route.
    public func subscribeRoutes(_ handler: @escaping @MainActor (Route) -> Void) {
        routeHandler = handler
        guard !isDeliveringRoutes else { return }
        isDeliveringRoutes = true
        let routes = routes
        Task { [weak self] in
            for await route in routes {
                // Once the store is gone, the routes left are dropped (the stream is finished).
                guard let self else { continue }
                self.routeHandler?(route)
            }
        }
    }

    /// This store as a plain ``Store`` with your environment, for a view that needs to send
    /// actions and read the state but not to know about routes.
    public var noSendRoute: Store<Action, State, Environment> {
        map(environment: \.environment)
    }
}

/// An environment with ``sendRoute`` added: what a ``RouteStore``'s reducer is given.
public struct SendRouteEnvironment<Environment: Sendable, Route>: Sendable {
    /// Your environment.
    public var environment: Environment
    /// Sends a route to the store's owner; call it from an effect. Any task may call it.
    public var sendRoute: @Sendable (Route) -> Void

    /// Wraps `environment`, adding `sendRoute`.
    ///
    /// - Parameters:
    ///   - environment: Your environment.
    ///   - sendRoute: Sends a route to the store's owner.
    public init(environment: Environment, sendRoute: @escaping @Sendable (Route) -> Void) {
        self.environment = environment
        self.sendRoute = sendRoute
    }

    /// Sends the route `makeRoute` makes with a callback, and waits for the callback's value:
    /// for a route that opens a screen whose result the machine needs.
    ///
    /// The wait ends with `nil` when the route is dropped: its handler releases the callback
    /// without calling it, or the store goes away before the route is handled. It also ends
    /// with `nil` when the waiting task is cancelled (a task already cancelled sends no route);
    /// the callback, called later, then does nothing.
    ///
    /// - Parameter makeRoute: Makes the route, given the callback its handler calls once with
    ///   the value.
    /// - Returns: The value the route's handler passed to the callback; `nil` if the route was
    ///   dropped or the wait cancelled.
    nonisolated(nonsending)
    public func sendRouteAsync<Value>(
        _ makeRoute: (@escaping @Sendable (sending Value) -> Void) -> Route
    ) async -> Value? {
        let slot = RouteReplySlot<Value>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard slot.hold(continuation) else { return }
                // The callback alone holds `reply`, so that dropping it is seen.
                let reply = RouteReply(slot)
                sendRoute(makeRoute { reply.resume(returning: $0) })
            }
        } onCancel: {
            slot.finish(with: nil)
        }
    }
}

/// Where the caller of one ``SendRouteEnvironment/sendRouteAsync(_:)`` waits: resumed once,
/// with the value, or with `nil` (the route dropped, the wait cancelled).
private final class RouteReplySlot<Value>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<Value?, Never>)
        case finished
    }

    private let state = Mutex(State.empty)

    /// Keeps `continuation` until ``finish(with:)``; returns `false`, having resumed it with
    /// `nil`, when the wait was cancelled first.
    func hold(_ continuation: CheckedContinuation<Value?, Never>) -> Bool {
        let held = state.withLock { state -> Bool in
            guard case .empty = state else { return false }
            state = .waiting(continuation)
            return true
        }
        if !held { continuation.resume(returning: nil) }
        return held
    }

    /// Resumes the caller with `value`; later calls do nothing.
    func finish(with value: sending Value?) {
        let continuation = state.withLock { state -> CheckedContinuation<Value?, Never>? in
            defer { state = .finished }
            guard case let .waiting(continuation) = state else { return nil }
            return continuation
        }
        continuation?.resume(returning: value)
    }
}

/// The route's callback's hold on the caller: resumes it with the value, or with `nil` once the
/// callback is released uncalled.
private final class RouteReply<Value>: Sendable {
    private let slot: RouteReplySlot<Value>

    init(_ slot: RouteReplySlot<Value>) {
        self.slot = slot
    }

    deinit {
        slot.finish(with: nil)
    }

    /// Resumes the caller with `value`; later calls do nothing.
    func resume(returning value: sending Value) {
        slot.finish(with: value)
    }
}
