import ActomatonPluginABI

/// How many of a named queue's delayed and repeating actions run at once, and what happens to
/// the rest: the contract's `ACTOMATON_QUEUE_*` policies, for the host and the kit alike.
public enum PluginQueuePolicy: Sendable, Hashable {
    /// Runs the `maxCount` newest, cancelling the oldest running ones (`ACTOMATON_QUEUE_RUN_NEWEST`).
    case runNewest(maxCount: Int)
    /// Runs the `maxCount` oldest; new ones wait (`discardNew: false`,
    /// `ACTOMATON_QUEUE_RUN_OLDEST_SUSPEND_NEW`) or are dropped (`ACTOMATON_QUEUE_RUN_OLDEST_DISCARD_NEW`).
    case runOldest(maxCount: Int, discardNew: Bool)

    /// The policy a C `policy` and `max_count` name, or `nil` for an unknown policy.
    public init?(abiPolicy policy: UInt32, maxCount: Int) {
        switch policy {
        case ACTOMATON_QUEUE_RUN_NEWEST: self = .runNewest(maxCount: maxCount)
        case ACTOMATON_QUEUE_RUN_OLDEST_SUSPEND_NEW: self = .runOldest(maxCount: maxCount, discardNew: false)
        case ACTOMATON_QUEUE_RUN_OLDEST_DISCARD_NEW: self = .runOldest(maxCount: maxCount, discardNew: true)
        default: return nil
        }
    }

    /// The C value of the policy (`ACTOMATON_QUEUE_*`).
    public var abiPolicy: UInt32 {
        switch self {
        case .runNewest: ACTOMATON_QUEUE_RUN_NEWEST
        case .runOldest(_, false): ACTOMATON_QUEUE_RUN_OLDEST_SUSPEND_NEW
        case .runOldest(_, true): ACTOMATON_QUEUE_RUN_OLDEST_DISCARD_NEW
        }
    }

    /// How many effects of the queue run at once.
    public var maxCount: Int {
        switch self {
        case let .runNewest(maxCount), let .runOldest(maxCount, _): maxCount
        }
    }
}
