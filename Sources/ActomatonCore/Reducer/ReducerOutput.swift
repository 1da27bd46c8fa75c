/// An output that has an "empty" value and combines in order.
///
/// Composition needs both: ``MealyReducer/combine(_:)`` joins the outputs of several
/// reducers, and a reducer lifted with `contramap` returns ``empty`` for actions or states
/// that are not its own. `Array` conforms (feedback actions for ``ActionEffectManager``);
/// the async layer's `Effect` conforms too. `Void` outputs get their own overloads.
public protocol ReducerOutput: SendableMetatype {
    /// The output that asks for nothing.
    static var empty: Self { get }

    /// Returns `lhs` followed by `rhs`.
    static func combine(_ lhs: Self, _ rhs: Self) -> Self
}

extension Array: ReducerOutput {
    /// An empty array.
    @inlinable
    public static var empty: Self { [] }

    /// The elements of `lhs` followed by those of `rhs`.
    @inlinable
    public static func combine(_ lhs: Self, _ rhs: Self) -> Self {
        lhs.isEmpty ? rhs : (rhs.isEmpty ? lhs : lhs + rhs)
    }
}
