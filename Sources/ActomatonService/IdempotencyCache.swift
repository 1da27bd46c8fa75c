import Synchronization

/// The responses to requests sent with an `Idempotency-Key`, kept for a window so that a retry
/// gets the first response instead of applying its action again.
///
/// A key is scoped to its token and its instance; it is at most ``maxKeyLength`` bytes of
/// visible ASCII. The request is fingerprinted (a 128-bit hash of its body with this process's
/// random seed): the same key with another body is refused (422). While the first request is
/// in flight a retry waits for it. Only answers that say what became of the action are kept
/// (2xx, 400, 422): after a 5xx or a 429 a retry runs again.
///
/// Kept in memory: a restart forgets every key. Keeping them across restarts needs the
/// journal to record each key with the transition it produced (in the same commit, so a
/// key is never kept for an action that was lost, nor lost for one that was kept), and a
/// restarted service to load the keys still inside the window.
final class IdempotencyCache: Sendable {
    /// The longest key, in bytes.
    static let maxKeyLength = 128

    struct Key: Hashable, Sendable {
        var token: Int
        var address: InstanceAddress
        var key: String
    }

    struct Fingerprint: Hashable, Sendable {
        var a: Int
        var b: Int

        init(_ bytes: some Sequence<UInt8>) {
            var first = Hasher()
            var second = Hasher()
            first.combine(1 as UInt8)
            second.combine(2 as UInt8)
            for byte in bytes {
                first.combine(byte)
                second.combine(byte)
            }
            a = first.finalize()
            b = second.finalize()
        }
    }

    /// A response kept for replay.
    struct Stored: Sendable {
        var status: Int
        var body: String
    }

    /// What a request with a key does.
    enum Begin: Sendable {
        /// Runs, then calls ``IdempotencyCache/finish(_:status:body:)``.
        case proceed
        /// Answers with the kept response.
        case replay(Stored)
    }

    private enum Entry {
        case pending(Fingerprint, [CheckedContinuation<Stored?, Never>])
        case done(Fingerprint, Stored, expires: Duration)
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// Keys in the order they were kept, with when they expire, for eviction.
        var order: [(Key, Duration)] = []
        var head = 0
    }

    private let state = Mutex(State())
    private let window: Duration
    private let maxKeys: Int
    private let now: @Sendable () -> Duration

    /// - Parameters:
    ///   - window: How long a response is kept.
    ///   - maxKeys: The most keys kept at a time; a new key past it is refused (429).
    ///   - now: The time, as a duration since any fixed point.
    init(window: Duration, maxKeys: Int, now: @escaping @Sendable () -> Duration) {
        self.window = window
        self.maxKeys = maxKeys
        self.now = now
    }

    /// Checks a key's text: 1 to ``maxKeyLength`` bytes of visible ASCII.
    static func check(_ text: some StringProtocol) throws(ServiceError) {
        guard (1...maxKeyLength).contains(text.utf8.count), text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw .badRequest("an Idempotency-Key is 1 to \(maxKeyLength) bytes of visible ASCII characters")
        }
    }

    /// Starts a request with `key`: run it, replay the kept response, or refuse it (422 for
    /// another request under the same key, 429 past the limit of keys).
    func begin(_ key: Key, fingerprint: Fingerprint) async throws(ServiceError) -> Begin {
        enum Step { case proceed, replay(Stored), wait, mismatch, full }
        let time = now()
        let step: Step = state.withLock { state in
            evictExpired(&state, at: time)
            switch state.entries[key] {
            case let .done(kept, stored, _)?:
                return kept == fingerprint ? .replay(stored) : .mismatch
            case let .pending(kept, _)?:
                return kept == fingerprint ? .wait : .mismatch
            case nil:
                guard state.entries.count < maxKeys else { return .full }
                state.entries[key] = .pending(fingerprint, [])
                return .proceed
            }
        }
        switch step {
        case .proceed: return .proceed
        case let .replay(stored): return .replay(stored)
        case .mismatch: throw .unprocessable("the Idempotency-Key was used for another request to this instance")
        case .full: throw .overLimit("the service already keeps \(maxKeys) idempotency keys, its limit (--max-idempotency-keys)")
        case .wait: break
        }
        let stored: Stored? = await withCheckedContinuation { continuation in
            let immediate: Stored?? = state.withLock { state in
                switch state.entries[key] {
                case let .pending(kept, waiters)?:
                    state.entries[key] = .pending(kept, waiters + [continuation])
                    return .none
                case let .done(_, stored, _)?:
                    return .some(stored)
                case nil:
                    return .some(nil)
                }
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
        // The first request's answer was not kept (a 5xx, a 429): this one runs again.
        guard let stored else { return try await begin(key, fingerprint: fingerprint) }
        return .replay(stored)
    }

    /// Ends a request begun with `.proceed`: keeps its response when `status` says what became
    /// of the action, or forgets the key.
    func finish(_ key: Key, status: Int, body: String) {
        let keep = (200..<300).contains(status) || status == 400 || status == 422
        let stored = Stored(status: status, body: body)
        let expires = now() + window
        let waiters: [CheckedContinuation<Stored?, Never>] = state.withLock { state in
            guard case let .pending(fingerprint, waiters)? = state.entries[key] else { return [] }
            if keep {
                state.entries[key] = .done(fingerprint, stored, expires: expires)
                state.order.append((key, expires))
            } else {
                state.entries[key] = nil
            }
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: keep ? stored : nil) }
    }

    /// How many keys are kept or in flight.
    var count: Int { state.withLock { $0.entries.count } }

    private func evictExpired(_ state: inout State, at time: Duration) {
        while state.head < state.order.count, state.order[state.head].1 <= time {
            let key = state.order[state.head].0
            if case let .done(_, _, expires)? = state.entries[key], expires <= time { state.entries[key] = nil }
            state.head += 1
        }
        if state.head >= 1024, state.head * 2 >= state.order.count {
            state.order.removeFirst(state.head)
            state.head = 0
        }
    }
}
