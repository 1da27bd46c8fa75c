import Synchronization

/// How many effects (delayed and repeating actions) one machine has running or waiting, and
/// the bytes their actions carry; and how many, and how many bytes, it may have
/// (``PluginLimits/defaultMaxEffects``, ``PluginLimits/maxPendingEffectBytes``).
///
/// Each effect holds a `Token` that gives its place and its bytes back when the effect is
/// released — completed, cancelled, or dropped by its queue before it started — so neither
/// count can drift, whatever path the effect takes.
///
/// A machine's budget may count against a ``total`` that many machines share (a service's
/// `--max-effects-total`): an effect then takes a place in both, and an action whose effects
/// the total has no room for fails with
/// ``PluginCallError/Reason/effectTotalReached(action:limit:)``. The places in the total are
/// taken when the action asks for its effects, not checked then and taken once they start:
/// machines running at once on other threads cannot all pass the check and overshoot it.
///
/// A replay (a journal's, or a rebuild's) is not checked: its effects are dropped, and the
/// action was admitted when it was first applied. Refused, an acknowledged action would not be
/// replayed, and its state change would be lost.
public final class EffectBudget: Sendable {
    /// The most effects the machine may have at once.
    public let limit: Int
    /// The most bytes the machine's effects may carry at once (their actions' names and
    /// strings, effect IDs and queue names, as ``PluginLimits/maxRequestBytesPerAction``
    /// counts them).
    public let byteLimit: Int
    /// The budget this one's effects count against too, shared with other machines; `nil` for none.
    public let total: EffectBudget?
    /// What paces the actions its effects send (its ``total``'s when it has one); `nil` for none.
    public let pace: EffectActionPace?
    private let current = Atomic<Int>(0)
    private let currentBytes = Atomic<Int>(0)
    /// The places (and bytes) this machine took in ``total`` for the effects of the action it
    /// runs, not yet held by their tokens: each token takes one, and ``settle()`` gives the
    /// rest back once the action's effects are made.
    private let prepaid = Mutex<(count: Int, bytes: Int)>((0, 0))
    /// How many replays run: while one does, nothing is checked.
    private let replays = Atomic<Int>(0)
    /// The tasks waiting for no token to be held (``waitUntilEmpty()``).
    private let emptyWaiters = ConditionWaiters()

    /// Creates a budget of `limit` effects carrying at most `byteLimit` bytes, counted against
    /// `total` too when one is given, their actions paced by `pace` (or by the total's).
    public init(limit: Int, byteLimit: Int = PluginLimits.maxPendingEffectBytes, total: EffectBudget? = nil, pace: EffectActionPace? = nil) {
        self.limit = limit
        self.byteLimit = byteLimit
        self.total = total
        self.pace = pace ?? total?.pace
    }

    /// The defaults of a total shared by the machines of a service (`--max-effects-total`):
    /// 1,000,000 effects (a pending delayed action took about 5 KB of the host's memory,
    /// measured), carrying at most 1 GiB.
    public static let defaultTotalLimit = 1_000_000
    /// See ``defaultTotalLimit``.
    public static let defaultTotalByteLimit = 1 << 30

    /// A budget without limits, for a plugin state whose machine is elsewhere (a worker's, a
    /// sandbox's own): the machine's budget is checked where its effects run.
    static func unlimited() -> EffectBudget {
        EffectBudget(limit: .max, byteLimit: .max)
    }

    /// How many effects hold a token now.
    public var count: Int { current.load(ordering: .relaxed) }

    /// How many bytes the effects holding a token carry now.
    public var bytes: Int { currentBytes.load(ordering: .relaxed) }

    /// Returns once no effect holds a token: every effect taken was released (its task ended,
    /// or it was dropped). Another may take one before the caller runs again. Returns at once
    /// when the waiting task is cancelled.
    public func waitUntilEmpty() async {
        // A release counts down, then wakes: a waiter registers, then checks the count.
        await emptyWaiters.wait { current.load(ordering: .relaxed) == 0 }
    }

