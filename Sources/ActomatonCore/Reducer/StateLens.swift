/// A closure lens: reads a part of a larger state and modifies it in place.
///
/// `MealyReducer/contramap(state:)` uses it to run a reducer written for the part
/// on the whole. `modify` hands the part to its body as `inout`, so a part that holds
/// arrays or strings is mutated where it lives, without a copy.
///
/// ```swift
/// let count = StateLens<App, Int>(
///     get: { $0.count },
///     modify: { app, body in body(&app.count) }
/// )
/// ```
public struct StateLens<Whole, Part>: Sendable {
    /// Reads the part out of the whole.
    public let get: @Sendable (Whole) -> Part
    /// Runs `body` on the part, in place; it must call `body` exactly once.
    public let modify: @Sendable (inout Whole, (inout Part) -> Void) -> Void

    /// Creates a lens from a getter and an in-place modifier.
    @inlinable
    public init(
        get: @escaping @Sendable (Whole) -> Part,
        modify: @escaping @Sendable (inout Whole, (inout Part) -> Void) -> Void
    ) {
        self.get = get
        self.modify = modify
    }

    /// Creates a lens from a getter and a setter; the part is copied out and written back.
    @inlinable
    public init(
        get: @escaping @Sendable (Whole) -> Part,
        set: @escaping @Sendable (inout Whole, Part) -> Void
    ) {
        self.get = get
        self.modify = { whole, body in
            var part = get(whole)
            body(&part)
            set(&whole, part)
        }
    }
}
