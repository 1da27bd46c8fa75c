@testable import ActomatonHost
import Foundation
import Synchronization
import Testing

/// Blocking calls stay off the concurrency pool: a machine whose plugin runs in a worker waits
/// for its worker on a thread of its own, so hung plugins cost the other machines nothing.
///
/// It measures the pool's availability, which any test blocking a pool thread in the same
/// process would also take: `make test` runs it in a process of its own
/// (`ACTOMATON_TIMING_TESTS=1 swift test --filter BlockingTests`), and the main run skips it.
@Suite("Blocking calls off the concurrency pool",
       .enabled(if: ProcessInfo.processInfo.environment["ACTOMATON_TIMING_TESTS"] == "1", "run alone by make test (timing)"))
struct BlockingTests {
    /// Regression: a worker's round trip waited (up to the action deadline) on a pool thread;
    /// on 2 cores two hung plugins took the whole pool, and every timer of every other machine
    /// stopped until they were killed.
    @Test func twoHungPluginsDoNotDelayAThirdPluginsTimer() async throws {
        let options = WorkerOptions(executable: "\(pluginDirectory)/actomaton-host", actionTimeout: .seconds(2), loadTimeout: .seconds(10))
        func hostile() throws -> PluginMachine {
            try PluginMachine(isolatedPluginAt: plugin("ActomatonHostTestFixtures"), loadOptions: .init(entrySymbol: "fixture_hostile_entry"),
                              workerOptions: options, log: { _ in })
        }
        let (first, second) = (try hostile(), try hostile())
        let ticks = Mutex<[ContinuousClock.Instant]>([])
        let firstTick = AsyncStream.makeStream(of: Void.self)
        let counter = try PluginMachine(plugin: Plugin.load(path: plugin("CounterPlugin")), observer: { transition in
            guard case .repeating = transition.origin else { return }
            ticks.withLock { $0.append(.now) }
            firstTick.continuation.yield()
        })
        try await counter.send("start", [.int(100)])
        for await _ in firstTick.stream { break }

        let start = ContinuousClock.now
        async let hungFirst: Void = { _ = try? await first.send("spin") }()
        async let hungSecond: Void = { _ = try? await second.send("spin") }()
        _ = await (hungFirst, hungSecond)
        let end = ContinuousClock.now
        try await counter.send("stop")

        #expect(start.duration(to: end) >= .seconds(2), "both plugins hung until their deadline")
        let during = [start] + ticks.withLock { $0 }.filter { $0 > start && $0 < end } + [end]
        let longestGap = zip(during, during.dropFirst()).map { $0.duration(to: $1) }.max() ?? .zero
        // Every 100 ms when nothing blocks; a generous bound for a loaded machine, far below the
        // 2 s the timer stood still before.
        #expect(longestGap < .milliseconds(800), "the timer stood still for \(longestGap) while two plugins hung")
        #expect(during.count - 2 >= 8, "\(during.count - 2) ticks in \(start.duration(to: end))")
    }
    /// Regression: `recover()` read the journal on the machine's executor, which is the pool for
    /// a machine in this process; a read that waits (on a commit's sync, on a cluster's
    /// database) held a pool thread, and as many recoveries as cores held the whole pool.
    /// Here the store's reads wait until released: one more recovery than the pool has threads
    /// must all be waiting in the store, and the pool free, long before a watchdog releases them.
    @Test func recoveriesWaitingOnTheJournalLeaveThePoolFree() async throws {
        let directory = try temporaryDirectory()
        let count = ProcessInfo.processInfo.activeProcessorCount + 1
        let store = GatedJournalStore(base: try SQLiteJournalStore(path: directory + "/journal.sqlite"))
        let journal = try PluginJournal(store: store)
        defer { journal.close() }
        let counter = try Plugin.load(path: plugin("CounterPlugin"))
        let machines = try (0..<count).map { index in try PluginMachine(plugin: counter, journal: journal, journalName: "counter/\(index)") }
        // Safety net only: without it, the run before the fix would wait for ever.
        let watchdog = Thread { Thread.sleep(forTimeInterval: 20); store.open() }
        watchdog.start()
        let start = ContinuousClock.now
        let recoveries = machines.map { machine in Task { try await machine.recover() } }
        try await offThePool { for _ in 0..<count { store.entered.wait() } }
        await Task.detached {}.value
        let elapsed = ContinuousClock.now - start
        store.open()
        for recovery in recoveries { #expect(try await recovery.value.isEmpty) }
        #expect(elapsed < .seconds(10), "\(count) recoveries waiting in the store, the pool free: \(elapsed)")
    }
}

/// A journal store whose reads of a name's records wait until ``open()``: a read that takes long.
final class GatedJournalStore: ForwardingJournalStore, @unchecked Sendable {
    /// Signalled by each read as it starts waiting.
    let entered = DispatchSemaphore(value: 0)
    private let gate = Mutex(false)
    private let opened = DispatchSemaphore(value: 0)

    /// Lets every read waiting, and every later one, through.
    func open() {
        let first = gate.withLock { open in defer { open = true }; return !open }
        if first { for _ in 0..<64 { opened.signal() } }
    }

    override func recovery(for name: String) throws(PluginJournalError.Reason) -> JournalRecovery {
        entered.signal()
        if !gate.withLock({ $0 }) { opened.wait() }
        return try base.recovery(for: name)
    }
}
