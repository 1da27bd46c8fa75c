import ActomatonCore

/// Identifies one started effect within one ``EffectQueueManager``.
struct EffectInstanceID: Hashable, Sendable {
    let rawValue: UInt64
}

/// The rules of an ``EffectQueueManager``, with nothing else: every effect's lifecycle, its ID,
/// and its queue's lanes. A pure value: it starts no task, reads no clock and takes no lock.
/// Each transition returns what is left to do — tasks to cancel, waiting tasks to resume —
/// and ``EffectRuntimeStorage`` does it, after unlocking (cancelling a task runs its
/// cancellation handlers, resuming a continuation runs its task; either may come back here).
///
/// It is generic over what it holds for an effect's task and for a task waiting for a slot, so
/// that tests run it with plain values, no task and no clock (`EffectRuntimeStateMachineTests`).
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
/// and from any phase, cancellation (by ID, by its queue's policy, or when the host goes away)
/// removes it at once, freeing its slot. The send's task, cancelled, removes it at once while
/// it waits for its slot or its start; once its work runs, the work's task is cancelled and
/// the slot is freed when the work returns (work that ignores cancellation keeps it until
/// then). An effect removed before its work started still runs its work once, in its
/// (cancelled) task, and delivers nothing; removed before its start time came, it does not
/// count as its queue's last start.
///
/// Times are durations since the manager started; transitions that may admit a waiting effect
/// take `now`, read only when needed: an effect admitted, or the bookkeeping of a lane with a
/// delay (a start to take back, a lane whose delay may have passed).
struct EffectRuntimeStateMachine<TaskHandle, Continuation> {
    private enum Phase {
        /// Suspended by its queue's `.suspendNew` policy; its task has not asked to start yet.
        case waiting
        /// Suspended, and its task is waiting for a slot.
        case parked(Continuation)
        /// It may start at `start` (the queue's delay included); its task has not started yet.
        case admitted(start: Duration)
        /// Its work is running (or sleeping until its start time, `start`).
        case started(start: Duration)

        /// The start time it was given, once it has a slot.
        var start: Duration? {
            switch self {
            case let .admitted(start), let .started(start): start
            case .waiting, .parked: nil
            }
        }
    }

    /// 40 bytes with a pointer-sized task handle: 100,000 running effects take a table of
    /// 262,144 buckets, so every byte here counts 2.6 times.
    private struct Record {
        let tags: EffectTags?
        var id: AnyEffectID? { tags?.id }
        var queue: AnyEffectQueue? { tags?.queue }
        var task: TaskHandle?
        var phase: Phase
    }

    /// One queue's lane: the effects that hold a slot, and those waiting for one.
    private struct Lane {
        /// The latest queue value's policy and delay: a lane follows what was sent last.
        var policy: EffectQueuePolicy
        var delay: EffectQueueDelay
        /// The effects that hold a slot, oldest first, and some removed meanwhile: as in
        /// `waiting`, a removed one is left in place (unless first or last) and compacted away
        /// once they are half of the list, so that finishing n effects of a lane of many slots
        /// costs O(n), not O(n²). The first is always one still holding its slot.
        var active = FIFOQueue<EffectInstanceID>()
        /// How many effects hold a slot.
        var activeCount = 0
        /// How many of `active` were removed.
        var staleActiveCount = 0
        /// The effects waiting for a slot, oldest first, and some removed meanwhile: a removed
        /// one is left in place and skipped when its turn comes, so that cancelling a backlog
        /// of n costs O(n), not O(n²) (``staleWaitingCount``).
        var waiting = FIFOQueue<EffectInstanceID>()
        /// How many of `waiting` were removed; once they are half of it, it is compacted.
        var staleWaitingCount = 0
        /// The starts given that had not come yet when given, in order, each with its effect: an
        /// effect removed before its start came never started, so its start is taken back, and
        /// the next one's delay counts from the last start that remains. At most one per effect
        /// holding a slot, plus those taken back and not yet dropped.
        var futureStarts = FIFOQueue<FutureStart>()
        /// The effects of `futureStarts` taken back, other than the last: skipped when their time
        /// comes, and compacted away once they are half of the list, as `waiting`'s.
        var takenBack: Set<EffectInstanceID> = []
        /// The latest start that has come.
        var lastPastStart: Duration?

