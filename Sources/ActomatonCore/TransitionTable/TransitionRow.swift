/// One row of a ``TransitionTable``: `input | from => to`, optionally `| output`.
public struct TransitionRow<Input: Sendable, State: Sendable, Output> {
    /// The inputs the row applies to.
    public let input: TransitionPattern<Input>
    /// The states the row applies in, and the state it moves to.
    public let transition: Transition<State>
    /// What the row outputs when it fires, if anything.
    public let output: Output?

    /// Creates a row.
    @inlinable
    public init(input: TransitionPattern<Input>, transition: Transition<State>, output: Output? = nil) {
        self.input = input
        self.transition = transition
        self.output = output
    }

    /// Whether the row fires for `input` in `state`.
    @inlinable
    public func matches(_ input: Input, in state: State) -> Bool {
        self.input.matches(input) && transition.from.matches(state)
    }
}

extension TransitionRow: Sendable where Output: Sendable {}
