import ActomatonHost
import HostCommandLine
import NIOCore
import Synchronization

/// The responses to requests sent with an `Idempotency-Key`, kept for a window so that a retry
/// gets the first response instead of applying its action again.
///
/// A key is scoped to its token (its ``AccessToken/identity``, the same on every host whatever
/// line of the tokens file the token is on; a token's line was used, and a retry to a host whose
/// file listed the tokens in another order was applied twice) and its instance; it is at most
/// ``maxKeyLength`` bytes of visible ASCII. The request is fingerprinted (a stable 128-bit
/// hash of the action it asks for, read from its body — or of the body, when it asks for
/// none): the same key for another action is refused (422), and a retry whose JSON is written
/// another way (its fields in another order, other spaces, named arguments) is the same
/// request. While the first request
/// is in flight a retry waits for it. Only answers that say what became of the action are kept
/// (2xx, 400, 422): after a 5xx or a 429 a retry runs again — but for a journaled receipt that
/// is not an answer, replayed as a 503 (``restore(_:wallNow:)``): its action was applied.
///
/// Kept in memory; with `--state`, an applied action's answer is also journaled with the action
/// in the same commit (a receipt), so a key is never kept for an action that was lost, nor lost
/// for one that was kept, and a restarted service loads the receipts still inside the window
/// (``restore(_:wallNow:)``). A 400 or 422 applied nothing, so it is not journaled: a retry
/// after a restart is checked again.
///
/// The answers kept in memory add up to at most a number of bytes (`--max-idempotency-bytes`),
/// and each token's to its share of them, as of the keys: an answer carries the instance's
/// state, and 100,000 keys of answers of a few MB each took hundreds of GB. With a journal an
/// answer past them is kept only in the journal, its fingerprint in memory, and read back for a
/// retry (``Begin/replayFromJournal``); without one, a new key is refused (429) while the
/// answers kept take the bytes (an answer whose action was applied is always kept: past the
/// bytes by the answers of the requests under way at most).
final class IdempotencyCache: Sendable {
    /// The longest key, in bytes.
    static let maxKeyLength = 128

    struct Key: Hashable, Sendable {
        /// The token's ``AccessToken/identity``, or ``noToken``.
        var token: String
        var address: InstanceAddress
        var key: String
    }

    /// A 128-bit FNV-1a hash of a request's body (two 64-bit ones with different offsets):
    /// the same in every process, so that a journaled one can be compared after a restart.
    struct Fingerprint: Hashable, Sendable, CustomStringConvertible {
        var a: UInt64
        var b: UInt64

        init(_ bytes: some Sequence<UInt8>) {
            var first: UInt64 = 0xCBF2_9CE4_8422_2325
            var second: UInt64 = 0x6C62_272E_07BB_0142
            for byte in bytes {
                first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
                second = (second ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            }
            (a, b) = (first, second)
        }

        /// The fingerprint of a request whose body is `body`: of `action`, as an input line
        /// writes it, when the body asks for one (a client that serializes its retry again may
        /// order the fields or space them otherwise: the audit's retry was refused 422); of
        /// the body's bytes otherwise.
        init(of body: ByteBuffer, action: PluginAction?) {
            if let action {
                self.init(Array("action\u{0}\(action)".utf8))
            } else {
                self.init(body.readableBytesView)
            }
        }

        init?(_ text: String) {
            guard text.utf8.count == 33, let dash = text.firstIndex(of: "-"),
                  let a = UInt64(text[..<dash], radix: 16), let b = UInt64(text[text.index(after: dash)...], radix: 16) else { return nil }
            (self.a, self.b) = (a, b)
        }

        /// Its journaled form: two 16-digit hexadecimal numbers joined by a dash.
        var description: String { Self.hex(a) + "-" + Self.hex(b) }

        private static func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
    }

    /// The token of a service without tokens (a loopback listener).
    static let noToken = "0"

    /// The journal's key of a request: its token's identity and its `Idempotency-Key`.
    static func journalKey(_ key: Key) -> String { "\(key.token):\(key.key)" }

