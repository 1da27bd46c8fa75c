import Actomaton
import Testing

// The seed README's example 1-5: a root reducer made of screen reducers, lifted with
// case paths (actions, the current screen) and a key path (the optional current screen).
enum Counter {
    enum Action: Sendable { case increment, decrement }
    typealias State = Int
    static let reducer = Reducer<Action, State, Void> { action, state, _ in
        switch action {
        case .increment: state += 1
        case .decrement: state -= 1
        }
        return .empty
    }
}

enum Todo {
    enum Action: Sendable { case add(String) }
    struct State: Equatable, Sendable { var items: [String] = [] }
    static let reducer = Reducer<Action, State, Void> { action, state, _ in
        switch action {
        case let .add(item): state.items.append(item)
        }
        return .empty
    }
}

enum Stopwatch {
    enum Action: Sendable { case lap }
    struct State: Equatable, Sendable { var laps = 0 }
    struct Environment: Sendable { var lapLimit: Int }
    static let reducer = Reducer<Action, State, Environment> { action, state, environment in
        if state.laps < environment.lapLimit { state.laps += 1 }
        return .empty
    }
}

enum Root {} // just a namespace

extension Root {
    @CasePathable
    enum Action: Sendable {
        case changeCurrent(State.Current?)

        case counter(Counter.Action)
        case stopwatch(Stopwatch.Action)
        case todo(Todo.Action)
    }

    struct State: Equatable, Sendable {
        var current: Current?

        // Current screen (NOTE: enum, so only 1 screen will appear)
        @CasePathable
        enum Current: Equatable, Sendable {
            case counter(Counter.State)
            case stopwatch(Stopwatch.State)
            case todo(Todo.State)
        }
    }

    struct Environment: Sendable {
        var stopwatch: Stopwatch.Environment
    }

    // NOTE: `contramap` is also called `pullback` in swift-composable-architecture.
    static var reducer: Reducer<Action, State, Environment> {
        Reducer.combine(
            Reducer { action, state, _ in
                if case let .changeCurrent(current) = action { state.current = current }
                return .empty
            },

            Counter.reducer
                .contramap(action: \Action.Cases.counter)
                .contramap(state: \State.Current.Cases.counter)
                .contramap(state: \State.current)
                .contramap(environment: { _ in () }),

            Todo.reducer
                .contramap(action: \Action.Cases.todo)
                .contramap(state: \State.Current.Cases.todo)
                .contramap(state: \State.current)
                .contramap(environment: { _ in () }),

            Stopwatch.reducer
                .contramap(action: \Action.Cases.stopwatch)
                .contramap(state: \State.Current.Cases.stopwatch)
                .contramap(state: \State.current)
                .contramap(environment: { $0.stopwatch })
        )
    }
}

@Suite("Example: reducer composition")
struct CompositionExampleTests {
    @Test func eachScreenReducerRunsOnlyOnItsScreen() async {
        let actomaton = Actomaton<Root.Action, Root.State>(
            state: Root.State(current: nil),
            reducer: Root.reducer,
            environment: Root.Environment(stopwatch: .init(lapLimit: 2))
        )

        await actomaton.send(.counter(.increment))           // no screen: nothing happens
        #expect(await actomaton.state.current == nil)

        await actomaton.send(.changeCurrent(.counter(10)))
        await actomaton.send(.counter(.increment))
        await actomaton.send(.todo(.add("milk")))            // not the current screen: ignored
        #expect(await actomaton.state.current == .counter(11))

        await actomaton.send(.changeCurrent(.stopwatch(.init())))
        for _ in 0..<3 { await actomaton.send(.stopwatch(.lap)) }
        #expect(await actomaton.state.current == .stopwatch(.init(laps: 2)))

        await actomaton.send(.changeCurrent(.todo(.init())))
        await actomaton.send(.todo(.add("milk")))
        #expect(await actomaton.state.current == .todo(.init(items: ["milk"])))
    }

    @Test func anyCasePathAndKeyPathForms() {
        // `AnyCasePath`, as written with swift-case-paths' older `/Action.counter` syntax.
        let counterAction = AnyCasePath<Root.Action, Counter.Action>(
            embed: { .counter($0) },
            extract: { if case let .counter(action) = $0 { action } else { nil } }
        )
        let counterState = AnyCasePath<Root.State.Current, Counter.State>(
            embed: { .counter($0) },
            extract: { if case let .counter(count) = $0 { count } else { nil } }
        )
        let reducer = Counter.reducer
            .contramap(action: counterAction)
            .contramap(state: counterState)
            .contramap(state: \Root.State.current)

        var state = Root.State(current: .counter(1))
        _ = reducer.run(.counter(.decrement), &state, ())
        _ = reducer.run(.todo(.add("x")), &state, ())
        #expect(state.current == .counter(0))

        struct Wrapper { var count = 0 }
        var wrapper = Wrapper()
        _ = Counter.reducer.contramap(state: \Wrapper.count).run(.increment, &wrapper, ())
        #expect(wrapper.count == 1)
    }
}
