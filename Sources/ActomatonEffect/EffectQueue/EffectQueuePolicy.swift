/// How an ``EffectQueue`` treats a new effect when its running effects reach `maxCount`.
public enum EffectQueuePolicy: Hashable, Sendable {
    /// Runs the `maxCount` newest effects, cancelling the oldest running ones to make room.
    ///
    /// A cancelled effect that had not started yet still runs its work once, already
    /// cancelled; see `Effect`'s cancellation rules. A lane follows the latest queue value sent
    /// for it, so `maxCount` can change at run time (`Effect.updateQueue(_:)`).
    case runNewest(maxCount: Int)

    /// Runs the `maxCount` oldest effects; a new one is suspended or discarded while they run.
    case runOldest(maxCount: Int, OverflowPolicy)

    /// What happens to a new effect while `.runOldest`'s `maxCount` effects run.
    public enum OverflowPolicy: Hashable, Sendable {
        /// The new effect waits, in order, until one of the running effects completes.
        case suspendNew
        /// The new effect is dropped: its work runs once, in a task already cancelled (so its
        /// cleanup runs), delivers nothing and holds no slot.
        case discardNew
    }

    /// How many effects of the queue may run at once.
    public var maxCount: Int {
        switch self {
        case let .runNewest(maxCount), let .runOldest(maxCount, _): maxCount
        }
    }
}
