/// A closure prism: extracts one case of a larger state, and embeds a value back as that case.
///
/// `MealyReducer/contramap(state:)` uses it to run a reducer written for one case of an
/// enum (or the wrapped value of an optional) only while the state is in that case; in any
/// other case the reducer does nothing and the state is left as it was.
///
/// ```swift
/// let playing = StatePrism<Screen, Game>(
///     extract: { if case let .playing(game) = $0 { game } else { nil } },
///     embed: { .playing($0) }
/// )
/// ```
public struct StatePrism<Whole, Part>: Sendable {
    /// Returns the part when the whole is in this case, `nil` otherwise.
    public let extract: @Sendable (Whole) -> Part?
    /// Builds the whole from a part.
    public let embed: @Sendable (Part) -> Whole

    /// Creates a prism from an extract/embed pair.
    @inlinable
    public init(
        extract: @escaping @Sendable (Whole) -> Part?,
        embed: @escaping @Sendable (Part) -> Whole
    ) {
        self.extract = extract
        self.embed = embed
    }
}

extension StatePrism where Whole == Part? {
    /// The prism from an optional to its wrapped value.
    @inlinable
    public static var some: StatePrism<Part?, Part> {
        StatePrism(extract: { $0 }, embed: { $0 })
    }
}