    /// Why effects adding `count` more and `bytes` more cannot be taken now, or `nil` when
    /// they can.
    ///
    /// With a ``total``, the places and bytes past those taken already for this action are
    /// taken in the total now (the caller passes the action's counts so far): the effects'
    /// tokens take them over, and ``settle()`` gives back what no effect took.
    func refusal(adding count: Int, bytes: Int) -> InvalidRequest? {
        if replays.load(ordering: .relaxed) > 0 { return nil }
        if self.count > limit - count { return .effectLimitReached(limit) }
        let sum = self.bytes + bytes
        if sum > byteLimit {
            return .message("the machine's delayed and repeating actions may carry at most \(byteLimit) bytes of names and strings "
                            + "at once, and these would take them to \(sum)")
        }
        if let total {
            return prepaid.withLock { prepaid in
                let (moreCount, moreBytes) = (max(count - prepaid.count, 0), max(bytes - prepaid.bytes, 0))
                guard total.current.take(moreCount, upTo: total.limit) else { return .effectTotalReached(total.limit) }
                guard total.currentBytes.take(moreBytes, upTo: total.byteLimit) else {
                    total.current.subtract(moreCount, ordering: .relaxed)
                    let sumOfAll = total.bytes + moreBytes
                    return .message("the delayed and repeating actions of all machines may carry at most \(total.byteLimit) bytes of names "
                                    + "and strings at once (--max-effect-bytes-total), and these would take them to \(sumOfAll)")
                }
                prepaid.count += moreCount
                prepaid.bytes += moreBytes
                return nil
            }
        }
        return nil
    }

    /// Gives the total back the places and bytes taken for an action's effects that no effect
    /// took (the action failed, or asked for fewer in the end); called once its effects are made.
    func settle() {
        guard let total else { return }
        let (count, bytes) = prepaid.withLock { prepaid in
            defer { prepaid = (0, 0) }
            return prepaid
        }
        total.currentBytes.subtract(bytes, ordering: .relaxed)
        if count > 0, total.current.subtract(count, ordering: .relaxed).newValue == 0 { total.emptyWaiters.wakeAll() }
    }

    /// Marks a replay beginning: until ``endReplay()``, an action applied again is not checked,
    /// nor are its effects counted (they are dropped).
    func beginReplay() { replays.add(1, ordering: .relaxed) }

    /// Marks a replay ending.
    func endReplay() { replays.subtract(1, ordering: .relaxed) }

    /// Takes a place for one effect carrying `bytes`; the place and the bytes are given back
    /// when the token is released.
    ///
    /// Its place in the ``total`` is one taken for its action (``refusal(adding:bytes:)``),
    /// or a new one, taken whether or not it fits (a timer the journal arms again).
    func token(bytes: Int) -> Token {
        current.add(1, ordering: .relaxed)
        currentBytes.add(bytes, ordering: .relaxed)
        guard let total else { return Token(budget: self, bytes: bytes, inTotal: nil) }
        let (paidCount, paidBytes) = prepaid.withLock { prepaid in
            let taken = (min(prepaid.count, 1), min(prepaid.bytes, bytes))
            prepaid.count -= taken.0
            prepaid.bytes -= taken.1
            return taken
        }
        total.current.add(1 - paidCount, ordering: .relaxed)
        total.currentBytes.add(bytes - paidBytes, ordering: .relaxed)
        return Token(budget: self, bytes: bytes, inTotal: Token(budget: total, bytes: bytes, inTotal: nil))
    }

    /// One effect's place in the budget (and in its total's, held with it).
    final class Token: Sendable {
        private let budget: EffectBudget
        private let bytes: Int
        private let inTotal: Token?

        fileprivate init(budget: EffectBudget, bytes: Int, inTotal: Token?) {
            self.budget = budget
            self.bytes = bytes
            self.inTotal = inTotal
        }

        deinit {
            budget.currentBytes.subtract(bytes, ordering: .relaxed)
            if budget.current.subtract(1, ordering: .relaxed).newValue == 0 { budget.emptyWaiters.wakeAll() }
        }
    }
}
