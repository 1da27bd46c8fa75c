import Synchronization

/// A token bucket per access token: `rate` requests a second, in bursts of up to `rate`.
final class RateLimiter: Sendable {
    private struct Bucket {
        var available: Double
        var last: Duration
    }

    private let buckets = Mutex<[Int: Bucket]>([:])
    private let rate: Int
    private let now: @Sendable () -> Duration

    /// `rate` 0 lets everything through.
    init(rate: Int, now: @escaping @Sendable () -> Duration) {
        self.rate = rate
        self.now = now
    }

    /// Takes one request from `token`'s bucket; `false` when it is empty.
    func admit(token: Int) -> Bool {
        guard rate > 0 else { return true }
        let time = now()
        let rate = Double(rate)
        return buckets.withLock { buckets in
            var bucket = buckets[token] ?? Bucket(available: rate, last: time)
            let elapsed = time - bucket.last
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.available = min(rate, bucket.available + seconds * rate)
            bucket.last = time
            let admitted = bucket.available >= 1
            if admitted { bucket.available -= 1 }
            buckets[token] = bucket
            return admitted
        }
    }
}
