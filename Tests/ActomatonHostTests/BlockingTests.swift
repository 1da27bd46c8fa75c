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
}
