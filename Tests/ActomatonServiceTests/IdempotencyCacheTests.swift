import ActomatonHost
@testable import ActomatonService
import Synchronization
import Testing

@Suite struct IdempotencyCacheTests {
    /// A cache whose clock stands still, and an increment's key to `counter/instance`.
    static func increment(instance: String, key: String, token: String)
        throws -> (IdempotencyCache, InstanceAddress, IdempotencyCache.Key, IdempotencyCache.Fingerprint) {
        let address = InstanceAddress(plugin: "counter", key: try InstanceKey(instance))
        return (IdempotencyCache(window: .seconds(60), maxKeys: 100, now: { .seconds(1) }), address,
                IdempotencyCache.Key(token: token, address: address, key: key),
                IdempotencyCache.Fingerprint(Array(#"{"action": "increment"}"#.utf8)))
    }

    /// Regression (audit): every token shared one count of keys, so one client sending new keys
    /// filled it, and every other client's idempotent requests were refused for the whole
    /// window. Each token has a share: at it a new key of that token is refused (429, until its
    /// next key expires), while
    /// another token still gets its own; a key let go (a 5xx, expiry) gives its place back.
    @Test func eachTokenHasItsShareOfTheKeys() async throws {
        let address = InstanceAddress(plugin: "counter", key: try InstanceKey("shared"))
        let time = Mutex(Duration.seconds(1))
        let cache = IdempotencyCache(window: .seconds(60), maxKeys: 4, maxKeysPerToken: 2, now: { time.withLock { $0 } })
        let fingerprint = IdempotencyCache.Fingerprint(Array(#"{"action": "increment"}"#.utf8))
        func key(_ token: String, _ n: Int) -> IdempotencyCache.Key { .init(token: token, address: address, key: "k\(n)") }
        for n in 1...2 {
            guard case .proceed = try await cache.begin(key("greedy", n), fingerprint: fingerprint) else { Issue.record("k\(n)"); return }
            cache.finish(key("greedy", n), status: 200, body: "{}")
        }
        let past = await #expect(throws: ServiceError.self) { try await cache.begin(key("greedy", 3), fingerprint: fingerprint) }
        // Regression (client review): with when its next key expires, as the service-wide 429 has.
        #expect(past == .overLimit("this token already has 2 idempotency keys kept, its share (--max-idempotency-keys-per-token)",
                                   retryAfter: 60))
        guard case .replay = try await cache.begin(key("greedy", 1), fingerprint: fingerprint) else { Issue.record("a kept key replays"); return }
        guard case .proceed = try await cache.begin(key("polite", 1), fingerprint: fingerprint) else { Issue.record("another token"); return }
        cache.finish(key("polite", 1), status: 503, body: "{}") // not kept: its place comes back
        guard case .proceed = try await cache.begin(key("polite", 2), fingerprint: fingerprint) else { Issue.record("its place came back"); return }
        cache.finish(key("polite", 2), status: 200, body: "{}")
        time.withLock { $0 = .seconds(62) } // the greedy token's keys expire
        guard case .proceed = try await cache.begin(key("greedy", 3), fingerprint: fingerprint) else { Issue.record("after expiry"); return }
        #expect(ServiceConfiguration().idempotencyKeysPerToken(tokens: nil) == 100_000, "without tokens: all")
        #expect(ServiceConfiguration().idempotencyKeysPerToken(tokens: 4) == 25_000, "an equal share")
        #expect(ServiceConfiguration().idempotencyKeysPerToken(tokens: 200_000) == 1)
    }

    /// A receipt journaled before retries were compared by their action holds the fingerprint
    /// of the body's bytes: a retry of that body, across the upgrade, is replayed, not refused
    /// 422; another body is still another request.
    @Test func aReceiptOfAnEarlierVersionStillMatchesItsBody() async throws {
        let (cache, _, key, bodyFingerprint) = try Self.increment(instance: "u", key: "upgraded", token: IdempotencyCache.noToken)
        let receipt = JournaledReceipt(plugin: "counter/u", key: IdempotencyCache.journalKey(key), fingerprint: bodyFingerprint.description,
                                       answer: #"{"seq":1}"#, expires: .max)
        cache.restore([receipt], wallNow: 0)
        let actionFingerprint = IdempotencyCache.Fingerprint(Array("action\u{0}increment".utf8))
        guard case let .replay(stored) = try await cache.begin(key, fingerprint: actionFingerprint, formerFingerprint: bodyFingerprint) else {
            Issue.record("a retry of the same body across the upgrade was not replayed")
            return
        }
        #expect(stored.body == #"{"seq":1}"#)
        await #expect(throws: ServiceError.self) {
            _ = try await cache.begin(key, fingerprint: actionFingerprint,
                                      formerFingerprint: IdempotencyCache.Fingerprint(Array(#"{"action":"increment"}"#.utf8)))
        }
    }

    /// Regression (audit): a receipt edited in the journal (`garbage{`, `HTTP/1.1 200`) was
    /// replayed as a 200. One that is not a JSON object is replayed as a 503 saying so: its
    /// request is not applied again.
    @Test func aReceiptThatIsNotAnAnswerIsNotReplayedAsOne() async throws {
        for (index, answer) in ["garbage{", "HTTP/1.1 200 OK", "", "[1]", #"{"seq":1"#].enumerated() {
            let (cache, _, key, fingerprint) = try Self.increment(instance: "e\(index)", key: "edited", token: IdempotencyCache.noToken)
            cache.restore([JournaledReceipt(plugin: "counter/e\(index)", key: IdempotencyCache.journalKey(key),
                                            fingerprint: fingerprint.description, answer: answer, expires: .max)], wallNow: 0)
            guard case let .replay(stored) = try await cache.begin(key, fingerprint: fingerprint) else {
                Issue.record("\(answer.debugDescription): the request would be applied again")
                continue
            }
            #expect(stored.status == 503 && stored.body == ServiceError.jsonLine("the answer kept for this Idempotency-Key cannot be "
                        + "replayed (it is not a JSON object); the request is not applied again"), "\(answer.debugDescription): \(stored)")
        }
        let big = "{\"s\":\"" + String(repeating: "x", count: JournaledReceipt.maxAnswerBytes) + "\"}"
        #expect(IdempotencyCache.problem(ofAnswer: big) == "it is \(big.utf8.count) bytes, over the limit of \(JournaledReceipt.maxAnswerBytes)")
        #expect(IdempotencyCache.problem(ofAnswer: #"{"seq":1}"#) == nil)
        // A state nested as deep as a state may be, one level deeper in its transition (review).
        let deep = #"{"seq":1,"state":"# + String(repeating: "[", count: 64) + String(repeating: "]", count: 64) + "}"
        #expect(IdempotencyCache.problem(ofAnswer: deep) == nil)
    }

    /// In a cluster, a retry reads the key's receipt from the journal into the cache before it
    /// begins. When the first request was still under way here, that overwrote its pending
    /// entry and lost the retries waiting on it: they never answered, and the host never shut
    /// down (`make test-cluster`, "begin(_:fingerprint:) leaked its continuation").
    @Test func aReceiptReadWhileTheRequestIsUnderWayKeepsItsWaiters() async throws {
        let (cache, _, key, fingerprint) = try Self.increment(instance: "k", key: "retry-1", token: IdempotencyCache.noToken)
        guard case .proceed = try await cache.begin(key, fingerprint: fingerprint) else {
            Issue.record("the first request does not proceed")
            return
        }
        let answered = Mutex<String?>(nil)
        let retry = Task {
            if case let .replay(stored) = try await cache.begin(key, fingerprint: fingerprint) {
                answered.withLock { $0 = stored.body }
            }
        }
        #expect(await eventually { cache.waiting(for: key) == 1 })
        let receipt = JournaledReceipt(plugin: "counter/k", key: IdempotencyCache.journalKey(key), fingerprint: fingerprint.description,
                                       answer: #"{"seq":1}"#, expires: .max)
        cache.restore([receipt], wallNow: 0)
        cache.finish(key, status: 200, body: #"{"seq":1}"#)
        #expect(await eventually { answered.withLock { $0 } != nil }, "the retry waiting on the first request never got its answer")
        #expect(answered.withLock { $0 } == #"{"seq":1}"#)
        retry.cancel()
    }

    /// Regression (audit): in a cluster, an answer kept here was replayed after another host had
    /// deleted the instance (and its receipts): a retry was told of an action that no longer
    /// existed. The journal's receipt settles what is kept: none drops the answer, one replaces it.
    @Test func theJournalsReceiptSettlesAKeptAnswer() async throws {
        let (cache, address, key, fingerprint) = try Self.increment(instance: "s", key: "settled", token: "0123456789abcdef")
        _ = try await cache.begin(key, fingerprint: fingerprint)
        cache.finish(key, status: 200, body: #"{"seq":1}"#)
        cache.settle(key, with: nil, readAfter: cache.mark(), wallNow: 0)
        guard case .proceed = try await cache.begin(key, fingerprint: fingerprint) else {
            Issue.record("an answer the journal no longer holds was replayed")
            return
        }
        cache.finish(key, status: 200, body: #"{"seq":1}"#)
        let receipt = JournaledReceipt(plugin: "counter/s", key: IdempotencyCache.journalKey(key), fingerprint: fingerprint.description,
                                       answer: #"{"seq":7}"#, expires: .max)
        cache.settle(key, with: receipt, readAfter: cache.mark(), wallNow: 0)
        guard case let .replay(stored) = try await cache.begin(key, fingerprint: fingerprint) else {
            Issue.record("the journal's receipt was not replayed")
            return
        }
        #expect(stored.body == #"{"seq":7}"#)
        // A request under way is left alone.
        let other = IdempotencyCache.Key(token: "0123456789abcdef", address: address, key: "under-way")
        _ = try await cache.begin(other, fingerprint: fingerprint)
        cache.settle(other, with: nil, readAfter: cache.mark(), wallNow: 0)
        #expect(cache.count == 2)
    }

    /// Regression (found reading the code after `make test-cluster` in CI applied one increment
    /// of 7,736 twice): a retry read the journal before the first request's commit, the first request then finished and kept
    /// its answer, and the retry's settling dropped that answer for the receipt it had not
    /// found: it ran the action again. An answer kept since the journal was read stays.
    @Test func anAnswerKeptWhileTheReceiptIsReadIsReplayed() async throws {
        let (cache, _, key, fingerprint) = try Self.increment(instance: "r", key: "raced", token: IdempotencyCache.noToken)
        // The first request is under way; a retry marks the cache and reads no receipt, as the
        // first request's commit is not done yet.
        guard case .proceed = try await cache.begin(key, fingerprint: fingerprint) else {
            Issue.record("the first request does not proceed")
            return
        }
        let mark = cache.mark()
        // The first request commits and keeps its answer, then the retry settles with what it read.
        cache.finish(key, status: 200, body: #"{"seq":1}"#)
        cache.settle(key, with: nil, readAfter: mark, wallNow: 0)
        guard case let .replay(stored) = try await cache.begin(key, fingerprint: fingerprint) else {
            Issue.record("the retry ran its action a second time")
            return
        }
        #expect(stored.body == #"{"seq":1}"#)
        // The same order with the answer kept before the mark: the journal's word (no receipt:
        // the instance was deleted since) holds.
        cache.settle(key, with: nil, readAfter: cache.mark(), wallNow: 0)
        guard case .proceed = try await cache.begin(key, fingerprint: fingerprint) else {
            Issue.record("an answer the journal no longer holds was replayed")
            return
        }
    }

    /// Regression: a DELETE while a request with a key was under way forgot nothing of it; its
    /// answer was then kept, and a retry replayed it for the deleted instance.
    @Test func aRequestUnderWayWhenItsInstanceIsDeletedKeepsNoAnswer() async throws {
        let (cache, address, key, fingerprint) = try Self.increment(instance: "d", key: "once", token: IdempotencyCache.noToken)
        guard case .proceed = try await cache.begin(key, fingerprint: fingerprint) else {
            Issue.record("the first request does not proceed")
            return
        }
        let retried = Mutex<String?>(nil)
        let retry = Task {
            switch try await cache.begin(key, fingerprint: fingerprint) {
            case .proceed: retried.withLock { $0 = "proceeds" }
            case .replay, .replayFromJournal: retried.withLock { $0 = "replayed" }
            }
        }
        #expect(await eventually { cache.waiting(for: key) == 1 })
        cache.forget(address)
        cache.finish(key, status: 200, body: #"{"seq":1}"#)
        #expect(await eventually { retried.withLock { $0 } != nil })
        #expect(retried.withLock { $0 } == "proceeds", "the waiting retry runs anew")
        retry.cancel()
    }

    /// An answer carries the instance's state: 100,000 keys of large answers took memory
    /// without bound. Without a journal, the answers kept add up to `--max-idempotency-bytes`:
    /// at it a new key is 429 (the answers kept still replay), and the bytes come back with
    /// expiry. Each token keeps at most its share of them, as of the keys.
    @Test func theAnswersKeptInMemoryAreBoundedInBytesAtTheLimitAndOnePast() async throws {
        let address = InstanceAddress(plugin: "counter", key: try InstanceKey("bytes"))
        let time = Mutex(Duration.seconds(1))
        let cache = IdempotencyCache(window: .seconds(60), maxKeys: 8, maxKeysPerToken: 4, maxBytes: 40, now: { time.withLock { $0 } })
        let fingerprint = IdempotencyCache.Fingerprint(Array(#"{"action": "increment"}"#.utf8))
        func key(_ token: String, _ n: Int) -> IdempotencyCache.Key { .init(token: token, address: address, key: "k\(n)") }
        let answer = #"{"seq":10}"# // 10 bytes
        // A token's share: 4 of 8 keys, so 20 of 40 bytes. At it, its next key is refused.
        for n in 1...2 {
            guard case .proceed = try await cache.begin(key("a", n), fingerprint: fingerprint) else { Issue.record("a k\(n)"); return }
            cache.finish(key("a", n), status: 200, body: answer)
        }
        let share = await #expect(throws: ServiceError.self) { try await cache.begin(key("a", 3), fingerprint: fingerprint) }
        #expect(share == .overLimit("the answers kept for this token's idempotency keys take 20 bytes, at least its share of 20 (--max-idempotency-bytes)",
                                    retryAfter: 60))
        // The whole: another token takes the other 20, the limit; one past is refused for all.
        for n in 1...2 {
            guard case .proceed = try await cache.begin(key("b", n), fingerprint: fingerprint) else { Issue.record("b k\(n)"); return }
            cache.finish(key("b", n), status: 200, body: answer)
        }
        #expect(cache.keptBytes == 40)
        let past = await #expect(throws: ServiceError.self) { try await cache.begin(key("c", 1), fingerprint: fingerprint) }
        #expect(past == .overLimit("the answers kept for idempotency keys take 40 bytes, at least their limit of 40 (--max-idempotency-bytes)",
                                   retryAfter: 60))
        guard case let .replay(stored) = try await cache.begin(key("a", 1), fingerprint: fingerprint) else { Issue.record("a kept answer replays"); return }
        #expect(stored.body == answer)
        // Expired, the bytes come back.
        time.withLock { $0 = .seconds(62) }
        guard case .proceed = try await cache.begin(key("c", 1), fingerprint: fingerprint) else { Issue.record("after expiry"); return }
        cache.finish(key("c", 1), status: 200, body: answer)
        #expect(cache.keptBytes == 10)
        #expect(IdempotencyCache.share(of: 256 << 20, keys: 25_000, of: 100_000) == 64 << 20)
        #expect(IdempotencyCache.share(of: 1 << 40, keys: 100_000_000, of: 100_000_000) == 1 << 40)
        #expect(IdempotencyCache.share(of: 1 << 40, keys: 1, of: 100_000_000) == (1 << 40) / 100_000_000)
    }

    /// With a journal, every applied action's answer is its receipt there: the answers past
    /// the bytes are kept only in the journal, their fingerprints in memory, and a retry reads
    /// them back (no new key is refused for the bytes). Receipts read at a restart without
    /// their answers are kept the same way.
    @Test func withAJournalTheAnswersPastTheBytesAreKeptOnlyThere() async throws {
        let address = InstanceAddress(plugin: "counter", key: try InstanceKey("journaled"))
        let cache = IdempotencyCache(window: .seconds(60), maxKeys: 8, maxBytes: 20, answersJournaled: true, now: { .seconds(1) })
        let fingerprint = IdempotencyCache.Fingerprint(Array(#"{"action": "increment"}"#.utf8))
        func key(_ n: Int) -> IdempotencyCache.Key { .init(token: IdempotencyCache.noToken, address: address, key: "k\(n)") }
        for n in 1...3 {
            guard case .proceed = try await cache.begin(key(n), fingerprint: fingerprint) else { Issue.record("k\(n)"); return }
            cache.finish(key(n), status: 200, body: #"{"seq":10}"#)
        }
        #expect(cache.keptBytes == 20, "at the limit: the third is in the journal only")
        guard case .replay = try await cache.begin(key(2), fingerprint: fingerprint) else { Issue.record("k2 from memory"); return }
        guard case .replayFromJournal = try await cache.begin(key(3), fingerprint: fingerprint) else { Issue.record("k3 from the journal"); return }
        await #expect(throws: ServiceError.self) { try await cache.begin(key(3), fingerprint: IdempotencyCache.Fingerprint(Array("other".utf8))) }
        // A refusal is not journaled: it stays in memory, past the bytes.
        guard case .proceed = try await cache.begin(key(4), fingerprint: fingerprint) else { Issue.record("k4"); return }
        cache.finish(key(4), status: 422, body: #"{"error":"no"}"#)
        guard case let .replay(refusal) = try await cache.begin(key(4), fingerprint: fingerprint) else { Issue.record("k4 replays"); return }
        #expect(refusal.status == 422)
        // Its journal no longer holds it (deleted): forgotten, it runs anew.
        cache.forgetAnswer(key(3))
        guard case .proceed = try await cache.begin(key(3), fingerprint: fingerprint) else { Issue.record("k3 anew"); return }
        // Read without its answer at a restart; and one past the journal's limit, never read.
        let receipt = JournaledReceipt(plugin: "counter/journaled", key: IdempotencyCache.journalKey(key(5)), fingerprint: fingerprint.description,
                                       answer: nil, answerBytes: 10, expires: .max)
        let huge = JournaledReceipt(plugin: "counter/journaled", key: IdempotencyCache.journalKey(key(6)), fingerprint: fingerprint.description,
                                    answer: nil, answerBytes: JournaledReceipt.maxAnswerBytes + 1, expires: .max)
        cache.restore([receipt, huge], wallNow: 0)
        guard case .replayFromJournal = try await cache.begin(key(5), fingerprint: fingerprint) else { Issue.record("k5 from the journal"); return }
        guard case let .replay(refused) = try await cache.begin(key(6), fingerprint: fingerprint) else { Issue.record("k6"); return }
        #expect(refused.status == 503 && refused.body.contains("it is \(JournaledReceipt.maxAnswerBytes + 1) bytes, over the limit"))
    }

    /// Regression (review): in a cluster each request with a key reads its receipt and settles
    /// the cache with it. A kept answer was removed and kept again, taking one more place in
    /// the expiry order each time, for the whole window (a day), and the whole order was sorted
    /// for each. It keeps its place; a receipt kept anew goes in its place in the order, so
    /// that the answers expire in their order.
    @Test func aRetrySettledByTheJournalKeepsOnePlaceInTheExpiryOrder() async throws {
        let (cache, address, key, fingerprint) = try Self.increment(instance: "o", key: "once", token: "0123456789abcdef")
        _ = try await cache.begin(key, fingerprint: fingerprint)
        cache.finish(key, status: 200, body: #"{"seq":1}"#)
        let receipt = JournaledReceipt(plugin: "counter/o", key: IdempotencyCache.journalKey(key), fingerprint: fingerprint.description,
                                       answer: #"{"seq":1}"#, expires: .max)
        for _ in 0..<1000 {
            cache.settle(key, with: receipt, readAfter: cache.mark(), wallNow: 0)
            guard case let .replay(stored) = try await cache.begin(key, fingerprint: fingerprint), stored.body == #"{"seq":1}"# else {
                Issue.record("the settled answer is not replayed")
                return
            }
        }
        #expect(cache.orderCount == 1)
        #expect(cache.keptBytes == 9)

        let time = Mutex(Duration.seconds(1))
        let ordered = IdempotencyCache(window: .seconds(60), maxKeys: 100, now: { time.withLock { $0 } })
        func receiptKept(_ name: String, expires: Int64) -> JournaledReceipt {
            let key = IdempotencyCache.Key(token: "0123456789abcdef", address: address, key: name)
            return JournaledReceipt(plugin: "counter/o", key: IdempotencyCache.journalKey(key), fingerprint: fingerprint.description,
                                    answer: #"{"seq":1}"#, expires: expires)
        }
        for (name, expires) in [("late", 3_000), ("early", 1_000), ("middle", 2_000)] {
            ordered.restore([receiptKept(name, expires: Int64(expires))], wallNow: 0)
        }
        time.withLock { $0 = .milliseconds(2_500) }
        for (name, expired) in [("early", true), ("middle", false), ("late", false)] {
            let key = IdempotencyCache.Key(token: "0123456789abcdef", address: address, key: name)
            switch try await ordered.begin(key, fingerprint: fingerprint) {
            case .proceed: #expect(expired, "\(name) expired early")
            default: #expect(!expired, "\(name) was replayed after it expired")
            }
        }
    }
}
