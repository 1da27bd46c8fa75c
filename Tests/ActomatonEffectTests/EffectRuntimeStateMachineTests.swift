@testable import ActomatonEffect
import ComputeOffThePool
import ActomatonCore
import Testing

/// The state machine with plain values for its tasks and continuations: each is its effect's
/// key. No task, no clock, no lock.
private typealias Machine = EffectRuntimeStateMachine<Int, Int>

/// One transition, as the storage would make it; a run is kept to replay it without the model.
private enum Step {
    case start(AnyEffectID?, AnyEffectQueue?)
    case cancelIDs([AnyEffectID])
    case cancel(EffectInstanceID)
    case cancelAll
    case taskBegan(EffectInstanceID)
    case park(EffectInstanceID, continuation: Int)
    case finish(EffectInstanceID)
}

/// Where the simulated task of one effect is.
private enum TaskPhase: Equatable {
    /// Created; it has not run yet.
    case notBegun
    /// `taskBegan` told it to wait for a slot; it is about to park.
    case askingForSlot
    /// Parked: its continuation is in the machine.
    case parked
    /// It got its start time and runs its work.
    case running
}

/// Checks made hundreds of thousands of times: cheaper than `#expect` when they pass, and
/// only the first ten failures are recorded.
private final class Failures {
    private(set) var count = 0

    func verify(_ condition: Bool, _ message: @autoclosure () -> String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        guard !condition else { return }
        count += 1
        if count <= 10 { Issue.record(Comment(rawValue: message()), sourceLocation: sourceLocation) }
    }
}

/// Drives the pure state machine and the stress test's model side by side, checking after
/// every transition that they agree, and that the machine hands back exactly the tasks to
/// cancel and the continuations to resume that the rules call for.
private struct ModelRun {
    var machine = Machine(randomSeed: 7)
    var model = EffectRulesModel()
    var random: SplitMix64
    /// The time, in milliseconds of the run: one per transition.
    var now = Duration.zero
    var steps: [Step] = []

    var instances: [Int: EffectInstanceID] = [:]
    var keys: [EffectInstanceID: Int] = [:]
    /// Effects whose task has not started its work yet (not begun, or asking for a slot).
    var pending: [Int] = []
    var tasks: [Int: TaskPhase] = [:]
    /// When each effect got its slot: the start time the machine must give it (no queue delays).
    var admittedAt: [Int: Duration] = [:]
    let queues = StressQueue.allCases.map { ($0, AnyEffectQueue($0)) }

    /// The checks that failed.
    let failures = Failures()

    init(seed: UInt64) {
        random = SplitMix64(seed: seed)
    }


    private mutating func tick() {
        now += .milliseconds(1)
    }

    // MARK: Operations

    mutating func start(_ key: Int, id: Int?, queue: StressQueue?) {
        tick()
        let anyID = id.map { AnyEffectID(StressID(value: $0)) }
        let anyQueue = queue.map { AnyEffectQueue($0) }
        steps.append(.start(anyID, anyQueue))
        let aliveBefore = Set(model.alive.keys)
        let time = now
        let (decision, aftermath) = machine.start(id: anyID, queue: anyQueue, now: { time })
        let accepted = model.start(key, id: id, queue: queue)
        switch decision {
        case let .run(instance):
            failures.verify(accepted, "effect \(key): the model discards it, the machine runs it")
            instances[key] = instance
            keys[instance] = key
            failures.verify(machine.attach(key, to: instance) == nil)
            tasks[key] = .notBegun
            pending.append(key)
        case .discard:
            failures.verify(!accepted, "effect \(key): the machine discards it, the model runs it")
        case .reject:
            Issue.record("effect \(key): rejected before the shut-down")
        }
        check(aftermath, aliveBefore: aliveBefore, completed: nil)
    }

    mutating func cancel(id: Int) {
        tick()
        let ids = [AnyEffectID(StressID(value: id))]
        steps.append(.cancelIDs(ids))
        let aliveBefore = Set(model.alive.keys)
        let time = now
        let aftermath = machine.cancel(ids: ids, now: { time })
        model.cancel(id: id)
        check(aftermath, aliveBefore: aliveBefore, completed: nil)
    }

    /// The task `send` returned for a random live effect is cancelled.
    mutating func cancelTask() {
        let alive = model.alive.keys.sorted()
        guard !alive.isEmpty else { return }
        let key = alive[Int(random.next() % UInt64(alive.count))]
        guard let instance = instances[key] else { return }
        tick()
        steps.append(.cancel(instance))
        let aliveBefore = Set(model.alive.keys)
        let time = now
        let aftermath = machine.cancel(instance, now: { time })
        model.cancel(key: key)
        check(aftermath, aliveBefore: aliveBefore, completed: nil)
    }

    mutating func cancelAll() {
        tick()
        steps.append(.cancelAll)
        let aliveBefore = Set(model.alive.keys)
        let time = now
        let aftermath = machine.cancelAll(now: { time })
        model.cancelAll()
        check(aftermath, aliveBefore: aliveBefore, completed: nil)
    }

    /// A random pending task takes its next step: it begins, or it parks.
    mutating func advanceATask() {
        guard !pending.isEmpty else { return }
        let index = Int(random.next() % UInt64(pending.count))
        let key = pending[index]
        if step(key) { pending.swapAt(index, pending.count - 1); pending.removeLast() }
    }

