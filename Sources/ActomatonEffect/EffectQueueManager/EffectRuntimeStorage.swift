import ActomatonCore

/// Carries out the rules of an ``EffectQueueManager``: holds its ``EffectRuntimeStateMachine``
/// behind a lock, runs effects in tasks, and does what each transition returns after
/// unlocking. Shared by the manager (on its host actor) and the effects' tasks (anywhere).
///
/// The rules themselves — IDs, queue slots, suspension order, cancellation — are the state
/// machine's; this class adds only tasks, continuations, the clock and the lock.
@usableFromInline
final class EffectRuntimeStorage<Action: Sendable>: Sendable {
    typealias StateMachine = EffectRuntimeStateMachine<Task<Void, Error>, CheckedContinuation<Duration?, Never>>

    let clock: EffectClock
    let context: EffectContext
    /// Where failures no caller sees go; see ``EffectFailure``.
    let onFailure: @Sendable (EffectFailure) -> Void
    /// Counts the effects in flight, to hand a burst's memory back once it is over.
    let reclaimer: EffectMemoryReclaimer
    private let state: Locked<State>

    private struct State {
        var machine: StateMachine
        weak var host: (any EffectQueueHost<Action>)?
    }

    init(
        clock: some Clock<Duration>, randomSeed: UInt64, reclaimer: EffectMemoryReclaimer,
        onFailure: @escaping @Sendable (EffectFailure) -> Void
    ) {
        self.reclaimer = reclaimer
        // A real clock's sleeps wait in `EffectTimers`, where a cancelled one frees its memory
        // at once; `Task.sleep` keeps it until the deadline. Test clocks are used as they are.
        func clocks(_ clock: some Clock<Duration>) -> (EffectClock, EffectContext) {
            (EffectClock(clock), EffectContext(clock: clock))
        }
        (self.clock, context) = if let continuous = clock as? ContinuousClock {
            clocks(EffectTimerClock(base: continuous))
        } else if let suspending = clock as? SuspendingClock {
            clocks(EffectTimerClock(base: suspending))
        } else {
            clocks(clock)
        }
        self.onFailure = onFailure
        state = Locked(State(machine: StateMachine(randomSeed: randomSeed)))
    }

    func connect(to host: any EffectQueueHost<Action>) {
        state.withLock { $0.host = host }
    }

    /// How many effects are started or waiting.
    var count: Int {
        state.withLock { $0.machine.count }
    }

    /// Whether the effect is still alive (not cancelled, not finished).
    func isAlive(_ instance: EffectInstanceID) -> Bool {
        state.withLock { $0.machine.isAlive(instance) }
    }

    // MARK: Transitions

    /// Starts `work`: applies its ID and queue policy, then creates its task. Returns the task,
    /// or `nil` when the runtime is shut down. A discarded effect gets a task too, which runs
    /// its work cancelled.
    @usableFromInline
    func start(_ work: Effect<Action>.Work, priority: TaskPriority?, tracksFeedbacks: Bool) -> Task<Void, Error>? {
        let now = clock.now
        // Counted before its task exists, so that its end never comes first, and outside the
        // lock, since the reclaimer may take its own lock and start its thread.
        reclaimer.effectBegan()
        let (task, aftermath) = state.withLock { state -> (Task<Void, Error>?, StateMachine.Aftermath) in
            let (decision, aftermath) = state.machine.start(tags: work.tags, now: now)
            switch decision {
            case .reject:
                return (nil, aftermath)
            case .discard:
                // Dropped: its work runs once, already cancelled, holding no slot.
                return (Task(priority: priority) { [self] in
                    defer { reclaimer.effectEnded() }
                    try await runCancelled(work)
                }, aftermath)
            case let .run(instance):
                // Created under the lock: the task blocks on it until the record holds its handle.
                let task = Task(priority: priority) { [self] in
                    defer { reclaimer.effectEnded() }
                    try await run(work, as: instance, tracksFeedbacks: tracksFeedbacks)
                    // Whoever cancelled it (its ID, its queue, the send's task), say so.
                    try Task.checkCancellation()
                }
                let orphan = state.machine.attach(task, to: instance)
                assert(orphan == nil, "the record was just made")
                return (task, aftermath)
            }
        }
        if task == nil { reclaimer.effectEnded() }
        carryOut(aftermath)
        return task
    }

