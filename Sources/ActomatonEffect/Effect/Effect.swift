import ActomatonCore

/// What a reducer asks the world to do next: actions to feed back, async work that may send
/// actions, and cancellations.
///
/// There are five ways to make one, and any number combine with `+`:
///
/// | Form | Runs |
/// |---|---|
/// | ``nextAction(_:)`` | no work: the action is fed back at once, within the same `send` |
/// | ``fireAndForget(id:queue:run:)-(_,_,()->Void)`` | one `async` job, no next action |
/// | ``init(id:queue:run:)-(_,_,()->Action?)`` | one `async` job whose result, if not `nil`, is the next action |
/// | ``init(id:queue:sequence:)-(_,_,()->S)`` | an `AsyncSequence` whose every element is a next action |
/// | ``cancel(id:)`` / ``cancel(ids:)`` | cancels running effects by ID |
///
/// Work that sleeps should sleep on `context.clock` (the closures that take an
/// ``EffectContext``), so that tests control time.
///
/// ## Cancellation is cooperative: every effect runs exactly once
///
/// Every piece of work a reducer returns runs its body exactly once, as Swift's tasks do. One
/// cancelled or discarded before its body started — by ``cancel(id:)``, by an effect started
/// with the same ID, by a ``EffectQueuePolicy/runNewest(maxCount:)`` queue making room, while
/// suspended by `.suspendNew` or waiting out a queue delay, or dropped by `.discardNew` — still
/// runs it, in a task that is already cancelled: `Task.isCancelled` is `true` and its sleeps
/// throw `CancellationError` at once. A cancelled effect never delivers a next action, and the
/// task `send` returned for it throws `CancellationError`, whatever the timing. It holds no
/// queue slot while its cancelled body runs. Cancelled bodies run in their own tasks, in no
/// set order among themselves.
public struct Effect<Action: Sendable>: Sendable {
    @usableFromInline
    let parts: [Part]

    @usableFromInline
    init(parts: [Part]) {
        self.parts = parts
    }

    @usableFromInline
    enum Part: Sendable {
        case nextAction(Action)
        case work(Work)
        case cancel([AnyEffectID])
        case updateQueue(AnyEffectQueue)
    }

    /// One piece of async work: what it is called, which lane it runs in, and the job itself.
    @usableFromInline
    struct Work: Sendable {
        /// Its ID and queue; `nil` when it has neither, as most effects.
        let tags: EffectTags?
        var id: AnyEffectID? { tags?.id }
        var queue: AnyEffectQueue? { tags?.queue }
        /// Whether its one next action is its last act: once it is delivered, the effect is
        /// over, so an effect it starts with the same ID does not cancel it (a timer that
        /// re-arms itself).
        let endsWithItsAction: Bool
        /// Runs the job; `send` delivers each next action.
        let run: @Sendable (_ context: EffectContext, _ send: @escaping @Sendable (Action) async -> Void) async throws -> Void

        init(tags: EffectTags?, endsWithItsAction: Bool = false,
             run: @escaping @Sendable (EffectContext, @escaping @Sendable (Action) async -> Void) async throws -> Void) {
            self.tags = tags
            self.endsWithItsAction = endsWithItsAction
            self.run = run
        }

        init(id: (any EffectID)?, queue: (any EffectQueue)?, endsWithItsAction: Bool = false,
             run: @escaping @Sendable (EffectContext, @escaping @Sendable (Action) async -> Void) async throws -> Void) {
            self.init(tags: EffectTags(id: id.map { AnyEffectID($0) }, queue: queue.map { AnyEffectQueue($0) }),
                      endsWithItsAction: endsWithItsAction, run: run)
        }
    }
}

/// An effect's ID and queue, in one box: most effects have neither, and then a `nil` pointer
/// keeps both `Effect.Work` and the runtime's record of a running effect small (the two
/// existentials take 80 bytes inline).
@usableFromInline
final class EffectTags: Sendable {
    let id: AnyEffectID?
    let queue: AnyEffectQueue?

    /// The box for `id` and `queue`; `nil` when both are `nil`.
    init?(id: AnyEffectID?, queue: AnyEffectQueue?) {
        guard id != nil || queue != nil else { return nil }
        self.id = id
        self.queue = queue
    }
}

extension Effect {
    /// No effect.
    @inlinable
    public static var empty: Effect { Effect(parts: []) }

    /// Feeds `action` back at once, within the same `send`, before any async work runs.
    public static func nextAction(_ action: Action) -> Effect {
        Effect(parts: [.nextAction(action)])
    }

