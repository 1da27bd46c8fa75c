/// A statically dispatched transition function: `(Action, inout State, Environment) -> Output`.
///
/// Conform a struct to this protocol when a reducer sits on a hot path (a byte-at-a-time
/// parser, a game loop): `MealyMachine` is generic over its reducer, so a conforming type is
/// specialised and inlined into `send`, where a closure-based ``MealyReducer`` cannot be.
/// ``MealyReducer`` conforms too, and carries the composition operators.
public protocol MealyReducerProtocol<Action, State, Environment, Output> {
    /// The input the reducer consumes.
    associatedtype Action
    /// The value the reducer updates in place.
    associatedtype State
    /// Read-only dependencies handed to every call.
    associatedtype Environment
    /// What one transition asks the world to do next; an effect manager consumes it.
    associatedtype Output

    /// Runs one transition: updates `state` for `action` and returns the output.
    func reduce(_ action: Action, into state: inout State, environment: Environment) -> Output
}
