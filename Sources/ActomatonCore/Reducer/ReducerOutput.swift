/// An output that has an "empty" value and combines in order with `+`.
///
/// Composition needs both: ``MealyReducer/combine(_:)`` joins the outputs of several
/// reducers with `+`, and a reducer lifted with `contramap` returns ``empty`` for actions or
/// states that are not its own. `Array` conforms (feedback actions for
/// ``ActionEffectManager``), and so do ``Feedback`` and the async layer's `Effect`. `Void`
/// outputs get their own overloads.
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
