/// A clock reduced to what effect scheduling needs: time since the manager started, and
/// sleeping until such a time. It wraps any `Clock<Duration>`, so tests can drive a test clock.
struct EffectClock: Sendable {
    /// Time elapsed since the clock was wrapped.
    let now: @Sendable () -> Duration
    /// Sleeps until `now()` reaches the given time; throws when the task is cancelled.
    let sleepUntil: @Sendable (Duration) async throws -> Void

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        now = { origin.duration(to: clock.now) }
        sleepUntil = { try await clock.sleep(until: origin.advanced(by: $0), tolerance: nil) }
    }
}