    /// Runs `run` once; its result, if not `nil`, is sent as the next action.
    ///
    /// - Parameters:
    ///   - id: Cancels effects running with an equal ID when this one starts, and lets
    ///     ``cancel(id:)`` cancel this one.
    ///   - queue: The lane this effect runs in; see ``EffectQueue``.
    ///   - run: The work; it returns the next action, or `nil` for none.
    public init(
        id: (any EffectID)? = nil,
        queue: (any EffectQueue)? = nil,
        run: @escaping @Sendable () async throws -> Action?
    ) {
        // Not through the context-taking form: one closure less in the task's frames.
        self.init(parts: [.work(Work(id: id, queue: queue, endsWithItsAction: true) { _, send in
            if let action = try await run() { await send(action) }
        })])
    }

    /// Runs `run` once with the machine's ``EffectContext``; its result, if not `nil`, is sent
    /// as the next action.
    public init(
        id: (any EffectID)? = nil,
        queue: (any EffectQueue)? = nil,
        run: @escaping @Sendable (EffectContext) async throws -> Action?
    ) {
        self.init(parts: [.work(Work(id: id, queue: queue, endsWithItsAction: true) { context, send in
            if let action = try await run(context) { await send(action) }
        })])
    }

    /// Iterates the sequence `sequence` makes; every element is sent as a next action, in order.
    public init<S: AsyncSequence & Sendable>(
        id: (any EffectID)? = nil,
        queue: (any EffectQueue)? = nil,
        sequence: @escaping @Sendable () async throws -> S
    ) where S.Element == Action {
        self.init(id: id, queue: queue, sequence: { _ in try await sequence() })
    }

    /// Iterates the sequence `sequence` makes with the machine's ``EffectContext``; every
    /// element is sent as a next action, in order.
    public init<S: AsyncSequence & Sendable>(
        id: (any EffectID)? = nil,
        queue: (any EffectQueue)? = nil,
        sequence: @escaping @Sendable (EffectContext) async throws -> S
    ) where S.Element == Action {
        self.init(parts: [.work(Work(id: id, queue: queue) { context, send in
            for try await action in try await sequence(context) {
                try Task.checkCancellation()
                await send(action)
            }
        })])
    }

    /// Runs `run` once, for its side effects only.
    public static func fireAndForget(
        id: (any EffectID)? = nil,
        queue: (any EffectQueue)? = nil,
        run: @escaping @Sendable () async throws -> Void
    ) -> Effect {
        fireAndForget(id: id, queue: queue) { _ in try await run() }
    }

    /// Runs `run` once with the machine's ``EffectContext``, for its side effects only.
    public static func fireAndForget(
        id: (any EffectID)? = nil,
        queue: (any EffectQueue)? = nil,
        run: @escaping @Sendable (EffectContext) async throws -> Void
    ) -> Effect {
        Effect(parts: [.work(Work(id: id, queue: queue) { context, _ in try await run(context) })])
    }

    /// Cancels every effect running (or waiting in a queue) with an ID equal to `id`.
    public static func cancel(id: some EffectID) -> Effect {
        Effect(parts: [.cancel([AnyEffectID(id)])])
    }

    /// Cancels every effect running (or waiting in a queue) with an ID equal to one of `ids`.
    public static func cancel(ids: [any EffectID]) -> Effect {
        Effect(parts: [.cancel(ids.map { AnyEffectID($0) })])
    }

    /// Changes the policy and delay of the lane `queue` names (an equal queue value) to
    /// `queue`'s, without starting work: a raised `maxCount` starts waiting effects at once; a
    /// lowered one lets running effects finish and starts nothing new until the lane is below it.
    public static func updateQueue(_ queue: some EffectQueue) -> Effect {
        Effect(parts: [.updateQueue(AnyEffectQueue(queue))])
    }
}

extension Effect: ReducerOutput {

    /// All of `effects`, in order.
    public static func combine(_ effects: Effect...) -> Effect {
        combine(effects)
    }

    /// All of `effects`, in order.
    public static func combine(_ effects: [Effect]) -> Effect {
        Effect(parts: effects.flatMap(\.parts))
    }

    /// `lhs`'s parts, then `rhs`'s.
    @inlinable
    public static func + (lhs: Effect, rhs: Effect) -> Effect {
        if lhs.parts.isEmpty { return rhs }
        if rhs.parts.isEmpty { return lhs }
        return Effect(parts: lhs.parts + rhs.parts)
    }

    /// Whether the effect does nothing.
    public var isEmpty: Bool { parts.isEmpty }
}

extension Effect {
    /// The same effect, with every action it produces transformed; how a child reducer's
    /// effects become its parent's.
    public func map<NewAction: Sendable>(
        _ transform: @escaping @Sendable (Action) -> NewAction
    ) -> Effect<NewAction> {
        Effect<NewAction>(parts: parts.map { part in
            switch part {
            case let .nextAction(action):
                .nextAction(transform(action))
            case let .work(work):
                .work(Effect<NewAction>.Work(tags: work.tags, endsWithItsAction: work.endsWithItsAction) { context, send in
                    try await work.run(context) { action in await send(transform(action)) }
                })
            case let .cancel(ids):
                .cancel(ids)
            case let .updateQueue(queue):
                .updateQueue(queue)
            }
        })
    }
}
