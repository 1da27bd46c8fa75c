import ActomatonCore

/// Identifies one started effect within one ``EffectQueueManager``.
struct EffectInstanceID: Hashable, Sendable {
    let rawValue: UInt64
}

/// The bookkeeping behind an ``EffectQueueManager``: every effect's lifecycle, its ID, and its
/// queue's lanes. Shared by the manager (on its host actor) and the effects' tasks (anywhere),
/// so its state sits behind a lock (``Locked``); work that may re-enter it (cancelling a task runs that
/// task's cancellation handlers, resuming a continuation runs its task) happens after unlocking.
///
/// One effect goes through these phases:
///
///     ┌──────────┐  slot frees  ┌──────────┐  task starts  ┌─────────┐  work ends  ╶╴removed
///     │ waiting  │────────────▶│ admitted │──────────────▶│ started │──────────────▶
///     └──────────┘              └──────────┘               └─────────┘
///          │ task asks first                ▲
///          ▼                                │ slot frees: resumed with its start time
///     ┌──────────┐──────────────────────────┘
///     │  parked  │
///     └──────────┘
///
/// and from any phase, cancellation (by ID, by its queue's policy, by the send's task, or when
/// the host goes away) removes it at once, freeing its slot. An effect removed before its work
/// started still runs its work once, in its (cancelled) task, and delivers nothing.
@usableFromInline
final class EffectRuntime<Action: Sendable>: Sendable {
    let clock: EffectClock
    let context: EffectContext
    private let state: Locked<State>

    private enum Phase {
        /// Suspended by its queue's `.suspendNew` policy; its task has not asked to start yet.
        case waiting
        /// Suspended, and its task is waiting for a slot.
        case parked(CheckedContinuation<Duration?, Never>)
        /// It may start at `start` (the queue's delay included); its task has not started yet.
        case admitted(start: Duration)
        /// Its work is running (or sleeping until its start time).
        case started
    }

    /// What an effect's task finds when it begins.
    private enum StartDecision {
        case at(Duration)
        case waitForSlot
        case cancelled
    }

    private struct Record {
        let id: AnyEffectID?
        let queue: AnyEffectQueue?
        var task: Task<Void, Error>?
        var phase: Phase
    }

    /// One queue's lane: the effects that hold a slot, and those waiting for one.
    private struct Lane {
        /// The latest queue value's policy and delay: a lane follows what was sent last.
        var policy: EffectQueuePolicy
        var delay: EffectQueueDelay
        var active: [EffectInstanceID] = []
        var waiting: [EffectInstanceID] = []
        var lastStart: Duration?

        init(_ queue: AnyEffectQueue) {
            policy = queue.base.effectQueuePolicy
            delay = queue.base.effectQueueDelay
        }

        var maxCount: Int { max(policy.maxCount, 1) }
        /// A lane with nothing in it and no delay to remember can be dropped.
        var isForgettable: Bool { active.isEmpty && waiting.isEmpty && delay == .none }
    }

    private struct State {
        var nextInstance: UInt64 = 0
        var records: [EffectInstanceID: Record] = [:]
        var instancesByID: [AnyEffectID: [EffectInstanceID]] = [:]
        var lanes: [AnyEffectQueue: Lane] = [:]
        weak var host: (any EffectQueueHost<Action>)?
        var isShutDown = false
        var random: SplitMix64
    }

    /// What to do once the lock is released.
    private struct Aftermath {
        var tasksToCancel: [Task<Void, Error>] = []
        var continuations: [(CheckedContinuation<Duration?, Never>, Duration?)] = []

        func run() {
            for task in tasksToCancel { task.cancel() }
            for (continuation, start) in continuations { continuation.resume(returning: start) }
        }
    }

    init(clock: some Clock<Duration>, randomSeed: UInt64) {
        self.clock = EffectClock(clock)
        context = EffectContext(clock: clock)
        state = Locked(State(random: SplitMix64(seed: randomSeed)))
    }

    func connect(to host: any EffectQueueHost<Action>) {
        state.withLock { $0.host = host }
    }

    /// How many effects are started or waiting.
    var count: Int {
        state.withLock { $0.records.count }
    }

    /// Whether the effect is still alive (not cancelled, not finished).
    func isAlive(_ instance: EffectInstanceID) -> Bool {
        state.withLock { $0.records[instance] != nil }
    }

    // MARK: Transitions

