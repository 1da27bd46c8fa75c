/// The minimum time between the starts of two effects of the same ``EffectQueue``, in seconds.
///
/// The first effect of a queue starts at once; each next one starts no sooner than the delay
/// after the previous one started. Useful for throttling.
public enum EffectQueueDelay: Hashable, Sendable {
    /// The same delay every time.
    case constant(Double)
    /// A delay drawn uniformly from the range each time.
    case random(ClosedRange<Double>)

    /// No delay.
    public static let none = EffectQueueDelay.constant(0)

    /// The longest delay it can draw: once that long has passed since a queue's last start,
    /// the queue's next effect starts at once, as its first did.
    var longest: Duration {
        switch self {
        case let .constant(seconds): .seconds(max(seconds, 0))
        case let .random(range): .seconds(max(range.upperBound, 0))
        }
    }

    /// The delay before the next start, drawn with `generator` for ``random(_:)``.
    public func duration(using generator: inout some RandomNumberGenerator) -> Duration {
        switch self {
        case let .constant(seconds):
            .seconds(max(seconds, 0))
        case let .random(range):
            .seconds(max(Double.random(in: range, using: &generator), 0))
        }
    }
}