    /// Keeps the journal's receipts as answers (200; 503 for one that is not an answer,
    /// ``problem(ofAnswer:)``) to their keys, each until it expires;
    /// one whose key or fingerprint cannot be read is left out. At most the limit of keys. A key
    /// this cache already has is left as it is: a request with it may be under way here, with
    /// retries waiting for its answer, which is the receipt's.
    ///
    /// - Parameters:
    ///   - receipts: The journal's receipts (``PluginJournal/receipts(keptAfter:limit:answerBytes:)``).
    ///   - wallNow: The time on the wall clock, in milliseconds since 1970.
    func restore(_ receipts: [JournaledReceipt], wallNow: Int64) {
        let time = now()
        state.withLock { state in
            let ordered = state.order.count
            for receipt in receipts where state.entries.count < maxKeys && receipt.expires > wallNow {
                guard let address = InstanceRegistry.address(journaledAs: receipt.plugin), let colon = receipt.key.firstIndex(of: ":"),
                      let fingerprint = Fingerprint(receipt.fingerprint) else { continue }
                let key = Key(token: String(receipt.key[..<colon]), address: address, key: String(receipt.key[receipt.key.index(after: colon)...]))
                guard state.entries[key] == nil, state.perToken[key.token, default: 0] < maxKeysPerToken else { continue }
                let expires = time + .milliseconds(receipt.expires - wallNow)
                state.perToken[key.token, default: 0] += 1
                state.keptCount += 1
                // An answer left in the journal, or past the bytes, is read from it for a retry.
                let kept = Self.stored(fromReceipt: receipt).map { keep($0, of: key, &state) } ?? .inJournal
                state.entries[key] = .done(fingerprint, kept, expires: expires, kept: state.keptCount)
                state.order.append((key, expires))
            }
            // One receipt (a cluster's, read for each request with a key) goes in its place: the
            // whole order was sorted for each.
            if state.order.count == ordered + 1, let added = state.order.last {
                var low = state.head, high = ordered
                while low < high {
                    let middle = (low + high) / 2
                    if state.order[middle].1 <= added.1 { low = middle + 1 } else { high = middle }
                }
                state.order.insert(state.order.removeLast(), at: low)
            } else if state.order.count > ordered {
                state.order[state.head...].sort { $0.1 < $1.1 }
            }
        }
    }

    /// What `receipt` replays as: its answer (200), or a 503 for one that is not an answer
    /// (``problem(ofAnswer:)``); `nil` when the answer was left in the journal.
    static func stored(fromReceipt receipt: JournaledReceipt) -> Stored? {
        // One the journal holds that is not an answer (an edited row) is not replayed as one,
        // nor is the request applied again: a retry is told so.
        let problem: String?
        if receipt.answerBytes > JournaledReceipt.maxAnswerBytes {
            problem = "it is \(receipt.answerBytes) bytes, over the limit of \(JournaledReceipt.maxAnswerBytes)"
        } else if let answer = receipt.answer {
            problem = Self.problem(ofAnswer: answer)
        } else {
            return nil
        }
        guard let problem else { return Stored(status: 200, body: receipt.answer ?? "") }
        return Stored(status: 503, body: ServiceError.jsonLine("the answer kept for this Idempotency-Key cannot be replayed "
                                                               + "(\(problem)); the request is not applied again"))
    }

    /// Where the answer `stored` to a request with `key` is kept: in memory when it fits in the
    /// bytes and its token's share of them, or when there is no journal (or it is not a 200, not
    /// journaled); in the journal otherwise. Counts what memory keeps.
    private func keep(_ stored: Stored, of key: Key, _ state: inout State) -> Kept {
        let size = stored.body.utf8.count
        let tokenBytes = state.bytesPerToken[key.token, default: 0]
        if answersJournaled, stored.status == 200, size > maxBytes - state.keptBytes || size > maxBytesPerToken - tokenBytes {
            return .inJournal
        }
        state.keptBytes += size
        state.bytesPerToken[key.token] = tokenBytes + size
        return .answer(stored)
    }