    /// Starts `work`: applies its ID and queue policy, then creates its task. Returns the task,
    /// or `nil` when the queue discarded it or the runtime is shut down.
    @usableFromInline
    func start(_ work: Effect<Action>.Work, priority: TaskPriority?, tracksFeedbacks: Bool) -> Task<Void, Error>? {
        var aftermath = Aftermath()
        defer { aftermath.run() }
        return state.withLock { state -> Task<Void, Error>? in
            guard !state.isShutDown else { return nil }
            if let id = work.id {
                for instance in state.instancesByID[id] ?? [] {
                    remove(instance, cancelling: true, from: &state, aftermath: &aftermath)
                }
            }

            let instance = EffectInstanceID(rawValue: state.nextInstance)
            state.nextInstance += 1
            var phase = Phase.admitted(start: clock.now())
            if let queue = work.queue {
                update(queue, in: &state, aftermath: &aftermath)
                var lane = state.lanes[queue] ?? Lane(queue)
                switch lane.policy {
                case .runNewest:
                    while lane.active.count >= lane.maxCount, let oldest = lane.active.first {
                        remove(oldest, cancelling: true, from: &state, aftermath: &aftermath)
                        lane = state.lanes[queue] ?? Lane(queue)
                    }
                case .runOldest(_, .discardNew) where lane.active.count >= lane.maxCount:
                    // Dropped: its work runs once, already cancelled, holding no slot.
                    return Task(priority: priority) { [self] in try await runCancelled(work) }
                case .runOldest(_, .suspendNew) where lane.active.count >= lane.maxCount:
                    phase = .waiting
                    lane.waiting.append(instance)
                case .runOldest:
                    break
                }
                if case .admitted = phase {
                    let start = nextStart(in: &lane, random: &state.random)
                    phase = .admitted(start: start)
                    lane.active.append(instance)
                }
                state.lanes[queue] = lane
            }
            if let id = work.id {
                state.instancesByID[id, default: []].append(instance)
            }
            state.records[instance] = Record(id: work.id, queue: work.queue, task: nil, phase: phase)
            // The task blocks on this lock until the record holds its handle.
            let task = Task(priority: priority) { [self] in
                try await run(work, as: instance, tracksFeedbacks: tracksFeedbacks)
                // Whoever cancelled it (its ID, its queue, the send's task), say so.
                try Task.checkCancellation()
            }
            state.records[instance]?.task = task
            return task
        }
    }

    /// Makes the lane of `queue` follow `queue`'s policy and delay; see `Effect.updateQueue(_:)`.
    @usableFromInline
    func updateQueue(_ queue: AnyEffectQueue) {
        var aftermath = Aftermath()
        state.withLock { update(queue, in: &$0, aftermath: &aftermath) }
        aftermath.run()
    }

    /// Gives an existing lane `queue`'s policy and delay; a raised limit admits waiting effects.
    private func update(_ queue: AnyEffectQueue, in state: inout State, aftermath: inout Aftermath) {
        guard var lane = state.lanes[queue] else { return }
        lane.policy = queue.base.effectQueuePolicy
        lane.delay = queue.base.effectQueueDelay
        admitWaiting(in: &lane, state: &state, aftermath: &aftermath)
        state.lanes[queue] = lane.isForgettable ? nil : lane
    }

    /// Cancels every effect with one of `ids`.
    @usableFromInline
    func cancel(ids: [AnyEffectID]) {
        var aftermath = Aftermath()
        state.withLock { state in
            for id in ids {
                for instance in state.instancesByID[id] ?? [] {
                    remove(instance, cancelling: true, from: &state, aftermath: &aftermath)
                }
            }
        }
        aftermath.run()
    }

    /// Cancels one effect (its task was cancelled, or it is no longer wanted).
    func cancel(_ instance: EffectInstanceID) {
        var aftermath = Aftermath()
        state.withLock { remove(instance, cancelling: true, from: &$0, aftermath: &aftermath) }
        aftermath.run()
    }

    /// Cancels everything, for good: the host is gone.
    func shutDown() {
        var aftermath = Aftermath()
        state.withLock { state in
            state.isShutDown = true
            for instance in Array(state.records.keys) {
                remove(instance, cancelling: true, from: &state, aftermath: &aftermath)
            }
        }
        aftermath.run()
    }

    /// Cancels every effect; unlike `shutDown()`, new ones still start.
    func cancelAll() {
        var aftermath = Aftermath()
        state.withLock { state in
            for instance in Array(state.records.keys) {
                remove(instance, cancelling: true, from: &state, aftermath: &aftermath)
            }
        }
        aftermath.run()
    }

    /// Records that an effect's work ended; frees its slot.
    private func finish(_ instance: EffectInstanceID) {
        var aftermath = Aftermath()
        state.withLock { remove(instance, cancelling: false, from: &$0, aftermath: &aftermath) }
        aftermath.run()
    }

