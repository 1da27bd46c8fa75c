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
        /// While a tracked effect's action goes through the host: the group the effects it
        /// starts join (``deliveryGroup``).
        var deliveryGroup: FeedbackGroup?
        /// The tasks waiting for no effect to be left (``waitUntilIdle()``), by number.
        var idleWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextIdleWaiter = 0
        /// The effects that ended with an error being reported now: still counted until it is,
        /// but no longer running (``stillRunningCount``).
        var failuresBeingReported = 0

        /// The idle waiters to resume, taken out, if no effect is left.
        mutating func takeIdleWaiters() -> [CheckedContinuation<Void, Never>] {
            guard machine.count == 0, !idleWaiters.isEmpty else { return [] }
            defer { idleWaiters = [:] }
            return Array(idleWaiters.values)
        }
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

    /// How many effects are started or waiting, leaving out those whose work ended with an
    /// error that is being reported (``count`` holds them until it is).
    var stillRunningCount: Int {
        state.withLock { $0.machine.count - $0.failuresBeingReported }
    }

    /// Whether the effect is still alive (not cancelled, not finished).
    func isAlive(_ instance: EffectInstanceID) -> Bool {
        state.withLock { $0.machine.isAlive(instance) }
    }

    /// The feedback group of the tracked effect whose action the host is running now, if any:
    /// the effects that action starts join it rather than a group of their own.
    @usableFromInline
    var deliveryGroup: FeedbackGroup? {
        state.withLock { $0.deliveryGroup }
    }

    // MARK: Transitions

    /// Starts `work`: applies its ID and queue policy, then creates its task. Returns the task,
    /// or `nil` when the runtime is shut down. A discarded effect gets a task too, which runs
    /// its work cancelled. With a `group`, the task is its member, and so are the effects its
    /// actions start.
    @usableFromInline
    func start(_ work: Effect<Action>.Work, priority: TaskPriority?, group: FeedbackGroup?) -> Task<Void, Error>? {
        let now = clock.now
        // Counted before its task exists, so that its end never comes first, and outside the
        // lock, since the reclaimer may take its own lock and start its thread.
        reclaimer.effectBegan()
        let (task, aftermath, idle) = state.withLock { state -> (Task<Void, Error>?, StateMachine.Aftermath, [CheckedContinuation<Void, Never>]) in
            let (decision, aftermath) = state.machine.start(tags: work.tags, now: now)
            // A start may leave no effect: it replaced the last one and was discarded.
            let idle = state.takeIdleWaiters()
            switch decision {
            case .reject:
                return (nil, aftermath, idle)
            case .discard:
                // Dropped: its work runs once, already cancelled, holding no slot.
                let member = group?.join()
                let task = Task(priority: priority) { [self] in
                    defer {
                        if let member { group?.leave(member) }
                        reclaimer.effectEnded()
                    }
                    try await runCancelled(work)
                }
                if let member { group?.attach(task, to: member) }
                return (task, aftermath, idle)
            case let .run(instance):
                let member = group?.join()
                // Created under the lock: the task blocks on it until the record holds its handle.
                let task = Task(priority: priority) { [self] in
                    defer {
                        if let member { group?.leave(member) }
                        reclaimer.effectEnded()
                    }
                    try await run(work, as: instance, group: group)
                    // Whoever cancelled it (its ID, its queue, the send's task), say so.
                    try Task.checkCancellation()
                }
                let orphan = state.machine.attach(task, to: instance)
                assert(orphan == nil, "the record was just made")
                if let member { group?.attach(task, to: member) }
                return (task, aftermath, idle)
            }
        }
        if task == nil { reclaimer.effectEnded() }
        carryOut(aftermath, waking: idle)
        return task
    }

    /// Makes the lane of `queue` follow `queue`'s policy and delay; see `Effect.updateQueue(_:)`.
    @usableFromInline
    func updateQueue(_ queue: AnyEffectQueue) {
        let now = clock.now
        apply { $0.updateQueue(queue, now: now) }
    }

    /// Whether an effect with `id` is running or waiting in a queue.
    func hasEffect(withID id: AnyEffectID) -> Bool {
        state.withLock { $0.machine.hasEffect(withID: id) }
    }

    /// Cancels every effect with one of `ids`.
    @usableFromInline
    func cancel(ids: [AnyEffectID]) {
        let now = clock.now
        apply { $0.cancel(ids: ids, now: now) }
    }

    /// Cancels one effect (its task was cancelled, or it is no longer wanted).
    func cancel(_ instance: EffectInstanceID) {
        let now = clock.now
        apply { $0.cancel(instance, now: now) }
    }

    /// Cancels everything, for good: the host is gone.
    func shutDown() {
        let now = clock.now
        apply { $0.shutDown(now: now) }
    }

    /// Cancels every effect; unlike `shutDown()`, new ones still start.
    func cancelAll() {
        let now = clock.now
        apply { $0.cancelAll(now: now) }
    }

    /// Records that an effect's work ended; frees its slot. `reported`: it ended with an error,
    /// now reported (``stillRunningCount`` left it out meanwhile).
    private func finish(_ instance: EffectInstanceID, reported: Bool = false) {
        let now = clock.now
        let (aftermath, idle) = state.withLock { state in
            if reported { state.failuresBeingReported -= 1 }
            return (state.machine.finish(instance, now: now), state.takeIdleWaiters())
        }
        carryOut(aftermath, waking: idle)
    }

    /// Returns once no effect is running or waiting in a queue, or once the waiting task is
    /// cancelled. By the time the caller runs again, a send may have started more.
    func waitUntilIdle() async {
        let number = state.withLock { state in
            defer { state.nextIdleWaiter += 1 }
            return state.nextIdleWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.machine.count == 0 || Task.isCancelled { return true }
                    state.idleWaiters[number] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.idleWaiters.removeValue(forKey: number) }?.resume()
        }
    }

    /// Runs `transition` under the lock, then does what it returned.
    private func apply(_ transition: (inout StateMachine) -> StateMachine.Aftermath) {
        let (aftermath, idle) = state.withLock { state in
            (transition(&state.machine), state.takeIdleWaiters())
        }
        carryOut(aftermath, waking: idle)
    }

    /// Does what a transition returned, then wakes `idleWaiters`; never under the lock, since
    /// cancelling a task runs its cancellation handlers and resuming a continuation its task,
    /// and either may lock.
    private func carryOut(_ aftermath: StateMachine.Aftermath, waking idleWaiters: [CheckedContinuation<Void, Never>] = []) {
        for task in aftermath.tasksToCancel { task.cancel() }
        for (continuation, start) in aftermath.continuationsToResume { continuation.resume(returning: start) }
        for waiter in idleWaiters { waiter.resume() }
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
    /// function and ``perform(_:as:group:)`` are inlined into the task's closure (one
    /// frame, not three), and the waiting before the start is a call of its own, whose frame is
    /// gone before the work begins. Together with one closure less in `Effect.init(run:)`, this
    /// took a single-async effect waiting on a continuation from two slabs to one (3,163 bytes
    /// in use per in-flight effect to 1,742; a bare task doing the same: 1,440).
    @inline(__always)
    private func run(_ work: Effect<Action>.Work, as instance: EffectInstanceID, group: FeedbackGroup?) async throws {
        guard await waitForStart(of: instance) else { return try await runCancelled(work) }
        await perform(work, as: instance, group: group)
    }

    /// Waits until the effect may start: its slot, then its start time. Returns `false` when it
    /// was cancelled meanwhile (its slot freed).
    ///
    /// An effect whose task is cancelled here never started, so it is cancelled, not finished:
    /// its lane forgets a start still to come, and the next effect's delay counts from the
    /// start before.
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
                cancel(instance)
                return false
            }
        }
        guard !Task.isCancelled, isAlive(instance) else {
            cancel(instance)
            return false
        }
        return true
    }

    /// Runs an effect's work, which may now start; frees its slot when it ends.
    @inline(__always)
    private func perform(_ work: Effect<Action>.Work, as instance: EffectInstanceID, group: FeedbackGroup?) async {
        do {
            try await work.run(context) { [self] action in
                await deliver(action, from: instance, endsTheEffect: work.endsWithItsAction, group: group)
            }
        } catch {
            // Cancellation is how a cancelled effect ends; anything else is a failure no caller sees.
            if !(error is CancellationError), !Task.isCancelled {
                // Reported before its slot is freed, so that whoever waits for no effect to be
                // left sees it; but not as running: a test that ended meanwhile failed for the
                // error and for an effect still running.
                state.withLock { $0.failuresBeingReported += 1 }
                report(.effectThrew(error, effectID: work.id))
                finish(instance, reported: true)
                return
            }
        }
        finish(instance)
    }

    /// Runs the work of an effect cancelled (or dropped) before it started: once, in a task
    /// cancelled first, so its sleeps throw and it can clean up; whatever it would send is
    /// dropped, and so is what it throws. Throws `CancellationError`.
    private func runCancelled(_ work: Effect<Action>.Work) async throws {
        withUnsafeCurrentTask { $0?.cancel() }
        try? await work.run(context) { _ in }
        throw CancellationError()
    }

    /// Sends an effect's next action to the host, unless the effect was cancelled meanwhile.
    /// It never waits for the effects that action starts: with a `group`, they join it, and the
    /// send's task waits for them there.
    private func deliver(
        _ action: Action, from instance: EffectInstanceID, endsTheEffect: Bool, group: FeedbackGroup?
    ) async {
        guard !Task.isCancelled, let host = state.withLock({ $0.host }) else { return }
        await send(action, from: instance, endsTheEffect: endsTheEffect, group: group, to: host)
    }

    /// Runs on the host's actor, so the liveness check and the send are one step there.
    /// When the action is the effect's last act (`endsTheEffect`), the effect is finished
    /// first: an effect the action starts with the same ID must not cancel the one that sent it.
    private func send(
        _ action: Action, from instance: EffectInstanceID, endsTheEffect: Bool, group: FeedbackGroup?,
        to host: isolated any EffectQueueHost<Action>
    ) {
        guard isAlive(instance), !Task.isCancelled else { return }
        if endsTheEffect { finish(instance) }
        guard let group else {
            _ = host.send(effectAction: action, tracksFeedbacks: false)
            return
        }
        // Nothing else runs on the host meanwhile, so the effects this send starts are this
        // action's.
        state.withLock { $0.deliveryGroup = group }
        _ = host.send(effectAction: action, tracksFeedbacks: true)
        state.withLock { $0.deliveryGroup = nil }
    }
}
