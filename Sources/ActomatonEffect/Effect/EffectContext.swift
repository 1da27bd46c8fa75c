/// What an effect's work receives: the clock to sleep on.
///
/// Sleep through `context.clock`, never `Task.sleep`, so tests can swap in a test clock and
/// move time by hand.
///
/// ```swift
/// Effect.fireAndForget { context in
///     try await context.clock.sleep(for: .seconds(1))
/// }
/// ```
public struct EffectContext: Sendable {
    /// The clock the machine runs on.
    public let clock: any Clock<Duration>

    /// Creates a context on `clock`.
    public init(clock: any Clock<Duration>) {
        self.clock = clock
    }
}