        /// The start the next one's delay counts from.
        var lastStart: Duration? { futureStarts.last?.time ?? lastPastStart }

        init(_ queue: AnyEffectQueue) {
            policy = queue.base.effectQueuePolicy
            delay = queue.base.effectQueueDelay
        }

        var maxCount: Int { max(policy.maxCount, 1) }

        /// Records `start`, given to `instance` at `now`.
        mutating func record(_ start: Duration, of instance: EffectInstanceID, now: Duration) {
            if start > now {
                futureStarts.append(FutureStart(instance: instance, time: start))
            } else {
                lastPastStart = start
            }
        }

        /// Moves the starts that have come by `now` out of `futureStarts`: into `lastPastStart`,
        /// or dropped if taken back.
        mutating func passStarts(upTo now: Duration) {
            while let first = futureStarts.first, first.time <= now {
                _ = futureStarts.popFirst()
                if takenBack.remove(first.instance) == nil { lastPastStart = first.time }
            }
        }

        /// `instance` was removed before its start (still in `futureStarts`) came.
        mutating func takeBackStart(of instance: EffectInstanceID) {
            guard futureStarts.last?.instance == instance else {
                takenBack.insert(instance)
                if takenBack.count >= 16, takenBack.count * 2 >= futureStarts.count {
                    futureStarts.removeAll { takenBack.contains($0.instance) }
                    takenBack = []
                }
                return
            }
            _ = futureStarts.popLast()
            while let last = futureStarts.last, takenBack.remove(last.instance) != nil {
                _ = futureStarts.popLast()
            }
        }

        /// Every start still to come is taken back: their effects were all removed.
        mutating func takeBackEveryStart(now: () -> Duration) {
            guard !futureStarts.isEmpty else { return }
            passStarts(upTo: now())
            futureStarts = FIFOQueue()
            takenBack = []
        }

        /// A lane with nothing in it and no delay to remember — none, or its longest past since
        /// the last start — can be dropped.
        func isForgettable(now: () -> Duration) -> Bool {
            guard activeCount == 0, waiting.isEmpty else { return false }
            guard delay != .none, let lastStart else { return true }
            return lastStart + delay.longest <= now()
        }
    }

    /// A start given to an effect, still to come when given.
    private struct FutureStart {
        let instance: EffectInstanceID
        let time: Duration
    }

    /// What to do once the lock is released: cancel these tasks, then resume these waiting
    /// tasks, each with its start time (`nil`: it was cancelled instead).
    struct Aftermath {
        var tasksToCancel: [TaskHandle] = []
        var continuationsToResume: [(Continuation, Duration?)] = []

        /// Whether there is nothing to do.
        var isEmpty: Bool { tasksToCancel.isEmpty && continuationsToResume.isEmpty }
    }

    /// What ``start(id:queue:now:)`` decided.
    enum StartDecision: Equatable {
        /// The effect is recorded as `instance`: create its task and ``attach(_:to:)`` it.
        case run(EffectInstanceID)
        /// Its queue's `.discardNew` policy dropped it: its work runs once, already cancelled,
        /// holding no slot, and nothing is recorded.
        case discard
        /// The runtime is shut down: nothing runs.
        case reject
    }

    /// What an effect's task finds when it begins (``taskBegan(_:)``).
    enum TaskStart: Equatable {
        /// Start the work at this time.
        case at(Duration)
        /// Wait for a slot (``park(_:continuation:)``).
        case waitForSlot
        /// The effect was cancelled: run its work cancelled.
        case cancelled
    }

