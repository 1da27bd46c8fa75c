import ActomatonHost
import Synchronization

/// A token bucket (`TokenBucket`) per key: `rate` a `period`, in bursts of up to `rate`.
///
/// At most `maxKeys` keys are tracked: when the table is full, the buckets that time refilled
/// are dropped first (a full bucket is the same as none); a new key that still finds no room is
/// let through untracked, so the table never grows past the limit.
final class RateLimiter<Key: Hashable & Sendable>: Sendable {
    private let buckets = Mutex<[Key: TokenBucket]>([:])
    private let rate: Int
    private let period: Duration
    private let maxKeys: Int
    private let now: @Sendable () -> Duration

    /// `rate` 0 lets everything through.
    init(rate: Int, per period: Duration = .seconds(1), maxKeys: Int = .max, now: @escaping @Sendable () -> Duration) {
        self.rate = rate
        self.period = period
        self.maxKeys = maxKeys
        self.now = now
    }

    /// Takes one from `key`'s bucket; `false` when it is empty.
    func admit(_ key: Key) -> Bool {
        guard rate > 0 else { return true }
        let time = now()
        return buckets.withLock { buckets in
            var bucket = buckets[key] ?? TokenBucket(rate: rate, period: period, at: time)
            let admitted = bucket.take(at: time)
            if buckets[key] == nil, buckets.count >= maxKeys {
                buckets = buckets.filter { !$0.value.isFull(at: time) }
                guard buckets.count < maxKeys else { return admitted }
            }
            buckets[key] = bucket
            return admitted
        }
    }

    /// Whether `key`'s bucket is empty now (nothing taken).
    func isExhausted(_ key: Key) -> Bool {
        guard rate > 0 else { return false }
        let time = now()
        return buckets.withLock { buckets in buckets[key].map { !$0.hasToken(at: time) } ?? false }
    }

    /// How long until `key`'s bucket has a token again, in whole seconds rounded up (at least
    /// one): the `Retry-After` of a refusal.
    func secondsUntilAdmitted(_ key: Key) -> Int {
        let time = now()
        let wait = buckets.withLock { buckets in buckets[key]?.timeUntilToken(at: time) } ?? .zero
        return ServiceError.wholeSecondsRoundedUp(wait)
    }

    /// How many keys are tracked.
    var trackedKeys: Int {
        buckets.withLock { $0.count }
    }
}
