import ActomatonPluginABI

extension PluginQueuePolicy {
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
}