    /// What ``park(_:continuation:)`` decided.
    enum ParkDecision {
        /// Resume the continuation at once with this start time (`nil`: cancelled).
        case resume(Duration?)
        /// The continuation is kept; a later transition returns it to resume.
        case parked
    }

    private var nextInstance: UInt64 = 0
    private var records: [EffectInstanceID: Record] = [:]
    /// How many effects the tables have room for without growing (for tests of the idle footprint).
    var recordCapacity: Int { records.capacity }
    private var instancesByID: [AnyEffectID: [EffectInstanceID]] = [:]
    private var lanes: [AnyEffectQueue: Lane] = [:]
    /// How many lanes there may be before the next sweep drops those whose delay has passed: a
    /// lane with a delay is kept after its last effect ends, until its delay has passed, and a
    /// queue per user made one a user for good.
    private var laneSweepThreshold = 64
    private var random: SplitMix64
    /// Whether ``shutDown(now:)`` ran: no effect starts any more.
    private(set) var isShutDown = false

    /// Creates an empty machine; `randomSeed` seeds the draws of ``EffectQueueDelay/random(_:)``.
    init(randomSeed: UInt64) {
        random = SplitMix64(seed: randomSeed)
    }

    /// How many effects are started or waiting.
    var count: Int { records.count }

    /// Whether the effect is still alive (not cancelled, not finished).
    func isAlive(_ instance: EffectInstanceID) -> Bool {
        records[instance] != nil
    }

    // MARK: Transitions

    /// Starts an effect: cancels the effects with the same ID, applies its queue's policy, and
    /// records it. Once it decides ``StartDecision/run(_:)``, attach the effect's task with
    /// ``attach(_:to:)`` before anything else reads the record.
    mutating func start(
        id: AnyEffectID?, queue: AnyEffectQueue?, now: () -> Duration
    ) -> (decision: StartDecision, aftermath: Aftermath) {
        start(tags: EffectTags(id: id, queue: queue), now: now)
    }

    /// ``start(id:queue:now:)`` with the ID and queue in the box the effect's work holds.
    mutating func start(tags: EffectTags?, now: () -> Duration) -> (decision: StartDecision, aftermath: Aftermath) {
        let id = tags?.id, queue = tags?.queue
        var aftermath = Aftermath()
        guard !isShutDown else { return (.reject, aftermath) }
        if let id {
            for instance in instancesByID[id] ?? [] {
                remove(instance, cancelling: true, now: now, aftermath: &aftermath)
            }
        }

        let instance = EffectInstanceID(rawValue: nextInstance)
        nextInstance += 1
        var phase = Phase.admitted(start: now())
        if let queue {
            update(queue, now: now, aftermath: &aftermath)
            if lanes[queue] == nil, lanes.count >= laneSweepThreshold { sweepLanes(now: now) }
            // `.runNewest` makes room: its oldest effects are removed as any other, through the
            // table, with no copy of the lane held meanwhile.
            while let oldest = oldestToMakeRoom(in: queue) {
                remove(oldest, cancelling: true, now: now, aftermath: &aftermath)
            }
            // Out of the table while it changes: shared with it, its lists would be copied for
            // each effect.
            var lane = lanes.removeValue(forKey: queue) ?? Lane(queue)
            let isFull = lane.activeCount >= lane.maxCount
            switch lane.policy {
            case .runOldest(_, .discardNew) where isFull:
                lanes[queue] = lane
                return (.discard, aftermath)
            case .runOldest(_, .suspendNew) where isFull:
                phase = .waiting
                lane.waiting.append(instance)
            case .runNewest, .runOldest:
                phase = .admitted(start: nextStart(in: &lane, for: instance, now: now))
                lane.active.append(instance)
                lane.activeCount += 1
            }
            lanes[queue] = lane
        }
        if let id {
            instancesByID[id, default: []].append(instance)
        }
        records[instance] = Record(tags: tags, task: nil, phase: phase)
        return (.run(instance), aftermath)
    }

