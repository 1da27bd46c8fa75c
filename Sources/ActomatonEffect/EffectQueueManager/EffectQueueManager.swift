import ActomatonCore

/// The effect manager of the async layer: runs each ``Effect`` as Swift Concurrency tasks,
/// with effect IDs, cancellation, queues, queue policies and delays.
///
/// Plug it into a `MealyMachine` whose output is `Effect<Action>` and connect it to the actor
/// that hosts the machine (``EffectQueueHost``); `Actomaton` does both. Within one `send`:
///
/// - ``Effect/nextAction(_:)`` actions are fed back at once, depth-first, like
///   ``ActionEffectManager`` (and with its loop limits);
/// - cancellations apply, and async work starts, in the order the effect lists them;
/// - `send` returns a task that awaits every effect started — `nil` when none was — and
///   cancelling that task cancels their work.
///
/// Work that is cancelled never delivers a next action, even one already computed.
public struct EffectQueueManager<Action: Sendable>: EffectManager, Sendable {
    /// Options for the next `send`, set by the host just before it.
    public struct SendOptions: Sendable {
        /// The priority of the tasks the effects run in.
        public var priority: TaskPriority?
        /// Whether the task `send` returns also awaits the effects of actions fed back by these
        /// effects, transitively.
        public var tracksFeedbacks: Bool

        /// Creates options.
        public init(priority: TaskPriority? = nil, tracksFeedbacks: Bool = false) {
            self.priority = priority
            self.tracksFeedbacks = tracksFeedbacks
        }
    }

    let runtime: EffectRuntime<Action>
    var feedback: ActionEffectManager<[Action]>
    var startedTasks: [Task<Void, Never>] = []
    /// Options for the next `send`; reset after it.
    public var sendOptions = SendOptions()

    /// Creates a manager whose effects sleep on `clock`.
    ///
    /// - Parameters:
    ///   - clock: The clock of ``EffectContext`` and of queue delays. Tests pass a test clock.
    ///   - randomSeed: Seeds the draws of ``EffectQueueDelay/random(_:)`` delays.
    ///   - maxFeedbackDepth: The loop limit for ``Effect/nextAction(_:)`` feedback.
    public init(
        clock: some Clock<Duration> = ContinuousClock(),
        randomSeed: UInt64 = .random(in: .min ... .max),
        maxFeedbackDepth: Int = 100
    ) {
        runtime = EffectRuntime(clock: clock, randomSeed: randomSeed)
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

    /// Cancels every effect and refuses new ones; for the host's `deinit`.
    public func shutDown() {
        runtime.shutDown()
    }

    /// Applies the effect's cancellations and starts its work, in order; returns the first of
    /// its next actions (the rest run after it, depth-first).
    public mutating func handle(_ effect: Effect<Action>) -> Action? {
        var nextActions: [Action] = []
        for part in effect.parts {
            switch part {
            case let .nextAction(action):
                nextActions.append(action)
            case let .work(work):
                if let task = runtime.start(work, priority: sendOptions.priority,
                                            tracksFeedbacks: sendOptions.tracksFeedbacks) {
                    startedTasks.append(task)
                }
            case let .cancel(ids):
                runtime.cancel(ids: ids)
            }
        }
        return feedback.handle(nextActions)
    }

    /// Returns a task awaiting every effect this `send` started, or `nil` if it started none.
    public mutating func finishSend() -> Task<Void, Error>? {
        let result = feedback.finishSend()
        if !result.isCompleted {
            print("Actomaton: an Effect.nextAction loop was cut off (\(result)); check the reducer for a cycle.")
        }
        let options = sendOptions
        sendOptions = SendOptions()
        guard !startedTasks.isEmpty else { return nil }
        let tasks = startedTasks
        startedTasks = []
        return Task(priority: options.priority) {
            await withTaskCancellationHandler {
                for task in tasks { await task.value }
            } onCancel: {
                for task in tasks { task.cancel() }
            }
            try Task.checkCancellation()
        }
    }
}
