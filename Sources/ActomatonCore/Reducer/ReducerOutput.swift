/// An output that has an "empty" value and combines in order with `+`.
///
/// Composition needs both: `MealyReducer/combine(_:)` joins the outputs of several
/// reducers with `+`, and a reducer lifted with `contramap` returns ``empty`` for actions or
/// states that are not its own. `Array` conforms (feedback actions for
/// ``ActionEffectManager``), and so do ``Feedback`` and the async layer's `Effect`. `Void`
/// outputs get their own overloads.
///
/// The operators that need it are `combine`, `contramap(action:)`,
/// `contramap(state:)` with a ``StatePrism``, and `optional()`. An output that does not
/// conform — an `Optional`, a ``TransitionReply``, a type of your own — must go through
/// `map(output:)` into one that does before those operators apply.
public protocol ReducerOutput: SendableMetatype {
    /// The output that asks for nothing.
    static var empty: Self { get }

    /// Returns `lhs` followed by `rhs`.
    static func + (lhs: Self, rhs: Self) -> Self
}

extension Array: ReducerOutput {
    /// An empty array.
    @inlinable
    public static var empty: Self { [] }
}
