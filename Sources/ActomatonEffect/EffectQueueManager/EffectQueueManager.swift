import ActomatonCore

/// The effect manager of the async layer: runs each ``Effect`` as Swift Concurrency tasks,
/// with effect IDs, cancellation, queues, queue policies and delays.
///
/// Plug it into a `MealyMachine` whose output is `Effect<Action>` and connect it to the actor
/// that hosts the machine (``EffectQueueHost``); `Actomaton` does both. Within one `send`:
///
/// - ``Effect/nextAction(_:)`` actions are fed back at once, depth-first, like
///   `ActionEffectManager` (and with its loop limits);
/// - cancellations apply, and async work starts, in the order the effect lists them;
/// - `send` returns a task that awaits every effect started — `nil` when none was — and
///   cancelling that task cancels their work. It throws `CancellationError` if any of those
///   effects was cancelled, by that task or otherwise (an ID, a queue policy).
/// - With ``SendOptions/tracksFeedbacks``, that task also awaits the effects the actions of
///   those effects start, transitively. Tracking changes only what the task awaits: an effect
///   never waits for the effects its actions start, and an effect cancelled by its ID, a
///   replacement or a queue policy does not take them with it. Only cancelling the task
///   cancels them all.
///
/// Work that is cancelled never delivers a next action, even one already computed.
///
/// What fails where no caller can see it — a feedback loop cut off, an effect's work throwing
/// an error — goes to the manager's failure handler; see ``EffectFailure``.
public struct EffectQueueManager<Action: Sendable>: EffectManager, Sendable {
    /// Options for the next `send`, set by the host just before it.
    public struct SendOptions: Sendable {
        /// The priority of the tasks the effects run in.
        public var priority: TaskPriority?
        /// Whether the task `send` returns also awaits the effects of actions fed back by these
        /// effects, transitively; cancelling it then cancels all of them.
        ///
        /// It changes nothing else: a sequence sends its next action without waiting for the
        /// effects of the last one, and an effect cancelled by a rule (its ID, a replacement,
        /// a queue policy) leaves the effects its actions started running, so a repeating
        /// timer may replace itself from its own tick. The task throws `CancellationError` if
        /// one of the effects `send` started directly was cancelled.
        public var tracksFeedbacks: Bool
        /// Whether `send` returns a task for its effects. A host that never awaits it — as when
        /// it runs an effect's action (``EffectQueueHost``) — turns it off: `send` then returns
        /// `nil`, and no task is made to await several effects.
        public var returnsTask: Bool

        /// Creates options.
        public init(priority: TaskPriority? = nil, tracksFeedbacks: Bool = false, returnsTask: Bool = true) {
            self.priority = priority
            self.tracksFeedbacks = tracksFeedbacks
            self.returnsTask = returnsTask
        }
    }

    @usableFromInline
    let runtime: EffectRuntimeStorage<Action>
    @usableFromInline
    var feedback: ActionEffectManager<[Action]>
    @usableFromInline
    var startedTasks: [Task<Void, Error>] = []
    /// With `tracksFeedbacks`, the group this send's effects join: a new one, or the group of the
    /// tracked effect whose action this send runs (``EffectRuntimeStorage/deliveryGroup``).
    @usableFromInline
    var feedbackGroup: FeedbackGroup?
    /// Whether this send made ``feedbackGroup``, and its task waits for it.
    @usableFromInline
    var ownsFeedbackGroup = false
    /// Options for the next `send`; reset after it.
    public var sendOptions = SendOptions()

    /// Creates a manager whose effects sleep on `clock`.
    ///
    /// - Parameters:
    ///   - clock: The clock of ``EffectContext`` and of queue delays. Tests pass a test clock.
    ///     A `ContinuousClock` or `SuspendingClock` is wrapped so that sleeps on it wait in the
    ///     runtime's timers, where a cancelled sleep frees its memory at once.
    ///   - randomSeed: Seeds the draws of ``EffectQueueDelay/random(_:)`` delays.
    ///   - maxFeedbackDepth: The loop limit for ``Effect/nextAction(_:)`` feedback.
    ///   - onFailure: Receives the failures no caller sees (``EffectFailure``); by default, each
    ///     is a line on standard error.
    public init(
        clock: some Clock<Duration> = ContinuousClock(),
        randomSeed: UInt64 = .random(in: .min ... .max),
        maxFeedbackDepth: Int = 100,
        onFailure: @escaping @Sendable (EffectFailure) -> Void = EffectFailure.writeToStandardError
    ) {
        self.init(clock: clock, randomSeed: randomSeed, maxFeedbackDepth: maxFeedbackDepth, reclaimer: .shared, onFailure: onFailure)
    }

    /// Creates a manager that reports its effects to `reclaimer` (tests use one of their own).
    init(
        clock: some Clock<Duration>, randomSeed: UInt64, maxFeedbackDepth: Int, reclaimer: EffectMemoryReclaimer,
        onFailure: @escaping @Sendable (EffectFailure) -> Void
    ) {
        runtime = EffectRuntimeStorage(clock: clock, randomSeed: randomSeed, reclaimer: reclaimer, onFailure: onFailure)
        feedback = ActionEffectManager(maxDepth: maxFeedbackDepth)
    }

    /// Sends effects' next actions to `host`, held weakly. Call once, before the first `send`.
    public func connect(to host: any EffectQueueHost<Action>) {
        runtime.connect(to: host)
    }

