/// Binds `from => to` tighter than the `|` that joins an input and an output to it.
precedencegroup TransitionArrowPrecedence {
    higherThan: AdditionPrecedence
    associativity: none
}

/// Builds the `from => to` half of a transition-table row.
infix operator => : TransitionArrowPrecedence

/// A transition from exactly `from` to `to`.
@inlinable
public func => <State: Sendable & Equatable>(from: State, to: State) -> Transition<State> {
    Transition(from: TransitionPattern(from), to: to)
}

/// A transition from every state `from` accepts to `to`.
@inlinable
public func => <State: Sendable>(from: @escaping @Sendable (State) -> Bool, to: State) -> Transition<State> {
    Transition(from: TransitionPattern(where: from), to: to)
}

/// A row that fires for exactly `input`.
@inlinable
public func | <Input: Sendable & Equatable, State, Output>(
    input: Input, transition: Transition<State>
) -> TransitionRow<Input, State, Output> {
    TransitionRow(input: TransitionPattern(input), transition: transition)
}

/// A row that fires for every input `input` accepts.
@inlinable
public func | <Input: Sendable, State, Output>(
    input: @escaping @Sendable (Input) -> Bool, transition: Transition<State>
) -> TransitionRow<Input, State, Output> {
    TransitionRow(input: TransitionPattern(where: input), transition: transition)
}

/// The same row, with `output` emitted when it fires.
@inlinable
public func | <Input, State, Output>(
    row: TransitionRow<Input, State, Output>, output: Output
) -> TransitionRow<Input, State, Output> {
    TransitionRow(input: row.input, transition: row.transition, output: output)
}