    /// Waits until a waiting effect gets a slot: returns its start time, or `nil` if it was
    /// cancelled instead.
    private func admission(of instance: EffectInstanceID) async -> Duration? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Duration?, Never>) in
                let answer: Duration?? = state.withLock { state in
                    guard var record = state.records[instance] else { return .some(nil) }
                    switch record.phase {
                    case let .admitted(start):
                        record.phase = .started
                        state.records[instance] = record
                        return .some(start)
                    case .waiting:
                        record.phase = .parked(continuation)
                        state.records[instance] = record
                        return nil
                    case .parked, .started:
                        preconditionFailure("an effect asked to start twice")
                    }
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            cancel(instance)
        }
    }

    /// The start time of the next effect of `lane`: now, or the queue's delay after the last start.
    private func nextStart(in lane: inout Lane, random: inout SplitMix64) -> Duration {
        let now = clock.now()
        var start = now
        if let last = lane.lastStart {
            start = max(now, last + lane.delay.duration(using: &random))
        }
        lane.lastStart = start
        return start
    }

    /// Removes an effect from every table; frees its queue slot for the next waiting effect.
    private func remove(
        _ instance: EffectInstanceID, cancelling: Bool, from state: inout State, aftermath: inout Aftermath
    ) {
        guard let record = state.records.removeValue(forKey: instance) else { return }
        if cancelling, let task = record.task { aftermath.tasksToCancel.append(task) }
        if case let .parked(continuation) = record.phase { aftermath.continuations.append((continuation, nil)) }
        if let id = record.id {
            state.instancesByID[id]?.removeAll { $0 == instance }
            if state.instancesByID[id]?.isEmpty == true { state.instancesByID[id] = nil }
        }
        guard let queue = record.queue, var lane = state.lanes[queue] else { return }
        if let index = lane.active.firstIndex(of: instance) {
            lane.active.remove(at: index)
            admitWaiting(in: &lane, state: &state, aftermath: &aftermath)
        } else {
            lane.waiting.removeAll { $0 == instance }
        }
        state.lanes[queue] = lane.isForgettable ? nil : lane
    }

    /// Gives free slots to waiting effects, oldest first.
    private func admitWaiting(in lane: inout Lane, state: inout State, aftermath: inout Aftermath) {
        while lane.active.count < lane.maxCount, !lane.waiting.isEmpty {
            let next = lane.waiting.removeFirst()
            guard var record = state.records[next] else { continue }
            let start = nextStart(in: &lane, random: &state.random)
            lane.active.append(next)
            if case let .parked(continuation) = record.phase {
                record.phase = .started
                aftermath.continuations.append((continuation, start))
            } else {
                record.phase = .admitted(start: start)
            }
            state.records[next] = record
        }
    }

    // MARK: An effect's task

    /// Runs one effect's task: waits for its slot and start time, runs the work, frees the slot.
    ///
    /// Throws `CancellationError` when the effect was cancelled. Cancellation removes the effect's
    /// record under the lock but cancels its task only after unlocking, so a missing record is
    /// the first sign of it, and is checked before each step.
    private func run(_ work: Effect<Action>.Work, as instance: EffectInstanceID, tracksFeedbacks: Bool) async throws {
        let start: StartDecision = state.withLock { state in
            guard var record = state.records[instance] else { return .cancelled }
            guard case let .admitted(start) = record.phase else { return .waitForSlot }
            record.phase = .started
            state.records[instance] = record
            return .at(start)
        }
        let startTime: Duration
        switch start {
        case let .at(time):
            startTime = time
        case .waitForSlot:
            guard let admitted = await admission(of: instance) else { return try await runCancelled(work) }
            startTime = admitted
        case .cancelled:
            return try await runCancelled(work)
        }
        if startTime > clock.now() {
            do {
                try await clock.sleepUntil(startTime)
            } catch {
                finish(instance)
                return try await runCancelled(work)
            }
        }
        guard !Task.isCancelled, isAlive(instance) else {
            finish(instance)
            return try await runCancelled(work)
        }
        try? await work.run(context) { [self] action in
            await deliver(action, from: instance, endsTheEffect: work.endsWithItsAction, tracksFeedbacks: tracksFeedbacks)
        }
        finish(instance)
    }

    /// Runs the work of an effect cancelled (or dropped) before it started: once, in a task
    /// cancelled first, so its sleeps throw and it can clean up; whatever it would send is
    /// dropped. Throws `CancellationError`.
    private func runCancelled(_ work: Effect<Action>.Work) async throws {
        withUnsafeCurrentTask { $0?.cancel() }
        try? await work.run(context) { _ in }
        throw CancellationError()
    }

    /// Sends an effect's next action to the host, unless the effect was cancelled meanwhile;
    /// with `tracksFeedbacks`, waits for the effects that action starts.
    private func deliver(_ action: Action, from instance: EffectInstanceID, endsTheEffect: Bool, tracksFeedbacks: Bool) async {
        guard !Task.isCancelled, let host = state.withLock({ $0.host }) else { return }
        guard let task = await send(action, from: instance, endsTheEffect: endsTheEffect, tracksFeedbacks: tracksFeedbacks, to: host),
              tracksFeedbacks
        else { return }
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
