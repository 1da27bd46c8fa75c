/// A named lane for effects, with a policy for how many run at once and a delay between starts.
///
/// Queues are compared by value: every effect started with an equal queue shares its lane.
///
/// ```swift
/// struct DelayedEffectQueue: EffectQueue {
///     var effectQueuePolicy: EffectQueuePolicy { .runOldest(maxCount: 3, .suspendNew) }
///     var effectQueueDelay: EffectQueueDelay { .random(0.1 ... 0.3) }
/// }
/// ```
public protocol EffectQueue: Hashable, Sendable {
    /// How many effects run at once, and what happens to the rest.
    var effectQueuePolicy: EffectQueuePolicy { get }
    /// The minimum time between two starts; none by default.
    var effectQueueDelay: EffectQueueDelay { get }
}

extension EffectQueue {
    /// No delay between starts, unless a queue says otherwise.
    public var effectQueueDelay: EffectQueueDelay { .none }
}

/// An ``EffectQueue`` whose policy is `.runNewest(maxCount: 1)`: a new effect cancels the
/// running one.
public protocol Newest1EffectQueue: EffectQueue {}

extension Newest1EffectQueue {
    /// One effect at a time; a new one cancels the one running.
    public var effectQueuePolicy: EffectQueuePolicy { .runNewest(maxCount: 1) }
}

/// An ``EffectQueue`` whose policy is `.runOldest(maxCount: 1, .discardNew)`: while one effect
/// runs, new ones are dropped.
public protocol Oldest1DiscardNewEffectQueue: EffectQueue {}

extension Oldest1DiscardNewEffectQueue {
    /// One effect at a time; a new one is dropped while one runs (its work runs once, cancelled).
    public var effectQueuePolicy: EffectQueuePolicy { .runOldest(maxCount: 1, .discardNew) }
}

/// An ``EffectQueue`` whose policy is `.runOldest(maxCount: 1, .suspendNew)`: effects run one
/// at a time, in order.
public protocol Oldest1SuspendNewEffectQueue: EffectQueue {}

extension Oldest1SuspendNewEffectQueue {
    /// One effect at a time; new ones wait their turn, in order.
    public var effectQueuePolicy: EffectQueuePolicy { .runOldest(maxCount: 1, .suspendNew) }
}

/// A type-erased ``EffectQueue``: equal when the queues have the same type and are equal.
public struct AnyEffectQueue: Hashable, Sendable {
    /// The wrapped queue.
    public let base: any EffectQueue

    /// Wraps `queue`.
    public init(_ queue: some EffectQueue) {
        base = queue
    }

    /// Whether both wrap queues of the same type that are equal.
    public static func == (lhs: AnyEffectQueue, rhs: AnyEffectQueue) -> Bool {
        lhs.base.isEqual(to: rhs.base)
    }

    /// Hashes the wrapped queue and its type.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(type(of: base)))
        base.hash(into: &hasher)
    }
}

extension EffectQueue {
    fileprivate func isEqual(to other: any EffectQueue) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}