    /// Takes the task of `key` one step; returns whether it is no longer pending.
    private mutating func step(_ key: Int) -> Bool {
        let instance = instances[key]!
        let effect = model.alive[key]
        switch tasks[key] {
        case .notBegun:
            steps.append(.taskBegan(instance))
            let start = machine.taskBegan(instance)
            switch effect {
            case nil:
                failures.verify(start == .cancelled, "effect \(key): cancelled, but its task is told \(start)")
                tasks[key] = nil
                return true
            case let effect? where effect.isActive:
                failures.verify(start == .at(admittedAt[key]!), "effect \(key): holds a slot, but its task is told \(start)")
                tasks[key] = .running
                return true
            case _?:
                failures.verify(start == .waitForSlot, "effect \(key): waiting, but its task is told \(start)")
                tasks[key] = .askingForSlot
                return false
            }
        case .askingForSlot:
            steps.append(.park(instance, continuation: key))
            let decision = machine.park(instance, continuation: key)
            switch (effect, decision) {
            case (nil, .resume(nil)):
                tasks[key] = nil
            case let (effect?, .resume(start?)) where effect.isActive:
                failures.verify(start == admittedAt[key]!, "effect \(key): resumed to start at \(start)")
                tasks[key] = .running
            case (let effect?, .parked) where !effect.isActive:
                tasks[key] = .parked
            default:
                Issue.record("effect \(key): parking decided \(decision), the model has \(String(describing: effect))")
                tasks[key] = nil
            }
            return true
        case .parked, .running, nil:
            Issue.record("effect \(key): not pending")
            return true
        }
    }

    /// A random effect holding a slot ends its work normally.
    mutating func finishOne() {
        guard let key = model.runnable(using: &random), let instance = instances[key] else { return }
        // Its task gets to its work first.
        if tasks[key] == .notBegun || tasks[key] == .askingForSlot {
            while !step(key) {}
            pending.removeAll { $0 == key }
        }
        failures.verify(tasks[key] == .running, "effect \(key): holds a slot, but its task is \(String(describing: tasks[key]))")
        tick()
        steps.append(.finish(instance))
        let aliveBefore = Set(model.alive.keys)
        let time = now
        let aftermath = machine.finish(instance, now: { time })
        model.complete(key)
        tasks[key] = nil
        check(aftermath, aliveBefore: aliveBefore, completed: key)
    }

    // MARK: Checks

    /// Checks what one transition handed back, and that the machine and the model agree after it.
    private mutating func check(_ aftermath: Machine.Aftermath, aliveBefore: Set<Int>, completed: Int?) {
        var cancelledNow = aliveBefore.subtracting(model.alive.keys)
        if let completed { cancelledNow.remove(completed) }
        failures.verify(cancelledNow.isSubset(of: model.cancelled))

        // Every effect cancelled by this transition has its task cancelled, once; no other has.
        let cancelledTasks = aftermath.tasksToCancel
        failures.verify(cancelledTasks.count == Set(cancelledTasks).count, "a task cancelled twice: \(cancelledTasks)")
        failures.verify(Set(cancelledTasks) == cancelledNow, "tasks cancelled \(cancelledTasks), effects cancelled \(cancelledNow)")

        // Effects that just got a slot: they start now.
        for (key, effect) in model.alive where effect.isActive && admittedAt[key] == nil { admittedAt[key] = now }

        // Parked tasks are resumed once: with their start time when they got a slot (even if
        // cancelled by the same transition), with nil when cancelled while waiting.
        var resumed: Set<Int> = []
        for (key, start) in aftermath.continuationsToResume {
            failures.verify(tasks[key] == .parked, "effect \(key): resumed, but its task is \(String(describing: tasks[key]))")
            failures.verify(resumed.insert(key).inserted, "effect \(key): resumed twice")
            if let start {
                failures.verify(start == now, "effect \(key): resumed to start at \(start), at \(now)")
                failures.verify(model.alive[key]?.isActive == true || cancelledNow.contains(key))
                tasks[key] = .running
            } else {
                failures.verify(cancelledNow.contains(key), "effect \(key): resumed as cancelled, but it was not")
                tasks[key] = nil
            }
        }
        for key in cancelledNow {
            failures.verify(tasks[key] != .parked, "effect \(key): cancelled, but its task is still parked")
            if tasks[key] == .running { tasks[key] = nil } // its work ends, cancelled
        }
        for (key, effect) in model.alive where effect.isActive {
            failures.verify(tasks[key] != .parked, "effect \(key): holds a slot, but its task is still parked")
        }

        // The same effects are alive, and each lane holds the same ones, in the same order.
        failures.verify(machine.count == model.alive.count)
        for key in cancelledNow { failures.verify(!machine.isAlive(instances[key]!), "effect \(key): alive in the machine") }
        for (queue, anyQueue) in queues {
            let lane = machine.lane(of: anyQueue)
            let active = (lane?.active ?? []).map { keys[$0]! }
            let waiting = (lane?.waiting ?? []).map { keys[$0]! }
            failures.verify(active == model.active[queue, default: []], "\(queue): slots")
            failures.verify(waiting == model.waiting[queue, default: []], "\(queue): waiting")
        }
    }
}

