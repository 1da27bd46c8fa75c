/// Identifies a running effect, for cancellation.
///
/// Starting an effect with an ID cancels every effect still running with an equal ID, and
/// ``Effect/cancel(id:)`` cancels them on demand. IDs are scoped to one machine: two
/// `Actomaton`s using the same ID never cancel each other's effects.
///
/// ```swift
/// struct LoginFlowEffectID: EffectID {}
/// ```
public protocol EffectID: Hashable, Sendable {}

/// A type-erased ``EffectID``: equal when the IDs have the same type and are equal.
public struct AnyEffectID: Hashable, Sendable, CustomStringConvertible {
    /// The wrapped ID.
    public let base: any EffectID

    /// Wraps `id`.
    public init(_ id: some EffectID) {
        base = id
    }

    /// Whether both wrap IDs of the same type that are equal.
    public static func == (lhs: AnyEffectID, rhs: AnyEffectID) -> Bool {
        lhs.base.isEqual(to: rhs.base)
    }

    /// Hashes the wrapped ID and its type.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(type(of: base)))
        base.hash(into: &hasher)
    }

    /// The wrapped ID, as `String(describing:)` prints it.
    public var description: String { String(describing: base) }
}

extension EffectID {
    fileprivate func isEqual(to other: any EffectID) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}