    /// Gives the effect its task. Returns the task back, to cancel, when the effect is no
    /// longer alive.
    mutating func attach(_ task: TaskHandle, to instance: EffectInstanceID) -> TaskHandle? {
        guard records[instance] != nil else { return task }
        records[instance]!.task = task
        return nil
    }

    /// Makes the lane of `queue` follow `queue`'s policy and delay; a raised limit admits
    /// waiting effects. See `Effect.updateQueue(_:)`.
    mutating func updateQueue(_ queue: AnyEffectQueue, now: () -> Duration) -> Aftermath {
        var aftermath = Aftermath()
        update(queue, now: now, aftermath: &aftermath)
        return aftermath
    }

    /// Cancels every effect with one of `ids`.
    mutating func cancel(ids: [AnyEffectID], now: () -> Duration) -> Aftermath {
        var aftermath = Aftermath()
        for id in ids {
            for instance in instancesByID[id] ?? [] {
                remove(instance, cancelling: true, now: now, aftermath: &aftermath)
            }
        }
        return aftermath
    }

    /// Whether an effect with `id` is running or waiting in a queue.
    func hasEffect(withID id: AnyEffectID) -> Bool {
        !(instancesByID[id]?.isEmpty ?? true)
    }

    /// Cancels one effect (its task was cancelled, or it is no longer wanted).
    mutating func cancel(_ instance: EffectInstanceID, now: () -> Duration) -> Aftermath {
        var aftermath = Aftermath()
        remove(instance, cancelling: true, now: now, aftermath: &aftermath)
        return aftermath
    }

    /// Cancels every effect; new ones still start. The lanes keep only their delays' memory.
    mutating func cancelAll(now: () -> Duration) -> Aftermath {
        var aftermath = Aftermath()
        // All at once: one by one, each effect removed from a slot would admit a waiting one,
        // only to cancel it next.
        for record in records.values {
            if let task = record.task { aftermath.tasksToCancel.append(task) }
            if case let .parked(continuation) = record.phase { aftermath.continuationsToResume.append((continuation, nil)) }
        }
        lanes = lanes.compactMapValues { lane in
            var lane = lane
            lane.takeBackEveryStart(now: now)
            lane.active = FIFOQueue()
            lane.activeCount = 0
            lane.staleActiveCount = 0
            lane.waiting = FIFOQueue()
            lane.staleWaitingCount = 0
            return lane.isForgettable(now: now) ? nil : lane
        }
        records = [:]
        instancesByID = [:]
        return aftermath
    }

    /// Cancels every effect, for good: the host is gone.
    mutating func shutDown(now: () -> Duration) -> Aftermath {
        isShutDown = true
        return cancelAll(now: now)
    }

    /// Records that an effect's work ended; frees its slot.
    mutating func finish(_ instance: EffectInstanceID, now: () -> Duration) -> Aftermath {
        var aftermath = Aftermath()
        remove(instance, cancelling: false, now: now, aftermath: &aftermath)
        return aftermath
    }

    /// The effect's task began: whether it starts, and when.
    mutating func taskBegan(_ instance: EffectInstanceID) -> TaskStart {
        guard var record = records[instance] else { return .cancelled }
        guard case let .admitted(start) = record.phase else { return .waitForSlot }
        record.phase = .started(start: start)
        records[instance] = record
        return .at(start)
    }

    /// The effect's task waits for a slot with `continuation`: either it has one already (or
    /// was cancelled meanwhile), or the continuation is kept until it gets one.
    mutating func park(_ instance: EffectInstanceID, continuation: Continuation) -> ParkDecision {
        guard var record = records[instance] else { return .resume(nil) }
        switch record.phase {
        case let .admitted(start):
            record.phase = .started(start: start)
            records[instance] = record
            return .resume(start)
        case .waiting:
            record.phase = .parked(continuation)
            records[instance] = record
            return .parked
        case .parked, .started:
            preconditionFailure("an effect asked to start twice")
        }
    }

