/// The effect manager that hands each transition's output back to the caller of `send`.
///
/// For machines whose output is an answer rather than work to do: a tokenizer's tokens, a
/// game's verdict on a move, a ``TransitionTable``'s ``TransitionReply``.
///
/// ```swift
/// var machine = MealyMachine(state: .loggedOut, reducer: table.reducer, effectManager: ReplyEffectManager())
/// let reply = machine.send(.login) // .transitioned(from: .loggedOut, to: .loggingIn, output: "request login")
/// ```
public struct ReplyEffectManager<Action, Output>: EffectManager {
    @usableFromInline
    var output: Output?

    /// Creates the manager.
    @inlinable
    public init() {}

    /// Keeps the output for ``finishSend()``; never feeds an action back.
    @inlinable
    public mutating func handle(_ output: Output) -> Action? {
        self.output = output
        return nil
    }

    /// Returns the output of the transition `send` ran.
    @inlinable
    public mutating func finishSend() -> Output {
        guard let output else {
            fatalError("ReplyEffectManager.finishSend() called without a transition")
        }
        self.output = nil
        return output
    }
}

extension ReplyEffectManager: Sendable where Output: Sendable {}
