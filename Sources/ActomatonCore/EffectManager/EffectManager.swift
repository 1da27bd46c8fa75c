/// Decides what a transition's output means: nothing, actions fed back, async effects, ….
///
/// ``MealyMachine/send(_:)`` runs the reducer, hands the output to ``handle(_:)`` and keeps
/// running the actions it returns, in the same call, until it returns `nil`; then it returns
/// ``finishSend()``'s result to its caller. The machine is generic over its manager, so these
/// calls are statically dispatched and inlined.
public protocol EffectManager<Action, Output> {
    /// The action type the machine runs.
    associatedtype Action
    /// The reducer output this manager consumes.
    associatedtype Output
    /// What ``MealyMachine/send(_:)`` returns to its caller.
    associatedtype SendResult

    /// Takes one transition's output and returns the next action to run synchronously within
    /// the same `send`, or `nil` when there is none.
    mutating func handle(_ output: Output) -> Action?

    /// Ends the current `send` and returns what its caller receives.
    mutating func finishSend() -> SendResult
}
