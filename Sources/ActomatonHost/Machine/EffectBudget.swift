import Synchronization

/// How many effects (delayed and repeating actions) one machine has running or waiting, and
/// the bytes their actions carry; and how many, and how many bytes, it may have
/// (``PluginLimits/defaultMaxEffects``, ``PluginLimits/maxPendingEffectBytes``).
///
/// Each effect holds a `Token` that gives its place and its bytes back when the effect is
/// released — completed, cancelled, or dropped by its queue before it started — so neither
/// count can drift, whatever path the effect takes.
public final class EffectBudget: Sendable {
    /// The most effects the machine may have at once.
    public let limit: Int
    /// The most bytes the machine's effects may carry at once (their actions' names and
    /// strings, effect IDs and queue names, as ``PluginLimits/maxRequestBytesPerAction``
    /// counts them).
    public let byteLimit: Int
    private let current = Atomic<Int>(0)
    private let currentBytes = Atomic<Int>(0)
    /// The tasks waiting for no token to be held (``waitUntilEmpty()``).
    private let emptyWaiters = ConditionWaiters()

    /// Creates a budget of `limit` effects carrying at most `byteLimit` bytes.
    public init(limit: Int, byteLimit: Int = PluginLimits.maxPendingEffectBytes) {
        self.limit = limit
        self.byteLimit = byteLimit
    }

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
    func refusal(adding count: Int, bytes: Int) -> InvalidRequest? {
        if self.count > limit - count { return .effectLimitReached(limit) }
        let total = self.bytes + bytes
        if total > byteLimit {
            return .message("the machine's delayed and repeating actions may carry at most \(byteLimit) bytes of names and strings "
                            + "at once, and these would take them to \(total)")
        }
        return nil
    }

    /// Takes a place for one effect carrying `bytes`; the place and the bytes are given back
    /// when the token is released.
    func token(bytes: Int) -> Token {
        current.add(1, ordering: .relaxed)
        currentBytes.add(bytes, ordering: .relaxed)
        return Token(budget: self, bytes: bytes)
    }

    /// One effect's place in the budget.
    final class Token: Sendable {
        private let budget: EffectBudget
        private let bytes: Int

        fileprivate init(budget: EffectBudget, bytes: Int) {
            self.budget = budget
            self.bytes = bytes
        }

        deinit {
            budget.currentBytes.subtract(bytes, ordering: .relaxed)
            if budget.current.subtract(1, ordering: .relaxed).newValue == 0 { budget.emptyWaiters.wakeAll() }
        }
    }
}