    /// Makes the lane of `queue` follow `queue`'s policy and delay; see `Effect.updateQueue(_:)`.
    @usableFromInline
    func updateQueue(_ queue: AnyEffectQueue) {
        let now = clock.now
        carryOut(state.withLock { $0.machine.updateQueue(queue, now: now) })
    }

    /// Whether an effect with `id` is running or waiting in a queue.
    func hasEffect(withID id: AnyEffectID) -> Bool {
        state.withLock { $0.machine.hasEffect(withID: id) }
    }

    /// Cancels every effect with one of `ids`.
    @usableFromInline
    func cancel(ids: [AnyEffectID]) {
        let now = clock.now
        carryOut(state.withLock { $0.machine.cancel(ids: ids, now: now) })
    }

    /// Cancels one effect (its task was cancelled, or it is no longer wanted).
    func cancel(_ instance: EffectInstanceID) {
        let now = clock.now
        carryOut(state.withLock { $0.machine.cancel(instance, now: now) })
    }

    /// Cancels everything, for good: the host is gone.
    func shutDown() {
        let now = clock.now
        carryOut(state.withLock { $0.machine.shutDown(now: now) })
    }

    /// Cancels every effect; unlike `shutDown()`, new ones still start.
    func cancelAll() {
        let now = clock.now
        carryOut(state.withLock { $0.machine.cancelAll(now: now) })
    }

    /// Records that an effect's work ended; frees its slot.
    private func finish(_ instance: EffectInstanceID) {
        let now = clock.now
        carryOut(state.withLock { $0.machine.finish(instance, now: now) })
    }

    /// Does what a transition returned; never under the lock, since cancelling a task runs
    /// its cancellation handlers and resuming a continuation its task, and either may lock.
    private func carryOut(_ aftermath: StateMachine.Aftermath) {
        for task in aftermath.tasksToCancel { task.cancel() }
        for (continuation, start) in aftermath.continuationsToResume { continuation.resume(returning: start) }
    }

    /// Reports a failure no caller sees to the manager's handler.
    @usableFromInline
    func report(_ failure: EffectFailure) {
        onFailure(failure)
    }

    // MARK: An effect's task