    // MARK: Rules

    /// Gives an existing lane `queue`'s policy and delay; a raised limit admits waiting effects.
    private mutating func update(_ queue: AnyEffectQueue, now: () -> Duration, aftermath: inout Aftermath) {
        // Out of the table while it changes: shared with it, its lists would be copied.
        guard var lane = lanes.removeValue(forKey: queue) else { return }
        lane.policy = queue.base.effectQueuePolicy
        lane.delay = queue.base.effectQueueDelay
        admitWaiting(in: &lane, now: now, aftermath: &aftermath)
        if !lane.isForgettable(now: now) { lanes[queue] = lane }
    }

    /// The start time of the next effect of `lane`, `instance`: now, or the queue's delay after
    /// the last start.
    private mutating func nextStart(in lane: inout Lane, for instance: EffectInstanceID, now: () -> Duration) -> Duration {
        let now = now()
        lane.passStarts(upTo: now)
        var start = now
        if let last = lane.lastStart {
            start = max(now, last + lane.delay.duration(using: &random))
        }
        lane.record(start, of: instance, now: now)
        return start
    }

    /// Removes an effect from every table; frees its queue slot for the next waiting effect.
    private mutating func remove(
        _ instance: EffectInstanceID, cancelling: Bool, now: () -> Duration, aftermath: inout Aftermath
    ) {
        guard let record = records.removeValue(forKey: instance) else { return }
        // Once idle, give back the tables' storage: a burst of 100,000 effects would otherwise
        // keep megabytes of empty buckets for as long as the machine lives.
        defer {
            if records.isEmpty && records.capacity > 64 {
                records = [:]
                instancesByID = [:]
            }
        }
        if cancelling, let task = record.task { aftermath.tasksToCancel.append(task) }
        if case let .parked(continuation) = record.phase { aftermath.continuationsToResume.append((continuation, nil)) }
        if let id = record.id {
            instancesByID[id]?.removeAll { $0 == instance }
            if instancesByID[id]?.isEmpty == true { instancesByID[id] = nil }
        }
        // Out of the table while it changes: shared with it, its lists would be copied.
        guard let queue = record.queue, var lane = lanes.removeValue(forKey: queue) else { return }
        // Only a lane with a delay has starts to come, and reads the clock for them.
        if let start = record.phase.start, !lane.futureStarts.isEmpty {
            let now = now()
            lane.passStarts(upTo: now)
            // A start that has passed is kept, though the clock read for this removal may be
            // earlier than the one that passed it (each is read before the lock).
            let hasPassed = lane.lastPastStart.map { start <= $0 } ?? false
            if start > now, !hasPassed { lane.takeBackStart(of: instance) }
        }
        if record.phase.start != nil {
            removeFromSlots(instance, in: &lane)
            admitWaiting(in: &lane, now: now, aftermath: &aftermath)
        } else {
            // Still in `waiting`, skipped when its turn comes. Compacted once half of it is
            // removed ones, which keeps the cost O(1) amortized and the list at most twice
            // the effects really waiting.
            lane.staleWaitingCount += 1
            if lane.staleWaitingCount >= 16, lane.staleWaitingCount * 2 >= lane.waiting.count {
                lane.waiting.removeAll { records[$0] == nil }
                lane.staleWaitingCount = 0
            }
        }
        if !lane.isForgettable(now: now) { lanes[queue] = lane }
    }

    /// The oldest effect of `queue`'s lane, when it is a full `.runNewest` lane: the one a new
    /// effect pushes out.
    private func oldestToMakeRoom(in queue: AnyEffectQueue) -> EffectInstanceID? {
        guard let lane = lanes[queue], case .runNewest = lane.policy, lane.activeCount >= lane.maxCount else { return nil }
        return lane.active.first
    }