/// Runs `steps` on a fresh machine, with nothing checked: the machine's own speed.
private func replay(_ steps: [Step]) -> Machine {
    var machine = Machine(randomSeed: 7)
    var time = Duration.zero
    for step in steps {
        time += .milliseconds(1)
        let now = time
        switch step {
        case let .start(id, queue):
            if case let (.run(instance), _) = machine.start(id: id, queue: queue, now: { now }) {
                _ = machine.attach(0, to: instance)
            }
        case let .cancelIDs(ids): _ = machine.cancel(ids: ids, now: { now })
        case let .cancel(instance): _ = machine.cancel(instance, now: { now })
        case .cancelAll: _ = machine.cancelAll(now: { now })
        case let .taskBegan(instance): _ = machine.taskBegan(instance)
        case let .park(instance, continuation): _ = machine.park(instance, continuation: continuation)
        case let .finish(instance): _ = machine.finish(instance, now: { now })
        }
    }
    return machine
}

/// A queue whose `maxCount` can change: `.lane(n)` values are one lane whatever their `n`.
private struct ResizableLane: EffectQueue {
    var maxCount: Int
    var delay: EffectQueueDelay = .none
    var effectQueuePolicy: EffectQueuePolicy { .runOldest(maxCount: maxCount, .suspendNew) }
    var effectQueueDelay: EffectQueueDelay { delay }
    static func == (lhs: ResizableLane, rhs: ResizableLane) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}

@Suite("EffectRuntimeStateMachine: the effect rules, with no task and no clock")
struct EffectRuntimeStateMachineTests {
    /// 100,000 effects with random IDs, queue policies and cancellations — the task-level
    /// stress test's mix, plus cancelled `send` tasks, `cancelAll` and tasks that begin and
    /// park in any order — checked against the same model after every transition. Prints the
    /// transitions per second, checked and replayed alone.
    @Test func randomTransitionsFollowTheModel() async {
        let effectCount = 100_000
        var run = ModelRun(seed: 20_261_121)
        let clock = ContinuousClock()
        let checked = await clock.measure {
            for key in 0..<effectCount {
                // Computes for seconds: lets the tests waiting for the pool's threads run meanwhile.
                if key % 1_000 == 0 { await Task.yield() }
                let id = run.random.next() % 5 < 2 ? nil : Int(run.random.next() % 40)
                let queue = run.random.next() % 5 < 2 ? nil : StressQueue.allCases[Int(run.random.next() % UInt64(StressQueue.allCases.count))]
                run.start(key, id: id, queue: queue)
                if run.random.next() % 10 == 0 { run.cancel(id: Int(run.random.next() % 40)) }
                if run.random.next() % 50 == 0 { run.cancelTask() }
                if run.random.next() % 2_000 == 0 { run.cancelAll() }
                while run.random.next() % 3 != 0 { run.advanceATask() }
                while run.model.alive.count > 32 || run.random.next() % 3 == 0 {
                    run.finishOne()
                    if run.model.alive.isEmpty { break }
                }
            }
            while !run.model.alive.isEmpty { run.finishOne() }
            // The tasks of effects cancelled before their work started begin late, and learn it.
            while !run.pending.isEmpty { run.advanceATask() }
        }
        #expect(run.failures.count == 0)
        #expect(run.machine.count == 0)
        #expect(run.model.delivered.count + run.model.cancelled.count == effectCount)
        #expect(run.tasks.isEmpty, "tasks left: \(run.tasks.prefix(5))")

        // Shut down, nothing starts any more.
        let time = run.now
        #expect(run.machine.shutDown(now: { time }).isEmpty)
        #expect(run.machine.start(id: nil, queue: nil, now: { time }).decision == .reject)

        let steps = run.steps
        var replayed: Machine?
        let alone = clock.measure { replayed = replay(steps) }
        #expect(replayed?.count == 0)

        let perSecond = { (duration: Duration) in
            Int(Double(steps.count) / (Double(duration.components.attoseconds) / 1e18 + Double(duration.components.seconds)))
        }
        print("EffectRuntimeStateMachine: \(steps.count) transitions; checked against the model in \(checked) (\(perSecond(checked)) per second); replayed alone in \(alone) (\(perSecond(alone)) per second)")
    }

    /// After a burst, an idle machine gives its tables' storage back (the issue measured 4–16 MB
    /// kept after 100,000 effects); it kept it before.
    @Test func anIdleMachineGivesItsStorageBack() {
        var machine = Machine(randomSeed: 0)
        var instances: [EffectInstanceID] = []
        for key in 0..<10_000 {
            guard case let (.run(instance), _) = machine.start(id: nil, queue: nil, now: { .zero }) else { return }
            _ = machine.attach(key, to: instance)
            instances.append(instance)
        }
        #expect(machine.recordCapacity >= 10_000)
        for instance in instances.dropLast() { _ = machine.finish(instance, now: { .zero }) }
        #expect(machine.recordCapacity >= 10_000, "still busy: the storage stays")
        _ = machine.finish(instances.last!, now: { .zero })
        #expect(machine.recordCapacity < 64)
    }

