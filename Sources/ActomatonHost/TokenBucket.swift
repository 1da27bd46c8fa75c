/// A token bucket: `rate` tokens a `period`, in bursts of up to `rate`, on any clock that
/// gives its time as a `Duration` (a test's clock, or `ContinuousClock.now - start`). The one
/// rate limit of the package: a plugin's log lines, a token's requests, an address's failed
/// authentications.
package struct TokenBucket: Sendable {
    /// Tokens given back per ``period``, and the most the bucket holds.
    package let rate: Int
    /// How long time takes to give back ``rate`` tokens.
    package let period: Duration
    private var available: Double
    private var last: Duration

    /// A full bucket at `time`.
    package init(rate: Int, period: Duration = .seconds(1), at time: Duration) {
        self.rate = rate
        self.period = period
        available = Double(rate)
        last = time
    }

    /// Puts back what time gave since the bucket was last used (a clock going back gives none).
    package mutating func refill(at time: Duration) {
        available = min(Double(rate), available + max(0, (time - last) / period) * Double(rate))
        last = time
    }

    /// Refills, then takes one token; `false` when there was none.
    package mutating func take(at time: Duration) -> Bool {
        refill(at: time)
        guard available >= 1 else { return false }
        available -= 1
        return true
    }

    /// Whether a token could be taken at `time` (nothing taken).
    package func hasToken(at time: Duration) -> Bool {
        var bucket = self
        bucket.refill(at: time)
        return bucket.available >= 1
    }

    /// How long after `time` a token can be taken: zero when one can be now.
    package func timeUntilToken(at time: Duration) -> Duration {
        var bucket = self
        bucket.refill(at: time)
        guard bucket.available < 1 else { return .zero }
        return period * ((1 - bucket.available) / Double(rate))
    }

    /// Whether time has filled the bucket by `time`: it is then the same as a new one.
    package func isFull(at time: Duration) -> Bool {
        var bucket = self
        bucket.refill(at: time)
        return bucket.available >= Double(rate)
    }
}