    /// Takes `instance`, removed from `records`, out of `lane`'s slots: at once if it is the
    /// first or the last, with the removed ones behind or before it; otherwise left in place.
    private func removeFromSlots(_ instance: EffectInstanceID, in lane: inout Lane) {
        lane.activeCount -= 1
        if lane.active.first == instance {
            _ = lane.active.popFirst()
            while let first = lane.active.first, records[first] == nil {
                _ = lane.active.popFirst()
                lane.staleActiveCount -= 1
            }
        } else if lane.active.last == instance {
            _ = lane.active.popLast()
            while let last = lane.active.last, records[last] == nil {
                _ = lane.active.popLast()
                lane.staleActiveCount -= 1
            }
        } else {
            lane.staleActiveCount += 1
            if lane.staleActiveCount >= 16, lane.staleActiveCount * 2 >= lane.active.count {
                lane.active.removeAll { records[$0] == nil }
                lane.staleActiveCount = 0
            }
        }
    }

    /// Drops the lanes with nothing in them whose delay has passed; the next sweep comes when
    /// there are twice as many lanes left (amortized: a constant cost per lane made).
    private mutating func sweepLanes(now: () -> Duration) {
        let time = now()
        lanes = lanes.filter { !$0.value.isForgettable(now: { time }) }
        laneSweepThreshold = max(64, 2 * lanes.count)
    }

    /// How many queues' lanes are kept (for tests of the footprint).
    var laneCount: Int { lanes.count }

    /// Gives free slots to waiting effects, oldest first.
    private mutating func admitWaiting(in lane: inout Lane, now: () -> Duration, aftermath: inout Aftermath) {
        while lane.activeCount < lane.maxCount, let next = lane.waiting.popFirst() {
            guard var record = records[next] else {
                lane.staleWaitingCount -= 1
                continue
            }
            let start = nextStart(in: &lane, for: next, now: now)
            lane.active.append(next)
            lane.activeCount += 1
            if case let .parked(continuation) = record.phase {
                record.phase = .started(start: start)
                aftermath.continuationsToResume.append((continuation, start))
            } else {
                record.phase = .admitted(start: start)
            }
            records[next] = record
        }
    }
}

// MARK: Inspection, for tests

extension EffectRuntimeStateMachine {
    /// The effects of `queue`'s lane that hold a slot and those waiting for one, oldest first;
    /// `nil` when the lane is forgotten.
    func lane(of queue: AnyEffectQueue) -> (active: [EffectInstanceID], waiting: [EffectInstanceID])? {
        lanes[queue].map { lane in
            (lane.active.elements.filter { records[$0] != nil }, lane.waiting.elements.filter { records[$0] != nil })
        }
    }

    /// The room `queue`'s lane keeps for waiting effects, how many of its entries are effects
    /// removed meanwhile, and how many elements its list has moved; `nil` when the lane is
    /// forgotten.
    func waitingStorage(of queue: AnyEffectQueue) -> (capacity: Int, stale: Int, moves: Int)? {
        lanes[queue].map { ($0.waiting.capacity, $0.staleWaitingCount, $0.waiting.moveCount) }
    }

    /// How many entries `queue`'s list of effects holding a slot has, how many of them are
    /// effects removed meanwhile, and how many elements the list has moved; `nil` when the lane
    /// is forgotten.
    func slotStorage(of queue: AnyEffectQueue) -> (count: Int, stale: Int, moves: Int)? {
        lanes[queue].map { ($0.active.count, $0.staleActiveCount, $0.active.moveCount) }
    }

    /// How many starts still to come `queue`'s lane keeps, to take back those whose effects are
    /// removed first (some already taken back and not yet dropped); `nil` when the lane is
    /// forgotten.
    func pendingStartCount(of queue: AnyEffectQueue) -> Int? {
        lanes[queue].map { $0.futureStarts.count }
    }

    /// Whether the effect's task is parked, waiting for a slot.
    func isParked(_ instance: EffectInstanceID) -> Bool {
        if case .parked = records[instance]?.phase { true } else { false }
    }
}
