/// How many of a named queue's delayed and repeating actions run at once, and what happens to
/// the rest: the contract's `ACTOMATON_QUEUE_*` policies, for the host and the kit alike.
public enum PluginQueuePolicy: Sendable, Hashable {
    /// Runs the `maxCount` newest, cancelling the oldest running ones (`ACTOMATON_QUEUE_RUN_NEWEST`).
    case runNewest(maxCount: Int)
    /// Runs the `maxCount` oldest; new ones wait (`discardNew: false`,
    /// `ACTOMATON_QUEUE_RUN_OLDEST_SUSPEND_NEW`) or are dropped (`ACTOMATON_QUEUE_RUN_OLDEST_DISCARD_NEW`).
    case runOldest(maxCount: Int, discardNew: Bool)

    /// How many effects of the queue run at once.
    public var maxCount: Int {
        switch self {
        case let .runNewest(maxCount), let .runOldest(maxCount, _): maxCount
        }
    }
}
