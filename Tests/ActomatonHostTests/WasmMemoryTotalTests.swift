@testable import ActomatonHost
import ActomatonPluginContract
import Foundation
import Testing

/// The memory the `.wasm` instances of a host may have together (`WasmMemoryBudget`,
/// `--wasm-memory-total`), with the grower fixture: its state is how many 64-KiB pages its
/// memory has past its first two.
struct WasmMemoryTotalTests {
    static let page = 65_536

    func grower(_ total: WasmMemoryBudget) throws -> Plugin {
        try Plugin.load(path: wasmPlugin("grower", in: "hostile"), options: .init(wasmLimits: WasmLimits(memoryTotal: total)))
    }

    /// Each instance holds its memory from the total while it lives — the load's probe gives
    /// its back — and a grow takes more.
    @Test func instancesHoldTheirMemoryWhileTheyLive() async throws {
        let total = WasmMemoryBudget(limit: 10 * Self.page)
        let plugin = try grower(total)
        #expect(total.used == 0)
        #expect(plugin.wasmMemory?.perInstance == 2 * Self.page)
        var machine: PluginMachine? = try PluginMachine(plugin: plugin)
        #expect(total.used == 2 * Self.page)
        _ = try await machine?.send(plugin.action("grow_one", []))
        #expect(total.used == 3 * Self.page)
        machine = nil
        #expect(total.used == 0)
    }

    /// At the limit an instance is made; one page past it, it is not, with one line that names
    /// the flag.
    @Test func anInstanceIsMadeAtTheLimitAndNotOnePast() throws {
        let total = WasmMemoryBudget(limit: 4 * Self.page)
        let plugin = try grower(total)
        let first = try PluginMachine(plugin: plugin)
        let second = try PluginMachine(plugin: plugin)
        #expect(total.used == total.limit)
        let error = #expect(throws: PluginLoadError.self) { try PluginMachine(plugin: plugin) }
        #expect(error?.reason == .wasmMemoryTotalReached(limit: 4 * Self.page))
        #expect(error?.reason.description == "cannot instantiate the module: the .wasm instances of this host already hold too much of the "
                + "262144 bytes of memory they may have together (--wasm-memory-total)")
        _ = (first, second)
    }

    /// A grow past the total returns -1 to the module. A module that traps on it is rebuilt
    /// with the state as it was, within the memory it held (the rebuild never waits on the
    /// others); one that refuses the action keeps its state. Either failure says why, and
    /// the next grow that fits succeeds.
    @Test func aGrowPastTheTotalFailsTheCallAndSaysWhy() async throws {
        let total = WasmMemoryBudget(limit: 5 * Self.page)
        let plugin = try grower(total)
        let machine = try PluginMachine(plugin: plugin)
        var other: PluginMachine? = try PluginMachine(plugin: plugin)
        _ = try await machine.send(plugin.action("grow_one", []))
        #expect(total.used == total.limit)
        let trapped = await #expect(throws: PluginCallError.self) { try await machine.send(plugin.action("grow_one", [])) }
        #expect(trapped?.reason == .wasmMemoryTotalReached(
            limit: 5 * Self.page, size: 4 * Self.page,
            failure: .sandboxTrapped(call: "'grow_one'", cause: "it trapped: unreachable", recovery: "the instance was rebuilt with the state as it was before")))
        #expect(trapped?.description == "plugin grower: 'grow_one' failed: it trapped: unreachable; the instance was rebuilt with the state as it was before "
                + "(a memory.grow was refused: the .wasm instances of this host already hold too much of the 327680 bytes of memory they may "
                + "have together (--wasm-memory-total))")
        #expect(try await machine.describe() == "n=1")
        #expect(total.used == total.limit, "the rebuilt instance holds what the trapped one held, no more")
        let refused = await #expect(throws: PluginCallError.self) { try await machine.send(plugin.action("grow_or_refuse", [])) }
        #expect(refused?.reason == .wasmMemoryTotalReached(limit: 5 * Self.page, size: 4 * Self.page,
                                                           failure: .refused(action: "grow_or_refuse", message: "no memory")))
        #expect(try await machine.describe() == "n=1")
        other = nil
        #expect(total.used == 3 * Self.page)
        _ = try await machine.send(plugin.action("grow_or_refuse", []))
        #expect(try await machine.describe() == "n=2")
        _ = other
    }

    /// Regression: a journal's replay that a grow past the total failed counted the action as
    /// one that cannot be replayed, and went on without it: the acknowledged action was lost
    /// from the state, and the next ones built on that. The recovery is now postponed,
    /// nothing skipped, and a later one brings everything back.
    @Test func aRecoveryShortOfMemoryIsPostponedWithNothingSkipped() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let total = WasmMemoryBudget(limit: 7 * Self.page)
        let plugin = try grower(total)
        var journal = try PluginJournal(path: directory + "/state.sqlite")
        var machine: PluginMachine? = try PluginMachine(plugin: plugin, log: { _ in }, journal: journal, journalName: "grower/k")
        #expect(try await machine?.recover().isEmpty == true)
        for _ in 0..<3 { _ = try await machine?.send(plugin.action("grow_one", [])) }
        await machine?.waitUntilIdle()
        machine = nil
        journal.close()
        journal = try PluginJournal(path: directory + "/state.sqlite")
        defer { journal.close() }
        // Another instance holds 3 of the 7 pages: the replay gets 4 of the 5 it needs.
        var other: PluginMachine? = try PluginMachine(plugin: plugin)
        _ = try await other?.send(plugin.action("grow_one", []))
        var short: PluginMachine? = try PluginMachine(plugin: plugin, log: { _ in }, journal: journal, journalName: "grower/k")
        let error = await #expect(throws: PluginJournalError.self) { try await short?.recover() }
        guard case let .recoveryPostponed(name, cause)? = error?.reason else {
            Issue.record("not postponed: \(String(describing: error))")
            return
        }
        #expect(name == "grower/k")
        guard case .wasmMemoryTotalReached = cause else {
            Issue.record("postponed for \(cause)")
            return
        }
        #expect(error?.reason.description.hasPrefix("grower/k cannot be brought back now, nothing skipped (a later try replays the same records): "
                                                     + "'grow_one' failed: it trapped: unreachable") == true)
        (other, short) = (nil, nil)
        #expect(total.used == 0)
        let again = try PluginMachine(plugin: plugin, log: { _ in }, journal: journal, journalName: "grower/k")
        #expect(try await again.recover().isEmpty)
        #expect(try await again.describe() == "n=3")
        #expect(try await again.send(plugin.action("grow_one", [])).sequence == 4)
    }

    /// The host's budget is one object per limit, shared by every plugin loaded with it.
    @Test func theHostWideBudgetIsOnePerLimit() {
        #expect(WasmMemoryBudget.hostWide(limit: 3 << 30) === WasmMemoryBudget.hostWide(limit: 3 << 30))
        #expect(WasmMemoryBudget.hostWide(limit: 3 << 30) !== WasmMemoryBudget.hostWide(limit: 5 << 30))
        #expect(WasmLimits().memoryTotal === WasmMemoryBudget.hostWide())
    }
}
