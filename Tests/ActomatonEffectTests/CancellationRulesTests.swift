import ActomatonCore
import ActomatonEffect
import Synchronization
import Testing

/// What each effect's work did, in order: `start k`, then `done k` or `cancelled k`.
private final class EffectLog: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// A count shared with tasks.
private final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

private enum Tick: Sendable { case start, tick }

private enum Action: Sendable {
    case start(Int, id: Int?, queue: RulesQueue?)
    case cancel(id: Int)
    case done(Int)
    case update(RulesQueue)
}

private struct RulesID: EffectID { var value: Int }

/// Queues for the rules; `.lane(maxCount)` values are one lane whatever their `maxCount`.
private enum RulesQueue: Sendable, EffectQueue {
    case newest1, discard1, suspend1, delayed
    case lane(maxCount: Int)

    var effectQueuePolicy: EffectQueuePolicy {
        switch self {
        case .newest1: .runNewest(maxCount: 1)
        case .discard1: .runOldest(maxCount: 1, .discardNew)
        case .suspend1: .runOldest(maxCount: 1, .suspendNew)
        case .delayed: .runOldest(maxCount: 5, .suspendNew)
        case let .lane(maxCount): .runOldest(maxCount: maxCount, .suspendNew)
        }
    }

    var effectQueueDelay: EffectQueueDelay {
        if case .delayed = self { .constant(5) } else { .none }
    }

    static func == (lhs: RulesQueue, rhs: RulesQueue) -> Bool {
        switch (lhs, rhs) {
        case (.newest1, .newest1), (.discard1, .discard1), (.suspend1, .suspend1), (.delayed, .delayed), (.lane, .lane): true
        default: false
        }
    }

    func hash(into hasher: inout Hasher) {
        switch self {
        case .newest1: hasher.combine(0)
        case .discard1: hasher.combine(1)
        case .suspend1: hasher.combine(2)
        case .delayed: hasher.combine(3)
        case .lane: hasher.combine(4)
        }
    }
}

/// Effects that log, then sleep 1 s on the machine's clock.
private func reducer(log: EffectLog) -> MealyReducer<Action, [Int], Void, Effect<Action>> {
    MealyReducer { action, delivered, _ in
        switch action {
        case let .start(key, id, queue):
            return Effect(id: id.map { RulesID(value: $0) }, queue: queue) { context in
                log.append("start \(key)\(Task.isCancelled ? " (cancelled)" : "")")
                do {
                    try await context.clock.sleep(for: .seconds(1))
                } catch {
                    log.append("cancelled \(key)")
                    throw error
                }
                log.append("done \(key)")
                return .done(key)
            }
        case let .cancel(id):
            return .cancel(id: RulesID(value: id))
        case let .done(key):
            delivered.append(key)
            return .empty
        case let .update(queue):
            return .updateQueue(queue)
        }
    }
}

@Suite("Effects: every accepted effect runs its work exactly once, whatever the timing")
struct CancellationRulesTests {
    /// Sends `actions` back to back, optionally yielding between them, then runs the clock
    /// until every effect ended; returns the log and what was delivered.
    private func run(_ actions: [Action], pause: Bool) async -> (log: [String], delivered: [Int], tasks: [Result<Void, Error>]) {
        let log = EffectLog()
        let clock = ManualClock()
        let host = TestHost(state: [Int](), reducer: reducer(log: log), clock: clock)
        var tasks: [Task<Void, Error>] = []
        for action in actions {
            if let task = await host.send(action) { tasks.append(task) }
            if pause { for _ in 0..<20 { await Task.yield() } }
        }
        let finished = Counter()
        for task in tasks { Task { _ = await task.result; finished.increment() } }
        for _ in 0..<2_000 where finished.value < tasks.count {
            await clock.advance(by: .milliseconds(500))
            await Task.yield()
        }
        var results: [Result<Void, Error>] = []
        for task in tasks { results.append(await task.result) }
        return (log.all, await host.state, results)
    }

    /// Checks the invariants: each key's work started once, then ended once, `done` only for
    /// `delivered`; the rest ended `cancelled`.
    private func expectEachRanOnce(_ log: [String], keys: [Int], delivered: [Int], _ comment: String) {
        for key in keys {
            let starts = log.filter { $0 == "start \(key)" || $0 == "start \(key) (cancelled)" }
            let ends = log.filter { $0 == "done \(key)" || $0 == "cancelled \(key)" }
            #expect(starts.count == 1 && ends.count == 1, "\(comment): effect \(key) in \(log)")
            if let start = log.firstIndex(of: starts.first ?? ""), let end = log.firstIndex(of: ends.first ?? "") {
                #expect(start < end, "\(comment): effect \(key) ended before it started: \(log)")
            }
            #expect(log.contains("done \(key)") == delivered.contains(key), "\(comment): \(log), delivered \(delivered)")
        }
    }

    @Test(arguments: [false, true])
    func aSecondEffectWithTheSameIDCancelsTheFirst(pause: Bool) async {
        for _ in 0..<50 {
            let (log, delivered, results) = await run([.start(1, id: 7, queue: nil), .start(2, id: 7, queue: nil)], pause: pause)
            expectEachRanOnce(log, keys: [1, 2], delivered: [2], "same ID")
            #expect(delivered == [2])
            #expect(results.map { (try? $0.get()) != nil } == [false, true], "the first counts as cancelled")
        }
    }

