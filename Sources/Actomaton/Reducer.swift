/// A reducer whose output is an `Effect`: the reducer of an ``Actomaton``.
///
/// It is a `MealyReducer`, so it composes with `combine` and the `contramap` family, here
/// also over key paths and case paths.
///
/// ```swift
/// let reducer = Reducer<Action, State, Environment> { action, state, environment in
///     switch action {
///     case .increment:
///         state.count += 1
///         return .empty
///     }
/// }
/// ```
public typealias Reducer<Action: Sendable, State, Environment> = MealyReducer<Action, State, Environment, Effect<Action>>