    /// Regression: a `.suspendNew` backlog of n effects cost O(n²) under the lock, twice: each
    /// new effect copied the lane's whole waiting list to append to it (the lane, read out of
    /// its table, shared its storage with it), and each slot freed took the next effect with
    /// `Array.removeFirst()`, which shifts the rest. A backlog 200 times larger now takes about
    /// 200 times as long to fill and to drain; before, thousands of times as long (O(n²): 40,000
    /// times). The bound, 4,000, sits a factor of 10 from either, for a loaded machine.
    @Test func aLargeSuspendedBacklogFillsAndDrainsInLinearTime() async {
        await computeOffThePool {
            func fillAndDrainTimes(_ count: Int) -> (fill: Duration, drain: Duration) {
                var machine = Machine(randomSeed: 0)
                let one = AnyEffectQueue(ResizableLane(maxCount: 1))
                var instances: [EffectInstanceID] = []
                instances.reserveCapacity(count)
                let clock = ContinuousClock()
                let fill = clock.measure {
                    for _ in 0..<count {
                        guard case let (.run(instance), _) = machine.start(id: nil, queue: one, now: { .zero }) else { break }
                        instances.append(instance)
                    }
                }
                // Each finish admits the next waiting effect.
                let drain = clock.measure {
                    for instance in instances { _ = machine.finish(instance, now: { .zero }) }
                }
                #expect(machine.count == 0)
                return (fill, drain)
            }
            let baseline = (0..<5).map { _ in fillAndDrainTimes(1_000) }
            let large = (0..<2).map { _ in fillAndDrainTimes(200_000) }
            let fillRatio = large.map(\.fill).min()! / baseline.map(\.fill).min()!
            let drainRatio = large.map(\.drain).min()! / baseline.map(\.drain).min()!
            print("EffectRuntimeStateMachine: a backlog of 200,000 took \(fillRatio)x the time of 1,000 to fill, \(drainRatio)x to drain")
            #expect(fillRatio < 4_000, "filling 200,000 took \(fillRatio)x the time of 1,000")
            #expect(drainRatio < 4_000, "draining 200,000 took \(drainRatio)x the time of 1,000")
        }
    }

    /// Regression: a lane of many slots copied its list of running effects (and, with a delay,
    /// its starts to come) for each effect it started, the lane read out of its table sharing
    /// them with it, and shifted the list for each effect that ended: O(n²) for n. Before, 100,000
    /// took 450 times as long to start as 1,000 (2,700 times with a delay), and 330 times as long
    /// to finish; now about 100 times, as the effects' count (500 times once, beside the other
    /// tests: the bound, 1,000, is for a loaded machine). Finishing is also counted: the list
    /// moves at most about 2n elements to take n out of its middle.
    @Test(arguments: [EffectQueueDelay.none, .constant(0.001)])
    func aLaneOfManySlotsStartsAndFinishesInLinearTime(delay: EffectQueueDelay) async {
        await computeOffThePool {
            func times(_ count: Int) -> (start: Duration, finish: Duration) {
                var machine = Machine(randomSeed: 0)
                let wide = AnyEffectQueue(ResizableLane(maxCount: .max, delay: delay))
                var instances: [EffectInstanceID] = []
                instances.reserveCapacity(count)
                let clock = ContinuousClock()
                let start = clock.measure {
                    for _ in 0..<count {
                        if case let (.run(instance), _) = machine.start(id: nil, queue: wide, now: { .zero }) { instances.append(instance) }
                    }
                }
                #expect(machine.count == count)
                // A quarter oldest first; the rest from the middle: every other one, then the others.
                let rest = instances.dropFirst(count / 4)
                let order = Array(instances.prefix(count / 4)) + rest.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
                    + rest.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
                var largest = (count: 0, stale: 0, moves: 0)
                let finish = clock.measure {
                    for (index, instance) in order.enumerated() {
                        _ = machine.finish(instance, now: { .zero })
                        if index == count / 2 { largest = machine.slotStorage(of: wide) ?? largest }
                    }
                }
                #expect(machine.count == 0)
                #expect(largest.count <= 2 * (count - count / 2) + 16, "\(largest.count) entries for \(count - count / 2) effects")
                #expect(largest.moves <= 2 * count, "\(largest.moves) elements moved to finish \(count / 2)")
                #expect(machine.lane(of: wide)?.active.isEmpty ?? true)
                return (start, finish)
            }
            let baseline = (0..<5).map { _ in times(1_000) }
            let large = (0..<3).map { _ in times(100_000) }
            let startRatio = large.map(\.start).min()! / baseline.map(\.start).min()!
            let finishRatio = large.map(\.finish).min()! / baseline.map(\.finish).min()!
            print("EffectRuntimeStateMachine: 100,000 in one lane took \(startRatio)x the time of 1,000 to start, "
                  + "\(finishRatio)x to finish (delay \(delay))")
            #expect(startRatio < 1_000, "start: \(startRatio)x")
            #expect(finishRatio < 1_000, "finish: \(finishRatio)x")
        }
    }