    /// What is wrong with `answer`, an answer kept in the journal, or `nil`: it must be of at
    /// most ``JournaledReceipt/maxAnswerBytes`` and read as a JSON object does, `{` to `}`. An
    /// edited receipt (`garbage{`, `HTTP/1.1 200`) was replayed as a 200. Only its shape is
    /// checked: parsing it would refuse an answer whose state is nested as deep as a state may
    /// be (the transition adds a level), and would read 100 MiB for each retry.
    static func problem(ofAnswer answer: String) -> String? {
        let bytes = answer.utf8
        guard bytes.count <= JournaledReceipt.maxAnswerBytes else {
            return "it is \(bytes.count) bytes, over the limit of \(JournaledReceipt.maxAnswerBytes)"
        }
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        guard bytes.first(where: { !isSpace($0) }) == UInt8(ascii: "{"),
              bytes.reversed().first(where: { !isSpace($0) }) == UInt8(ascii: "}") else { return "it is not a JSON object" }
        return nil
    }

    /// Where the answers kept so far end: taken before a receipt is read from the journal, and
    /// given to ``settle(_:with:readAfter:wallNow:)`` with what was read.
    struct Mark: Sendable {
        fileprivate let keptCount: UInt64
    }

    /// The mark of the answers kept so far.
    func mark() -> Mark {
        state.withLock { Mark(keptCount: $0.keptCount) }
    }

    /// Makes what is kept for `key` the journal's receipt `receipt`, read after `mark` (in a
    /// cluster, where another host may have answered or deleted since): an answer kept before
    /// the mark is replaced by the receipt, or dropped when there is none. An answer kept since
    /// the mark is newer than what was read, and a request under way is not over: both are left
    /// alone. (An answer kept while the receipt was being read was dropped for the receipt's
    /// absence, and the retry applied its action a second time.)
    ///
    /// An answer kept before the mark that the receipt replaces keeps its place in the expiry
    /// order: removed and kept again, it took one more place in the order for every retry, for
    /// the whole window (review).
    func settle(_ key: Key, with receipt: JournaledReceipt?, readAfter mark: Mark, wallNow: Int64) {
        let replaced: Bool = state.withLock { state in
            guard case let .done(_, old, expires, kept)? = state.entries[key], kept <= mark.keptCount else { return false }
            guard let receipt, receipt.expires > wallNow, let fingerprint = Fingerprint(receipt.fingerprint) else {
                Self.remove(key, from: &state)
                return true
            }
            Self.release(old, of: key, &state)
            let answer = Self.stored(fromReceipt: receipt).map { keep($0, of: key, &state) } ?? .inJournal
            state.entries[key] = .done(fingerprint, answer, expires: expires, kept: kept)
            return true
        }
        if !replaced, let receipt { restore([receipt], wallNow: wallNow) }
    }

    /// How long a kept answer is kept.
    var keptFor: Duration { window }

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
        /// Answers with the receipt the journal keeps for the key (a 200), read once the
        /// journal's commits are done; when it has none (the instance was deleted meanwhile),
        /// ``IdempotencyCache/forgetAnswer(_:)`` and begin again.
        case replayFromJournal
    }

    /// Where an answer is kept.
    private enum Kept {
        case answer(Stored)
        /// Only in the journal, as the receipt of its action.
        case inJournal
    }

    private enum Entry {
        /// Under way; `forgotten` once its instance was deleted meanwhile: its answer is then
        /// not kept, and the requests waiting for it run anew.
        case pending(Fingerprint, [CheckedContinuation<Stored?, Never>], forgotten: Bool = false)
        /// `kept` numbers the answers kept, in order (``Mark``).
        case done(Fingerprint, Kept, expires: Duration, kept: UInt64)
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// Keys in the order they were kept, with when they expire, for eviction.
        var order: [(Key, Duration)] = []
        var head = 0
        /// How many answers were kept so far.
        var keptCount: UInt64 = 0
        /// How many keys each token has kept or in flight.
        var perToken: [String: Int] = [:]
        /// The bytes of the answers kept in memory, all together and by token.
        var keptBytes = 0
        var bytesPerToken: [String: Int] = [:]
    }