    /// The context effects run with.
    public var context: EffectContext { runtime.context }

    /// How many effects are running or waiting in a queue.
    public var runningEffectCount: Int { runtime.count }

    /// How many effects are running or waiting in a queue, leaving out those whose work ended
    /// with an error that is being reported to the failure handler (``runningEffectCount``
    /// counts them until it is): what a test that ends now has left running.
    package var stillRunningEffectCount: Int { runtime.stillRunningCount }

    /// Returns once no effect is running or waiting in a queue (``runningEffectCount`` is 0), or
    /// once the waiting task is cancelled. An effect's action may start more before the host
    /// runs again, so a host waiting for its machine to be idle checks the count again, and
    /// stops when cancelled (the wait then returns at once, every time):
    ///
    /// ```swift
    /// while effects.runningEffectCount > 0, !Task.isCancelled { await effects.waitUntilIdle() }
    /// ```
    public func waitUntilIdle() async {
        await runtime.waitUntilIdle()
    }

    /// Whether an effect with `id` is running or waiting in a queue: what a cancellation of
    /// `id` would cancel now.
    public func hasEffect(withID id: some EffectID) -> Bool {
        runtime.hasEffect(withID: AnyEffectID(id))
    }

    /// Cancels every effect running or waiting in a queue; new effects still start. A test
    /// machine uses it to drop the effects a test chose not to wait for.
    public func cancelAll() {
        runtime.cancelAll()
    }

    /// Cancels every effect and refuses new ones; for the host's `deinit`.
    public func shutDown() {
        runtime.shutDown()
    }

    /// Applies the effect's cancellations and starts its work, in order; returns the first of
    /// its next actions (the rest run after it, depth-first).
    @inlinable
    public mutating func handle(_ effect: Effect<Action>) -> Action? {
        var nextActions: [Action] = []
        for part in effect.parts {
            switch part {
            case let .nextAction(action):
                nextActions.append(action)
            case let .work(work):
                let group = sendOptions.tracksFeedbacks ? currentFeedbackGroup() : nil
                if let task = runtime.start(work, priority: sendOptions.priority, group: group) {
                    startedTasks.append(task)
                }
            case let .cancel(ids):
                runtime.cancel(ids: ids)
            case let .updateQueue(queue):
                runtime.updateQueue(queue)
            }
        }
        return feedback.handle(nextActions)
    }

    /// The group this send's effects join, made at its first effect.
    @usableFromInline
    mutating func currentFeedbackGroup() -> FeedbackGroup {
        if let feedbackGroup { return feedbackGroup }
        let group: FeedbackGroup
        if let delivering = runtime.deliveryGroup {
            group = delivering
        } else {
            group = FeedbackGroup()
            ownsFeedbackGroup = true
        }
        feedbackGroup = group
        return group
    }

    /// Returns a task awaiting every effect this `send` started, or `nil` if it started none.
    ///
    /// With `tracksFeedbacks`, when this send runs the action of a tracked effect, its effects
    /// joined that effect's group, whose send's task awaits them: it returns `nil`.
    @inlinable
    public mutating func finishSend() -> Task<Void, Error>? {
        let result = feedback.finishSend()
        if !result.isCompleted { reportFeedbackLoop(result) }
        let options = sendOptions
        sendOptions = SendOptions()
        if let group = feedbackGroup {
            let owned = ownsFeedbackGroup
            feedbackGroup = nil
            ownsFeedbackGroup = false
            // Nested: the group's own send waits. Or nothing started: the runtime is shut down.
            guard owned, !startedTasks.isEmpty, options.returnsTask else {
                startedTasks.removeAll(keepingCapacity: true)
                return nil
            }
            return awaitStartedTasks(andTheirFeedbacksIn: group, priority: options.priority)
        }
        guard options.returnsTask else {
            startedTasks.removeAll(keepingCapacity: true)
            return nil
        }
        switch startedTasks.count {
        case 0:
            return nil
        case 1:
            // The effect's own task already awaits, cancels and reports as required.
            defer { startedTasks.removeAll(keepingCapacity: true) }
            return startedTasks[0]
        default:
            return awaitStartedTasks(priority: options.priority)
        }
    }

    /// Reports a feedback loop cut off to the failure handler.
    @usableFromInline
    func reportFeedbackLoop(_ result: FeedbackResult) {
        runtime.report(.feedbackLoopCutOff(result))
    }

    /// A task awaiting the tasks this send started, then, with a `group`, every other member of
    /// it; cancelling the task cancels them (the whole group). Throws if one of the tasks this
    /// send started was cancelled.
    @usableFromInline
    mutating func awaitStartedTasks(andTheirFeedbacksIn group: FeedbackGroup? = nil, priority: TaskPriority?) -> Task<Void, Error> {
        let tasks = startedTasks
        startedTasks = []
        return Task(priority: priority) {
            var cancelled = false
            await withTaskCancellationHandler {
                for task in tasks {
                    do { try await task.value } catch { cancelled = true }
                }
                await group?.waitForAll()
            } onCancel: {
                if let group {
                    group.cancelAll()
                } else {
                    for task in tasks { task.cancel() }
                }
            }
            if cancelled || Task.isCancelled { throw CancellationError() }
        }
    }
}