    /// Regression (review): making room in a `.runNewest` lane, the lane read out of its table
    /// still shared its lists with it while the oldest effect was removed through the table, so
    /// each start copied them: O(slots) for each effect. With a delay, each effect a start
    /// pushed out had its start still to come, and the set of starts taken back was copied
    /// whole. A start into a full lane of 30,000 slots cost 4–6 times one into 1,000 with a delay
    /// (2.5 times allowed, each figure the best of the rounds run); now 0.6–1 times.
    @Test(arguments: [EffectQueueDelay.none, .constant(1)])
    func makingRoomInAWideRunNewestLaneCostsTheSameWhateverItsWidth(delay: EffectQueueDelay) async {
        struct Newest: EffectQueue {
            let width: Int
            let delay: EffectQueueDelay
            var effectQueuePolicy: EffectQueuePolicy { .runNewest(maxCount: width) }
            var effectQueueDelay: EffectQueueDelay { delay }
        }
        await computeOffThePool {
            func timePerStart(width: Int) -> Duration {
                var machine = Machine(randomSeed: 0)
                let queue = AnyEffectQueue(Newest(width: width, delay: delay))
                for _ in 0..<width { _ = machine.start(id: nil, queue: queue, now: { .zero }) }
                // Each start now pushes the oldest out: as many starts for either width, so that
                // both runs last as long and meet the same load.
                let starts = 30_000
                let time = ContinuousClock().measure {
                    for _ in 0..<starts { _ = machine.start(id: nil, queue: queue, now: { .zero }) }
                }
                #expect(machine.count == width)
                return time / starts
            }
            // Alternated, each the best so far, until the ratio is under the bound or 20 rounds
            // are done: with the whole suite on two cores, five rounds in a row could all meet a
            // busy spell (3.1 times, a run of `make test`). The defect cost 4-6 times every round.
            var (narrow, wide) = (Duration.seconds(1_000), Duration.seconds(1_000))
            for _ in 0..<20 {
                narrow = min(narrow, timePerStart(width: 1_000))
                wide = min(wide, timePerStart(width: 30_000))
                if wide / narrow < 2.5 { break }
            }
            print("EffectRuntimeStateMachine: a start into a full runNewest lane of 30,000 cost \(wide / narrow)x one into 1,000 (delay \(delay))")
            #expect(wide / narrow < 2.5, "\(wide / narrow)x")
        }
    }

    /// A lane of one slot holding `count` effects: the first in the slot, the rest waiting.
    private func backlog(of count: Int) -> (machine: Machine, queue: AnyEffectQueue, instances: [EffectInstanceID]) {
        var machine = Machine(randomSeed: 0)
        let one = AnyEffectQueue(ResizableLane(maxCount: 1))
        var instances: [EffectInstanceID] = []
        instances.reserveCapacity(count)
        for _ in 0..<count {
            guard case let (.run(instance), _) = machine.start(id: nil, queue: one, now: { .zero }) else { break }
            instances.append(instance)
        }
        return (machine, one, instances)
    }

    /// Regression (review): cancelling a `.suspendNew` backlog took each effect out of the lane's
    /// waiting list, shifting the rest: O(n²) under the lock (1.2 s for 40,000), one by one and
    /// with `cancelAll`. One by one, the elements the list moves are counted: at most about 2n
    /// (150,000 allowed) now, n²/2 before. `cancelAll` is timed: a backlog 100 times larger takes about 100 times
    /// as long now, 9,000 times before; the bound, 3,000, leaves a factor of 30 for a loaded
    /// machine.
    @Test func aLargeSuspendedBacklogIsCancelledInLinearTime() async throws {
        try await computeOffThePool {
            var (machine, queue, instances) = backlog(of: 50_001)
            for instance in instances.dropFirst() { _ = machine.cancel(instance, now: { .zero }) }
            #expect(machine.count == 1, "the effect in the slot stays")
            let moves = try #require(machine.waitingStorage(of: queue)).moves
            #expect(moves <= 150_000, "\(moves) elements moved to cancel 50,000")

            let clock = ContinuousClock()
            func cancelAllTime(_ count: Int) -> Duration {
                var full = backlog(of: count).machine
                let time = clock.measure { _ = full.cancelAll(now: { .zero }) }
                #expect(full.count == 0)
                return time
            }
            let baseline = (0..<5).map { _ in cancelAllTime(500) }.min()!
            let large = (0..<3).map { _ in cancelAllTime(50_000) }.min()!
            let ratio = large / baseline
            print("EffectRuntimeStateMachine: cancelAll of a backlog of 50,000 took \(ratio)x the time of 500")
            #expect(ratio < 3_000, "cancelAll: \(ratio)x")
        }
    }

    /// Regression (review): a backlog cancelled or drained kept the room of its peak for as long
    /// as its lane lived (a lane read out of its table shared its storage, and an emptied list
    /// kept its capacity); cancelled effects left in the list are compacted away.
    @Test func aBacklogThatWentAwayKeepsNoRoomForIt() async throws {
        try await computeOffThePool {
            var (cancelled, queue, instances) = backlog(of: 100_001)
            for instance in instances.dropFirst() { _ = cancelled.cancel(instance, now: { .zero }) }
            let afterCancelling = try #require(cancelled.waitingStorage(of: queue))
            #expect(afterCancelling.capacity <= 64, "room for \(afterCancelling.capacity) after cancelling")
            #expect(afterCancelling.stale < 32)
            #expect(cancelled.lane(of: queue)?.waiting.isEmpty == true)

            var drained: Machine
            (drained, queue, instances) = backlog(of: 100_001)
            for instance in instances.dropLast() { _ = drained.finish(instance, now: { .zero }) }
            let afterDraining = try #require(drained.waitingStorage(of: queue))
            #expect(afterDraining.capacity <= 64, "room for \(afterDraining.capacity) after draining")
            #expect(drained.lane(of: queue)?.active == [instances.last!])
        }
    }

