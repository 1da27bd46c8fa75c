@testable import ActomatonService
import ActomatonHost
import ActomatonPluginContract
import Synchronization
import Testing

/// The shared watch-history total (`--watch-history-total-bytes`, `WatchHistoryBudget.reclaim`) under load.
extension InstanceTests {
    /// From a review: sets transitioning, beginning again and going away on many
    /// threads while reclaims cut them keep the total equal to what they hold, their histories
    /// contiguous, and the budget's holders those that hold some; with every set gone, 0.
    @Test func theWatchHistoryTotalAddsUpUnderConcurrentReclaims() async throws {
        let budget = WatchHistoryBudget(limit: 20_000)
        func set(_ key: String) throws -> WatcherSet {
            WatcherSet(address: InstanceAddress(plugin: "counter", key: try InstanceKey(key)), limit: 2, history: 40, historyBytes: 12_000,
                       historyBudget: budget) { _ in }
        }
        let states = (0..<7).map { String(repeating: "x", count: $0 * 150) }
        let transitions = try (1...3_000).map { (seq: Int) in
            InstanceTransition(try Self.transition(UInt64(seq), states[seq % states.count]), seq: UInt64(seq))
        }
        let small = try (1...3_000).map { (seq: Int) in InstanceTransition(try Self.transition(UInt64(seq), "s"), seq: UInt64(seq)) }
        var sets: [WatcherSet]? = try (0..<12).map { try set("s\($0)") }
        let live = sets!
        let address = InstanceAddress(plugin: "counter", key: try InstanceKey("p"))
        var lasts = [UInt64](repeating: 0, count: 12)
        await withTaskGroup(of: (Int, UInt64).self) { group in
            for (index, set) in live.enumerated() {
                group.addTask {
                    var seq = 0
                    while seq < 2_800 {
                        seq += 1
                        if seq % 700 == 0 {
                            seq += 3
                            set.began(at: UInt64(seq))
                            continue
                        }
                        set.broadcast(index % 3 == 0 ? transitions[seq - 1] : small[seq - 1])
                        if index % 3 == 1 { await Task.yield() }
                    }
                    return (index, UInt64(seq))
                }
            }
            // Sets that come and go meanwhile.
            group.addTask {
                for round in 0..<300 {
                    let passing = WatcherSet(address: address, limit: 2, history: 40, historyBytes: 12_000, historyBudget: budget) { _ in }
                    for seq in 1...5 { passing.broadcast(transitions[seq + round % 7]) }
                }
                return (-1, 0)
            }
            for await (index, last) in group where index >= 0 { lasts[index] = last }
        }
        let held = sets!.map { $0.keptBytesOfTheLast(.max) }
        #expect(budget.used == held.reduce(0, +))
        #expect(budget.holderCount == held.filter { $0 > 0 }.count)
        for (index, set) in sets!.enumerated() {
            let last = lasts[index]
            let kept = (0...last).filter { (try? set.check(after: $0)) != nil }
            #expect(kept.last == last && kept == Array(kept.first!...last), "s\(index): \(kept.first!)...\(last)")
        }
        sets = nil
        #expect(budget.used == 0 && budget.holderCount == 0)
    }

    /// Regression (review): once the total is full — the steady state it is sized for — every transition
    /// of every instance found `available < size` and called `reclaim`, which copies every
    /// holder out of the budget's one lock (a strong reference each) *before* it checks that
    /// the caller is under its share: an instance at its share, which only lets its own oldest
    /// go, paid O(instances keeping history) per transition, under a lock every instance takes.
    /// Here 200 transitions of one instance at its share, beside 20,000 others, look at none.
    @Test func aTransitionAtItsShareDoesNotVisitEveryInstance() throws {
        let transition = { (seq: UInt64) in InstanceTransition(try Self.transition(seq, "state \(seq % 10)"), seq: seq) }
        let size = WatcherSet.size(of: try transition(1))
        func twoHundredTransitions(besides others: Int) throws -> Int {
            let budget = WatchHistoryBudget(limit: (others + 1) * size)
            func set(_ key: String) throws -> WatcherSet {
                WatcherSet(address: InstanceAddress(plugin: "counter", key: try InstanceKey(key)), limit: 2, history: 100, historyBudget: budget) { _ in }
            }
            let quiet = try (0..<others).map { try set("q\($0)") }
            for set in quiet { set.broadcast(try transition(1)) }
            let busy = try set("busy")
            busy.broadcast(try transition(1))
            #expect(budget.used == budget.limit && budget.holderCount == others + 1)
            let transitions = try (2...201).map { try transition(UInt64($0)) }
            let before = budget.setsLookedAt.load(ordering: .relaxed)
            for next in transitions { busy.broadcast(next) }
            let lookedAt = budget.setsLookedAt.load(ordering: .relaxed) - before
            // At its share (one transition), it let its own go each time; nobody else was cut.
            #expect((0...201).filter { (try? busy.check(after: UInt64($0))) != nil } == [200, 201])
            #expect(budget.used == budget.limit)
            return lookedAt
        }
        #expect(try twoHundredTransitions(besides: 20_000) == 0, "before the fix: every holder copied at every transition")
    }
}
