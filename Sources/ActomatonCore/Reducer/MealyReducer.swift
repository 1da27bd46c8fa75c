/// A composable Mealy transition function stored as a closure.
///
/// `MealyReducer` is the building block users combine: `combine(_:)` runs several
/// reducers in order, and the `contramap` family lifts a reducer written for a local action,
/// state or environment into a global one. The `Output` is handed to the machine's
/// ``EffectManager``: `Void` for ``NoOpEffectManager``, `[Action]` for ``ActionEffectManager``.
///
/// ```swift
/// let counter = MealyReducer<CounterAction, Int, Void, Void> { action, count, _ in
///     switch action {
///     case .increment: count += 1
///     case .decrement: count -= 1
///     }
/// }
/// ```
public struct MealyReducer<Action, State, Environment, Output>: MealyReducerProtocol, Sendable {
    /// The transition function.
    public let run: @Sendable (Action, inout State, Environment) -> Output

    /// Creates a reducer from a transition function.
    @inlinable
    public init(_ run: @escaping @Sendable (Action, inout State, Environment) -> Output) {
        self.run = run
    }

    /// Wraps a statically dispatched reducer so it can be composed with the closure operators.
    @inlinable
    public init<Reducer: MealyReducerProtocol & Sendable>(_ reducer: Reducer)
    where Reducer.Action == Action, Reducer.State == State,
          Reducer.Environment == Environment, Reducer.Output == Output
    {
        self.run = { action, state, environment in
            reducer.reduce(action, into: &state, environment: environment)
        }
    }

    /// Runs the stored transition function on `action` and `state`.
    @inlinable
    public func reduce(_ action: Action, into state: inout State, environment: Environment) -> Output {
        run(action, &state, environment)
    }
}