    /// Effects cancelled while waiting are skipped when a slot frees: the next one still waiting
    /// gets it, in order, whether or not the list was compacted meanwhile.
    @Test func cancelledWaitingEffectsAreSkippedInOrder() {
        for cancelledCount in [1, 15, 16, 40] {
            var (machine, queue, instances) = backlog(of: cancelledCount + 3)
            // Every other waiting one first, then the rest of the first `cancelledCount`.
            let doomed = Array(instances[1...cancelledCount])
            for instance in doomed.enumerated().filter({ $0.offset % 2 == 0 }).map(\.element) {
                _ = machine.cancel(instance, now: { .zero })
            }
            for instance in doomed.enumerated().filter({ $0.offset % 2 == 1 }).map(\.element) {
                _ = machine.cancel(instance, now: { .zero })
            }
            let survivors = Array(instances.suffix(2))
            #expect(machine.lane(of: queue)?.waiting == survivors)
            _ = machine.finish(instances[0], now: { .zero })
            #expect(machine.lane(of: queue)?.active == [survivors[0]], "\(cancelledCount) cancelled")
            #expect(machine.taskBegan(survivors[0]) == .at(.zero))
            _ = machine.finish(survivors[0], now: { .zero })
            #expect(machine.lane(of: queue)?.active == [survivors[1]])
            _ = machine.finish(survivors[1], now: { .zero })
            #expect(machine.lane(of: queue) == nil, "the lane is forgotten")
            #expect(machine.count == 0)
        }
    }

    /// The lanes' queue of waiting effects keeps its order and moves each element at most about
    /// once, where `Array.removeFirst()` moved n²/2 elements to take n.
    @Test func aFIFOQueueKeepsOrderAndMovesFewElements() {
        var queue = FIFOQueue<Int>()
        var taken: [Int] = []
        // Two in, one out, then drained: a backlog that grows while it is served.
        for value in 0..<100_000 {
            queue.append(value)
            if value % 2 == 1, let first = queue.popFirst() { taken.append(first) }
        }
        #expect(queue.count == 50_000)
        while let first = queue.popFirst() { taken.append(first) }
        #expect(taken == Array(0..<100_000))
        #expect(queue.isEmpty)
        #expect(queue.moveCount <= 100_000, "\(queue.moveCount) moves")
    }

    /// A raised limit resumes parked tasks at once, and starts admitted ones; a lowered one
    /// starts nothing new until the lane is below it.
    @Test func aRaisedLimitAdmitsWaitingEffects() throws {
        var machine = Machine(randomSeed: 0)
        let one = AnyEffectQueue(ResizableLane(maxCount: 1))
        var instances: [EffectInstanceID] = []
        for key in 0..<3 {
            let (decision, _) = machine.start(id: nil, queue: one, now: { .zero })
            guard case let .run(instance) = decision else { Issue.record("\(decision)"); return }
            #expect(machine.attach(key, to: instance) == nil)
            instances.append(instance)
        }
        #expect(machine.taskBegan(instances[0]) == .at(.zero))
        #expect(machine.taskBegan(instances[1]) == .waitForSlot)
        guard case .parked = machine.park(instances[1], continuation: 1) else { Issue.record("not parked"); return }
        #expect(machine.isParked(instances[1]))

        let aftermath = machine.updateQueue(AnyEffectQueue(ResizableLane(maxCount: 3)), now: { .seconds(1) })
        #expect(aftermath.tasksToCancel.isEmpty)
        #expect(aftermath.continuationsToResume.map { $0.0 } == [1])
        #expect(aftermath.continuationsToResume.map { $0.1 } == [.seconds(1)])
        #expect(machine.taskBegan(instances[2]) == .at(.seconds(1)), "admitted while its task had not begun")

        // Lowered to 1 with 3 running: a new effect waits until two have finished.
        _ = machine.updateQueue(AnyEffectQueue(ResizableLane(maxCount: 1)), now: { .seconds(2) })
        guard case let (.run(fourth), _) = machine.start(id: nil, queue: one, now: { .seconds(2) }) else { return }
        #expect(machine.finish(instances[0], now: { .seconds(3) }).isEmpty)
        #expect(machine.taskBegan(fourth) == .waitForSlot)
        #expect(machine.finish(instances[1], now: { .seconds(4) }).isEmpty)
        #expect(machine.finish(instances[2], now: { .seconds(5) }).isEmpty)
        guard case let .resume(start) = machine.park(fourth, continuation: 4) else { Issue.record("not admitted"); return }
        #expect(start == .seconds(5))
    }

    /// A queue delay spaces start times apart, from the last start.
    @Test func aQueueDelaySpacesStarts() {
        var machine = Machine(randomSeed: 0)
        let delayed = AnyEffectQueue(ResizableLane(maxCount: 5, delay: .constant(2)))
        var starts: [EffectRuntimeStateMachine<Int, Int>.TaskStart] = []
        for second in [0, 1, 10] {
            guard case let (.run(instance), _) = machine.start(id: nil, queue: delayed, now: { .seconds(second) }) else { return }
            starts.append(machine.taskBegan(instance))
        }
        #expect(starts == [.at(.seconds(0)), .at(.seconds(2)), .at(.seconds(10))])
    }

