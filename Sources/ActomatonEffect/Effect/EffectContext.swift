/// What an effect's work receives: the clock to sleep on.
///
/// Sleep through `context.clock`, never `Task.sleep`, so tests can swap in a test clock and
/// move time by hand.
///
/// With a real clock (`ContinuousClock`, the default, or `SuspendingClock`), `context.clock`
/// tells that clock's time, and its sleeps wait in the effect runtime's timers: a cancelled
/// sleep throws at once and frees its memory then. `Task.sleep` keeps about 800 bytes per
/// cancelled sleep until the sleep's deadline, which a queue cancelling effects by the
/// thousand (`runNewest`) turns into megabytes held for as long as the sleeps would have lasted.
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
