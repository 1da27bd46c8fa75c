/// What a ``TransitionTable`` did with one input.
public enum TransitionReply<State, Output> {
    /// A row matched: the state moved `from` → `to`, and the row's output, if it has one.
    case transitioned(from: State, to: State, output: Output?)
    /// No row matched the input in `state`; the state is unchanged.
    case noMatch(state: State)

    /// Whether a row matched.
    @inlinable
    public var isTransitioned: Bool {
        if case .transitioned = self { true } else { false }
    }

    /// The matched row's output, if a row matched and it has one.
    @inlinable
    public var output: Output? {
        if case let .transitioned(_, _, output) = self { output } else { nil }
    }
}

extension TransitionReply: Equatable where State: Equatable, Output: Equatable {}
extension TransitionReply: Hashable where State: Hashable, Output: Hashable {}
extension TransitionReply: Sendable where State: Sendable, Output: Sendable {}