    /// Waits until a waiting effect gets a slot: returns its start time, or `nil` if it was
    /// cancelled instead.
    private func admission(of instance: EffectInstanceID) async -> Duration? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Duration?, Never>) in
                let decision = state.withLock { $0.machine.park(instance, continuation: continuation) }
                if case let .resume(start) = decision { continuation.resume(returning: start) }
            }
        } onCancel: {
            cancel(instance)
        }
    }

    /// Runs one effect's task: waits for its slot and start time, runs the work, frees the slot.
    ///
    /// Throws `CancellationError` when the effect was cancelled. Cancellation removes the effect's
    /// record under the lock but cancels its task only after unlocking, so a missing record is
    /// the first sign of it, and is checked before each step.
    ///
    /// Memory: while the work runs, every async frame between the task's closure and the work's
    /// innermost suspension lives in the task's allocator, whose first slab holds about 1,000
    /// bytes; past that, the task mallocs another 1 KB slab for the rest of its life. So this
    /// function and ``perform(_:as:tracksFeedbacks:)`` are inlined into the task's closure (one
    /// frame, not three), and the waiting before the start is a call of its own, whose frame is
    /// gone before the work begins. Together with one closure less in `Effect.init(run:)`, this
    /// took a single-async effect waiting on a continuation from two slabs to one (3,163 bytes
    /// in use per in-flight effect to 1,742; a bare task doing the same: 1,440).
    @inline(__always)
    private func run(_ work: Effect<Action>.Work, as instance: EffectInstanceID, tracksFeedbacks: Bool) async throws {
        guard await waitForStart(of: instance) else { return try await runCancelled(work) }
        await perform(work, as: instance, tracksFeedbacks: tracksFeedbacks)
    }

    /// Waits until the effect may start: its slot, then its start time. Returns `false` when it
    /// was cancelled meanwhile (its slot already freed).
    private func waitForStart(of instance: EffectInstanceID) async -> Bool {
        let startTime: Duration
        switch state.withLock({ $0.machine.taskBegan(instance) }) {
        case let .at(time):
            startTime = time
        case .waitForSlot:
            guard let admitted = await admission(of: instance) else { return false }
            startTime = admitted
        case .cancelled:
            return false
        }
        if startTime > clock.now() {
            do {
                try await clock.sleepUntil(startTime)
            } catch {
                finish(instance)
                return false
            }
        }
        guard !Task.isCancelled, isAlive(instance) else {
            finish(instance)
            return false
        }
        return true
    }

    /// Runs an effect's work, which may now start; frees its slot when it ends.
    ///
    /// With `tracksFeedbacks`, an effect that sends several actions from a queue slot waits for
    /// the effects its actions start only once its work has ended and its slot is free: one of
    /// them may be waiting for that slot (a full `.suspendNew` queue), directly or through
    /// another queue, and would wait for ever.
    @inline(__always)
    private func perform(_ work: Effect<Action>.Work, as instance: EffectInstanceID, tracksFeedbacks: Bool) async {
        let feedbacks = tracksFeedbacks && work.queue != nil && !work.endsWithItsAction ? DeferredFeedbacks() : nil
        do {
            try await work.run(context) { [self] action in
                await deliver(action, from: instance, endsTheEffect: work.endsWithItsAction, tracksFeedbacks: tracksFeedbacks,
                              deferringTo: feedbacks)
            }
        } catch {
            // Cancellation is how a cancelled effect ends; anything else is a failure no caller sees.
            if !(error is CancellationError), !Task.isCancelled {
                report(.effectThrew(error, effectID: work.id))
            }
        }
        finish(instance)
        await feedbacks?.waitForAll()
    }

    /// Runs the work of an effect cancelled (or dropped) before it started: once, in a task
    /// cancelled first, so its sleeps throw and it can clean up; whatever it would send is
    /// dropped, and so is what it throws. Throws `CancellationError`.
    private func runCancelled(_ work: Effect<Action>.Work) async throws {
        withUnsafeCurrentTask { $0?.cancel() }
        try? await work.run(context) { _ in }
        throw CancellationError()
    }

    /// Sends an effect's next action to the host, unless the effect was cancelled meanwhile;
    /// with `tracksFeedbacks`, waits for the effects that action starts, or adds their task to
    /// `deferred` when there is one, to be awaited once the effect's work has ended.
    private func deliver(
        _ action: Action, from instance: EffectInstanceID, endsTheEffect: Bool, tracksFeedbacks: Bool,
        deferringTo deferred: DeferredFeedbacks?
    ) async {
        guard !Task.isCancelled, let host = state.withLock({ $0.host }) else { return }
        guard let task = await send(action, from: instance, endsTheEffect: endsTheEffect, tracksFeedbacks: tracksFeedbacks, to: host),
              tracksFeedbacks
        else { return }
        if let deferred {
            deferred.add(task)
            return
        }
        await withTaskCancellationHandler {
            _ = try? await task.value
        } onCancel: {
            task.cancel()
        }
    }

    /// Runs on the host's actor, so the liveness check and the send are one step there.
    /// When the action is the effect's last act (`endsTheEffect`), the effect is finished
    /// first: an effect the action starts with the same ID must not cancel the one that sent it.
    private func send(
        _ action: Action, from instance: EffectInstanceID, endsTheEffect: Bool, tracksFeedbacks: Bool,
        to host: isolated any EffectQueueHost<Action>
    ) -> Task<Void, Error>? {
        guard isAlive(instance), !Task.isCancelled else { return nil }
        if endsTheEffect { finish(instance) }
        return host.send(effectAction: action, tracksFeedbacks: tracksFeedbacks)
    }
}