    /// Regression (review): an effect cancelled before its start came still counted as a start,
    /// so each effect of a throttle's burst (`.runNewest(maxCount: 1)` with a delay, each
    /// cancelling the last before it started) pushed the survivor one more delay away: the
    /// sixth of a burst started at 5 s instead of 1 s.
    @Test func anEffectCancelledBeforeItsStartDoesNotDelayTheNext() {
        struct Throttle: EffectQueue {
            var effectQueuePolicy: EffectQueuePolicy { .runNewest(maxCount: 1) }
            var effectQueueDelay: EffectQueueDelay { .constant(1) }
        }
        var machine = Machine(randomSeed: 0)
        let throttle = AnyEffectQueue(Throttle())
        guard case let (.run(first), _) = machine.start(id: nil, queue: throttle, now: { .zero }) else { Issue.record("not run"); return }
        #expect(machine.taskBegan(first) == .at(.zero))
        _ = machine.finish(first, now: { .milliseconds(10) })
        var starts: [EffectRuntimeStateMachine<Int, Int>.TaskStart] = []
        for _ in 2...6 {
            guard case let (.run(instance), _) = machine.start(id: nil, queue: throttle, now: { .milliseconds(20) }) else { return }
            starts.append(machine.taskBegan(instance))
        }
        #expect(starts == Array(repeating: .at(.seconds(1)), count: 5), "\(starts)")
    }

    /// Regression (review): only the last start given could be taken back (the lane remembered
    /// one start before it). Several effects cancelled before their starts — by ID, one by one,
    /// or with `cancelAll` — left the lane counting from one of them: the next effect, whose
    /// delay counts from the first effect's start at 0 s, started at 6 s instead of 2 s.
    /// Cancelling one in the middle keeps the starts around it.
    @Test(arguments: ["one by one", "last first", "cancelAll", "the middle one"])
    func startsTakenBackLeaveTheLastStartThatCame(_ how: String) {
        var machine = Machine(randomSeed: 0)
        let delayed = AnyEffectQueue(ResizableLane(maxCount: 5, delay: .constant(2)))
        var instances: [EffectInstanceID] = []
        var starts: [EffectRuntimeStateMachine<Int, Int>.TaskStart] = []
        for key in 0..<4 {
            guard case let (.run(instance), _) = machine.start(id: nil, queue: delayed, now: { .zero }) else { return }
            _ = machine.attach(key, to: instance)
            instances.append(instance)
            starts.append(machine.taskBegan(instance))
        }
        #expect(starts == [.at(.zero), .at(.seconds(2)), .at(.seconds(4)), .at(.seconds(6))])
        let now = Duration.seconds(1)
        let expected: Duration
        switch how {
        case "one by one":
            for instance in instances.dropFirst() { _ = machine.cancel(instance, now: { now }) }
            expected = .seconds(2)
        case "last first":
            for instance in instances.dropFirst().reversed() { _ = machine.cancel(instance, now: { now }) }
            expected = .seconds(2)
        case "cancelAll":
            _ = machine.cancelAll(now: { now })
            expected = .seconds(2)
        default:
            _ = machine.cancel(instances[2], now: { now })
            expected = .seconds(8)
        }
        guard case let (.run(next), _) = machine.start(id: nil, queue: delayed, now: { now }) else { Issue.record("not run"); return }
        #expect(machine.taskBegan(next) == .at(expected), "\(how)")
    }