    /// Forgets `key`'s entry, and counts it out of its token's share.
    private static func remove(_ key: Key, from state: inout State) {
        guard let entry = state.entries.removeValue(forKey: key) else { return }
        let left = state.perToken[key.token, default: 1] - 1
        state.perToken[key.token] = left > 0 ? left : nil
        if case let .done(_, kept, _, _) = entry { release(kept, of: key, &state) }
    }

    /// Counts out the bytes `kept` took in memory, of `key`'s token.
    private static func release(_ kept: Kept, of key: Key, _ state: inout State) {
        guard case let .answer(stored) = kept else { return }
        let size = stored.body.utf8.count
        state.keptBytes -= size
        let tokenLeft = state.bytesPerToken[key.token, default: size] - size
        state.bytesPerToken[key.token] = tokenLeft > 0 ? tokenLeft : nil
    }

    /// How many places the expiry order holds (tests).
    var orderCount: Int { state.withLock { $0.order.count - $0.head } }

    private let state = Mutex(State())
    private let window: Duration
    private let maxKeys: Int
    private let maxKeysPerToken: Int
    private let maxBytes: Int
    private let maxBytesPerToken: Int
    private let answersJournaled: Bool
    private let now: @Sendable () -> Duration

    /// - Parameters:
    ///   - window: How long a response is kept.
    ///   - maxKeys: The most keys kept at a time; a new key past it is refused (429).
    ///   - maxKeysPerToken: The most of them one token may have; a new key past it is refused
    ///     (429), so that one client cannot take every key for the whole window.
    ///   - maxBytes: The most bytes of answers kept in memory; each token may keep as large a
    ///     share of them as of the keys.
    ///   - answersJournaled: Whether each 200 answer is journaled as its action's receipt:
    ///     then the answers past the bytes are kept only there, and read back for a retry;
    ///     otherwise a new key is refused (429) while the bytes are taken.
    ///   - now: The time, as a duration since any fixed point.
    init(window: Duration, maxKeys: Int, maxKeysPerToken: Int? = nil, maxBytes: Int = ServiceConfiguration().maxIdempotencyBytes,
         answersJournaled: Bool = false, now: @escaping @Sendable () -> Duration) {
        self.window = window
        self.maxKeys = maxKeys
        let keysPerToken = min(maxKeysPerToken ?? maxKeys, maxKeys)
        self.maxKeysPerToken = keysPerToken
        self.maxBytes = maxBytes
        maxBytesPerToken = Self.share(of: maxBytes, keys: keysPerToken, of: maxKeys)
        self.answersJournaled = answersJournaled
        self.now = now
    }

    /// A token's share of `bytes`: as large as its share of the keys, `keys` of `allKeys`.
    static func share(of bytes: Int, keys: Int, of allKeys: Int) -> Int {
        guard keys < allKeys, allKeys > 0 else { return bytes }
        let (product, overflow) = bytes.multipliedReportingOverflow(by: keys)
        return max(1, overflow ? bytes / allKeys * keys : product / allKeys)
    }

