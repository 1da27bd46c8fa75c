import Synchronization

/// A token bucket per key: `rate` a `period`, in bursts of up to `rate`.
///
/// At most `maxKeys` keys are tracked: when the table is full, the buckets that time refilled
/// are dropped first (a full bucket is the same as none); a new key that still finds no room is
/// let through untracked, so the table never grows past the limit.
final class RateLimiter<Key: Hashable & Sendable>: Sendable {
    private struct Bucket {
        var available: Double
        var last: Duration
    }

    private let buckets = Mutex<[Key: Bucket]>([:])
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
            var bucket = refilled(buckets[key], at: time)
            let admitted = bucket.available >= 1
            if admitted { bucket.available -= 1 }
            if buckets[key] == nil, buckets.count >= maxKeys {
                buckets = buckets.filter { refilled($0.value, at: time).available < Double(rate) }
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
        return buckets.withLock { buckets in
            guard let bucket = buckets[key] else { return false }
            return refilled(bucket, at: time).available < 1
        }
    }

    /// How many keys are tracked.
    var trackedKeys: Int {
        buckets.withLock { $0.count }
    }

    /// `bucket` (a full one when `nil`) with what time put back in it since it was last used.
    private func refilled(_ bucket: Bucket?, at time: Duration) -> Bucket {
        let rate = Double(rate)
        guard var bucket else { return Bucket(available: rate, last: time) }
        let elapsed = (time - bucket.last) / period
        bucket.available = min(rate, bucket.available + max(0, elapsed) * rate)
        bucket.last = time
        return bucket
    }
}
