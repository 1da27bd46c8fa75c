/// What a transition-table row matches: one exact value, or every value a predicate accepts.
///
/// Rows are written with the `|` and `=>` operators rather than by building patterns directly:
/// `.login | .loggedOut => .loggingIn` matches exact values,
/// `.forceLogout | canForceLogout => .loggingOut` matches a predicate on the state.
public struct TransitionPattern<Value: Sendable>: Sendable {
    /// The exact value this pattern matches, or `nil` for a predicate.
    public let value: Value?
    /// Whether the pattern matches a value.
    public let matches: @Sendable (Value) -> Bool

    /// A pattern matching exactly `value`.
    @inlinable
    public init(_ value: Value) where Value: Equatable {
        self.value = value
        self.matches = { $0 == value }
    }

    /// A pattern matching every value `predicate` accepts.
    @inlinable
    public init(where predicate: @escaping @Sendable (Value) -> Bool) {
        self.value = nil
        self.matches = predicate
    }
}

/// The `from => to` half of a transition-table row.
public struct Transition<State: Sendable>: Sendable {
    /// The states the row applies in.
    public let from: TransitionPattern<State>
    /// The state the row moves to.
    public let to: State

    /// Creates a transition from the states `from` matches to `to`.
    @inlinable
    public init(from: TransitionPattern<State>, to: State) {
        self.from = from
        self.to = to
    }
}