    /// Checks a key's text: 1 to ``maxKeyLength`` bytes of visible ASCII.
    static func check(_ text: some StringProtocol) throws(ServiceError) {
        guard (1...maxKeyLength).contains(text.utf8.count), text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw .badRequest("an Idempotency-Key is 1 to \(maxKeyLength) bytes of visible ASCII characters")
        }
    }

    /// Starts a request with `key`: run it, replay the kept response, or refuse it (422 for
    /// another request under the same key, 429 past the limit of keys). A kept fingerprint
    /// equal to `formerFingerprint` matches too: the fingerprint of the request's body bytes,
    /// which receipts journaled by an earlier version hold (a retry across an upgrade was 422).
    func begin(_ key: Key, fingerprint: Fingerprint, formerFingerprint: Fingerprint? = nil) async throws(ServiceError) -> Begin {
        enum Step {
            case proceed, replay(Stored), replayFromJournal, wait, mismatch, full(nextExpiry: Duration?), tokenFull(nextExpiry: Duration?)
            case bytesFull(used: Int, nextExpiry: Duration?), tokenBytesFull(used: Int, nextExpiry: Duration?)
        }
        let time = now()
        let step: Step = state.withLock { state in
            evictExpired(&state, at: time)
            switch state.entries[key] {
            case let .done(kept, .answer(stored), _, _)?:
                return kept == fingerprint || kept == formerFingerprint ? .replay(stored) : .mismatch
            case let .done(kept, .inJournal, _, _)?:
                return kept == fingerprint || kept == formerFingerprint ? .replayFromJournal : .mismatch
            case let .pending(kept, _, _)?:
                return kept == fingerprint || kept == formerFingerprint ? .wait : .mismatch
            case nil:
                guard state.entries.count < maxKeys else {
                    return .full(nextExpiry: state.head < state.order.count ? state.order[state.head].1 : nil)
                }
                guard state.perToken[key.token, default: 0] < maxKeysPerToken else {
                    return .tokenFull(nextExpiry: Self.nextExpiry(of: key.token, in: state))
                }
                if !answersJournaled {
                    guard state.keptBytes < maxBytes else {
                        return .bytesFull(used: state.keptBytes, nextExpiry: state.head < state.order.count ? state.order[state.head].1 : nil)
                    }
                    let tokenBytes = state.bytesPerToken[key.token, default: 0]
                    guard tokenBytes < maxBytesPerToken else {
                        return .tokenBytesFull(used: tokenBytes, nextExpiry: Self.nextExpiry(of: key.token, in: state))
                    }
                }
                state.entries[key] = .pending(fingerprint, [])
                state.perToken[key.token, default: 0] += 1
                return .proceed
            }
        }
        switch step {
        case .proceed: return .proceed
        case let .replay(stored): return .replay(stored)
        case .replayFromJournal: return .replayFromJournal
        case .mismatch: throw .unprocessable("the Idempotency-Key was used for another request to this instance")
        case let .full(nextExpiry):
            // The next key kept expires then: a key in flight, which has no expiry yet, may come first.
            throw .overLimit("the service already keeps \(maxKeys) idempotency keys, its limit (--max-idempotency-keys)",
                             retryAfter: nextExpiry.map { ServiceError.wholeSecondsRoundedUp($0 - time) })
        case let .tokenFull(nextExpiry):
            throw .overLimit("this token already has \(maxKeysPerToken) idempotency keys kept, its share (--max-idempotency-keys-per-token)",
                             retryAfter: nextExpiry.map { ServiceError.wholeSecondsRoundedUp($0 - time) })
        case let .bytesFull(used, nextExpiry):
            throw .overLimit("the answers kept for idempotency keys take \(used) bytes, at least their limit of \(maxBytes) "
                             + "(--max-idempotency-bytes)", retryAfter: nextExpiry.map { ServiceError.wholeSecondsRoundedUp($0 - time) })
        case let .tokenBytesFull(used, nextExpiry):
            throw .overLimit("the answers kept for this token's idempotency keys take \(used) bytes, at least its share of "
                             + "\(maxBytesPerToken) (--max-idempotency-bytes)", retryAfter: nextExpiry.map { ServiceError.wholeSecondsRoundedUp($0 - time) })
        case .wait: break
        }
        let stored: Stored? = await withCheckedContinuation { continuation in
            let immediate: Stored?? = state.withLock { state in
                switch state.entries[key] {
                case let .pending(kept, waiters, forgotten)?:
                    state.entries[key] = .pending(kept, waiters + [continuation], forgotten: forgotten)
                    return .none
                case let .done(_, .answer(stored), _, _)?:
                    return .some(stored)
                case .done(_, .inJournal, _, _)?:
                    // Begun again, it is read from the journal.
                    return .some(nil)
                case nil:
                    return .some(nil)
                }
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
        // The first request's answer was not kept (a 5xx, a 429): this one runs again.
        guard let stored else { return try await begin(key, fingerprint: fingerprint, formerFingerprint: formerFingerprint) }
        return .replay(stored)
    }

    /// Ends a request begun with `.proceed`: keeps its response when `status` says what became
    /// of the action, or forgets the key.
    func finish(_ key: Key, status: Int, body: String) {
        // A 400 is not kept: the request was not read as an action, so nothing was decided, and
        // the client may send it again mended under the same key (it was 422 for good).
        let keep = (200..<300).contains(status) || status == 422
        let stored = Stored(status: status, body: body)
        let expires = now() + window
        let (waiters, kept): ([CheckedContinuation<Stored?, Never>], Bool) = state.withLock { state in
            guard case let .pending(fingerprint, waiters, forgotten)? = state.entries[key] else { return ([], false) }
            if keep && !forgotten {
                state.keptCount += 1
                state.entries[key] = .done(fingerprint, self.keep(stored, of: key, &state), expires: expires, kept: state.keptCount)
                state.order.append((key, expires))
            } else {
                Self.remove(key, from: &state)
            }
            return (waiters, keep && !forgotten)
        }
        for waiter in waiters { waiter.resume(returning: kept ? stored : nil) }
    }

    /// Forgets the answers kept for requests to the instance at `address`, deleted: a retry
    /// runs anew, on the instance it makes, as after a restart (its receipts are deleted with
    /// it). A request still under way answers its own client, but its answer is not kept.
    func forget(_ address: InstanceAddress) {
        state.withLock { state in
            for (key, entry) in state.entries where key.address == address {
                switch entry {
                case .done: Self.remove(key, from: &state)
                case let .pending(fingerprint, waiters, _): state.entries[key] = .pending(fingerprint, waiters, forgotten: true)
                }
            }
        }
    }

    /// Forgets the answer kept for `key` that the journal turned out not to hold
    /// (``Begin/replayFromJournal``): its instance was deleted since. A request under way
    /// with the key is left alone.
    func forgetAnswer(_ key: Key) {
        state.withLock { state in
            if case .done? = state.entries[key] { Self.remove(key, from: &state) }
        }
    }

    /// How many keys are kept or in flight.
    var count: Int { state.withLock { $0.entries.count } }

    /// The bytes of the answers kept in memory.
    var keptBytes: Int { state.withLock { $0.keptBytes } }

    /// How many requests wait for the answer of the one under way with `key` (tests).
    func waiting(for key: Key) -> Int {
        state.withLock { state in
            if case let .pending(_, waiters, _)? = state.entries[key] { waiters.count } else { 0 }
        }
    }

    /// How many places of the expiry order a refusal looks through for its token's next expiry.
    static let maxExpiryScan = 4096

    /// When the next of `token`'s kept keys expires, as far as the first
    /// ``maxExpiryScan`` places of the expiry order say (a per-token 429's `Retry-After`; it had
    /// none, though the service-wide one had): `nil` past them, or when none of its keys has
    /// an expiry yet (all in flight).
    private static func nextExpiry(of token: String, in state: State) -> Duration? {
        for (key, expires) in state.order[state.head...].prefix(maxExpiryScan) where key.token == token {
            if case let .done(_, _, kept, _)? = state.entries[key], kept == expires { return expires }
        }
        return nil
    }

    private func evictExpired(_ state: inout State, at time: Duration) {
        while state.head < state.order.count, state.order[state.head].1 <= time {
            let key = state.order[state.head].0
            if case let .done(_, _, expires, _)? = state.entries[key], expires <= time { Self.remove(key, from: &state) }
            state.head += 1
        }
        if state.head >= 1024, state.head * 2 >= state.order.count {
            state.order.removeFirst(state.head)
            state.head = 0
        }
    }
}