    @Test(arguments: [false, true])
    func cancelByID(pause: Bool) async {
        for _ in 0..<50 {
            let (log, delivered, _) = await run([.start(1, id: 7, queue: nil), .cancel(id: 7), .start(2, id: nil, queue: nil)], pause: pause)
            expectEachRanOnce(log, keys: [1, 2], delivered: [2], "cancel by ID")
            #expect(delivered == [2])
        }
    }

    @Test(arguments: [false, true])
    func runNewestMakingRoom(pause: Bool) async {
        for _ in 0..<50 {
            let (log, delivered, _) = await run([.start(1, id: nil, queue: .newest1), .start(2, id: nil, queue: .newest1)], pause: pause)
            expectEachRanOnce(log, keys: [1, 2], delivered: [2], "runNewest")
            #expect(delivered == [2])
        }
    }

    @Test(arguments: [false, true])
    func discardNewRunsTheDroppedWorkCancelled(pause: Bool) async {
        for _ in 0..<50 {
            let (log, delivered, results) = await run([.start(1, id: nil, queue: .discard1), .start(2, id: nil, queue: .discard1)], pause: pause)
            expectEachRanOnce(log, keys: [1, 2], delivered: [1], "discardNew")
            #expect(delivered == [1])
            #expect(log.contains("start 2 (cancelled)"), "a dropped effect's work starts already cancelled: \(log)")
            #expect(results.map { (try? $0.get()) != nil } == [true, false])
        }
    }

    @Test(arguments: [false, true])
    func cancellingASuspendedEffect(pause: Bool) async {
        for _ in 0..<50 {
            let (log, delivered, _) = await run(
                [.start(1, id: nil, queue: .suspend1), .start(2, id: 9, queue: .suspend1), .cancel(id: 9), .start(3, id: nil, queue: .suspend1)],
                pause: pause)
            expectEachRanOnce(log, keys: [1, 2, 3], delivered: [1, 3], "suspendNew")
            #expect(log.contains("start 2 (cancelled)"), "\(log)")
            #expect(delivered == [1, 3])
        }
    }

    @Test(arguments: [false, true])
    func cancellingAnEffectWaitingOutAQueueDelay(pause: Bool) async {
        for _ in 0..<50 {
            let (log, delivered, _) = await run([.start(1, id: nil, queue: .delayed), .start(2, id: 9, queue: .delayed), .cancel(id: 9)], pause: pause)
            expectEachRanOnce(log, keys: [1, 2], delivered: [1], "queue delay")
            #expect(delivered == [1])
            #expect(log.contains("start 2 (cancelled)"), "\(log)")
        }
    }

    /// A lane follows the latest queue value: a raised limit starts waiting effects at once.
    @Test func aLaneFollowsTheLatestQueueValue() async {
        let log = EffectLog()
        let clock = ManualClock()
        let host = TestHost(state: [Int](), reducer: reducer(log: log), clock: clock)
        for key in 1...3 { await host.send(.start(key, id: nil, queue: .lane(maxCount: 1))) }
        #expect(await eventually { log.all == ["start 1"] })
        await host.send(.update(.lane(maxCount: 3)))
        #expect(await eventually { Set(log.all) == ["start 1", "start 2", "start 3"] }, "raised: the waiting ones start at once")
        // Lowered: running effects finish; nothing new starts until the lane is below the limit.
        await host.send(.update(.lane(maxCount: 1)))
        await host.send(.start(4, id: nil, queue: .lane(maxCount: 1)))
        await host.send(.start(5, id: nil, queue: .lane(maxCount: 1)))
        await clock.advance(by: .seconds(1))
        #expect(await eventually { log.all.contains("start 4") })
        #expect(!log.all.contains("start 5"))
        await clock.advance(by: .seconds(1))
        #expect(await eventually { log.all.contains("start 5") })
        await clock.advance(by: .seconds(1))
        #expect(await eventually { await host.state.sorted() == [1, 2, 3, 4, 5] })
    }

    /// A timer that re-arms itself with its own ID keeps ticking, with feedbacks tracked.
    @Test func aSelfRearmingEffectKeepsRunning() async throws {
        let clock = ManualClock()
        let rearm = Effect<Tick>(id: RulesID(value: 1)) { context in
            try await context.clock.sleep(for: .seconds(1))
            return .tick
        }
        let host = TestHost(state: 0, reducer: MealyReducer<Tick, Int, Void, Effect<Tick>> { action, count, _ in
            if case .tick = action { count += 1 }
            return count < 3 ? rearm : .empty
        }, clock: clock)
        let task = await host.send(.start, tracksFeedbacks: true)
        for expected in 1...3 {
            #expect(await clock.waitForSleepers(1))
            await clock.advance(by: .seconds(1))
            #expect(await eventually { await host.state == expected })
        }
        try await task?.value
        #expect(await host.state == 3)
    }
}