    /// Start times under random starts, cancellations, finishes, `cancelAll` and the passing of
    /// time, in a delayed lane of two slots with a backlog, checked against a reference: each
    /// start is the queue's delay after the last start given whose effect was not removed before
    /// it came (or now, if later). The lane's list of starts stays as small as the effects in it.
    @Test func startTimesFollowTheReferenceUnderRandomCancellations() {
        struct Reference {
            var given: [(key: Int, time: Duration, takenBack: Bool)] = []
            var active: [Int] = []
            var waiting: [Int] = []
            var startOf: [Int: Duration] = [:]
            let delay = Duration.milliseconds(3)

            mutating func giveStart(_ key: Int, now: Duration) {
                let last = given.last(where: { !$0.takenBack })?.time
                let start = last.map { max(now, $0 + delay) } ?? now
                given.append((key, start, false))
                startOf[key] = start
            }

            /// Removes `key`; returns the keys admitted from the backlog.
            mutating func remove(_ key: Int, now: Duration) -> [Int] {
                if let start = startOf.removeValue(forKey: key), start > now,
                   let index = given.lastIndex(where: { $0.key == key }) {
                    given[index].takenBack = true
                }
                if let index = waiting.firstIndex(of: key) {
                    waiting.remove(at: index)
                    return []
                }
                active.removeAll { $0 == key }
                var admitted: [Int] = []
                while active.count < 2, !waiting.isEmpty {
                    let next = waiting.removeFirst()
                    active.append(next)
                    giveStart(next, now: now)
                    admitted.append(next)
                }
                return admitted
            }
        }
        let queue = AnyEffectQueue(ResizableLane(maxCount: 2, delay: .constant(0.003)))
        var machine = Machine(randomSeed: 0)
        var reference = Reference()
        var random = SplitMix64(seed: 2_026_11_28)
        var now = Duration.zero
        var instances: [Int: EffectInstanceID] = [:]
        var mismatches = 0
        func check(_ key: Int) {
            let begun = machine.taskBegan(instances[key]!)
            guard begun != .at(reference.startOf[key]!) else { return }
            mismatches += 1
            if mismatches <= 5 { Issue.record("effect \(key): \(begun), the reference: \(reference.startOf[key]!)") }
        }
        var cancelAllCount = 0
        for key in 0..<20_000 {
            now += .microseconds(Int64(random.next() % 2_000))
            guard case let (.run(instance), _) = machine.start(id: nil, queue: queue, now: { now }) else { return }
            _ = machine.attach(key, to: instance)
            instances[key] = instance
            if reference.active.count < 2 {
                reference.active.append(key)
                reference.giveStart(key, now: now)
                check(key)
            } else {
                reference.waiting.append(key)
            }
            let alive = reference.active + reference.waiting
            switch random.next() % 8 {
            case 0, 1:
                let victim = alive[Int(random.next() % UInt64(alive.count))]
                _ = machine.cancel(instances[victim]!, now: { now })
                for admitted in reference.remove(victim, now: now) { check(admitted) }
            case 2, 3, 4:
                // An effect whose start has come ends its work.
                if let done = reference.active.first(where: { reference.startOf[$0]! <= now }) {
                    _ = machine.finish(instances[done]!, now: { now })
                    for admitted in reference.remove(done, now: now) { check(admitted) }
                }
            case 5 where random.next() % 50 == 0:
                _ = machine.cancelAll(now: { now })
                cancelAllCount += 1
                for key in reference.waiting + reference.active { _ = reference.remove(key, now: now) }
                reference.waiting = []
                reference.active = []
            default:
                break
            }
            let kept = machine.pendingStartCount(of: queue) ?? 0
            if kept > 2 * (reference.active.count + 16) {
                mismatches += 1
                if mismatches <= 5 { Issue.record("\(kept) starts kept for \(reference.active.count) effects in slots") }
            }
        }
        #expect(mismatches == 0)
        #expect(cancelAllCount > 10)
    }


    /// Regression (review): a lane whose queue has a delay was kept for good once its last
    /// effect ended (to space the next start): a queue per user kept a lane per user. Lanes
    /// whose delay has passed are dropped as new ones are made.
    @Test func lanesWhoseDelayHasPassedAreDropped() {
        struct PerUser: EffectQueue, Hashable {
            let user: Int
            var effectQueuePolicy: EffectQueuePolicy { .runOldest(maxCount: 1, .discardNew) }
            var effectQueueDelay: EffectQueueDelay { .constant(0.5) }
        }
        var machine = Machine(randomSeed: 0)
        for user in 0..<10_000 {
            // One a second: each earlier lane's delay has passed.
            let now = Duration.seconds(user)
            guard case let (.run(instance), _) = machine.start(id: nil, queue: AnyEffectQueue(PerUser(user: user)), now: { now }) else {
                Issue.record("not run")
                return
            }
            #expect(machine.taskBegan(instance) == .at(now))
            _ = machine.finish(instance, now: { now })
        }
        #expect(machine.laneCount <= 128, "\(machine.laneCount) lanes kept")
        // A lane still within its delay is kept: the next effect waits for it.
        guard case let (.run(again), _) = machine.start(id: nil, queue: AnyEffectQueue(PerUser(user: 9_999)), now: { .seconds(9_999) })
        else { Issue.record("not run"); return }
        #expect(machine.taskBegan(again) == .at(.milliseconds(9_999_500)))
    }

    /// An effect cancelled while parked is resumed with nil; cancelling it again, or finishing
    /// it, does nothing; attaching a task to it hands the task back.
    @Test func aCancelledEffectIsGoneForGood() {
        var machine = Machine(randomSeed: 0)
        let one = AnyEffectQueue(ResizableLane(maxCount: 1))
        guard case let (.run(first), _) = machine.start(id: nil, queue: one, now: { .zero }),
              case let (.run(second), _) = machine.start(id: AnyEffectID(StressID(value: 1)), queue: one, now: { .zero })
        else { Issue.record("not started"); return }
        #expect(machine.attach(1, to: first) == nil)
        #expect(machine.attach(2, to: second) == nil)
        #expect(machine.taskBegan(second) == .waitForSlot)
        _ = machine.park(second, continuation: 2)

        let aftermath = machine.cancel(ids: [AnyEffectID(StressID(value: 1))], now: { .zero })
        #expect(aftermath.tasksToCancel == [2])
        #expect(aftermath.continuationsToResume.map { $0.0 } == [2])
        #expect(aftermath.continuationsToResume.map { $0.1 } == [nil])
        #expect(machine.cancel(second, now: { .zero }).isEmpty)
        #expect(machine.finish(second, now: { .zero }).isEmpty)
        #expect(machine.attach(3, to: second) == 3)
        #expect(machine.count == 1)
    }
}
