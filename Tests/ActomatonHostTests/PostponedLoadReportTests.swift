@testable import ActomatonHost
import ActomatonPluginContract
import Foundation
import Testing

/// A load failure that passes is reported once per version of the file.
extension WasmMemoryTotalTests {
    /// Regression (review): the once-only report of a load short of `.wasm` memory was keyed by the file's
    /// path, not its version: a new file put in its place, short of memory too, was never
    /// reported (nor one put back after the first was removed) — a new plugin dropped into the
    /// directory silently does not load.
    @Test func aLoadRefusedForTheTotalIsReportedAgainWhenTheFileChanges() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let total = WasmMemoryBudget(limit: 4 * Self.page)
        let limits = WasmLimits(memoryTotal: total)
        let grower = try load("grower", limits)
        let others: [PluginMachine] = [try PluginMachine(plugin: grower), try PluginMachine(plugin: grower)]
        let path = directory + "/scratchy.wasm"
        try FileManager.default.copyItem(atPath: wasmPlugin("scratchy", in: "hostile"), toPath: path)
        let host = PluginHost(loadOptions: .init(wasmLimits: limits), log: { _ in })
        let refused = "error: \(path): cannot instantiate the module: the .wasm instances of this host "
            + "already hold too much of the 262144 bytes of memory they may have together (--wasm-memory-total)"
        #expect(await host.scan(directory: directory).map(\.description) == [refused])
        #expect(await host.scan(directory: directory).isEmpty, "reported once")
        // Another module in its place, short of memory too: a new file, not reported yet.
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: wasmPlugin("grower", in: "hostile"), toPath: path)
        #expect(await host.scan(directory: directory).map(\.description) == [refused], "the new file's failure is not reported")
        #expect(await host.names.isEmpty)
        _ = others
    }

    /// Regression (review): the same for a loaded plugin whose file is replaced while the total is full: the
    /// first replacement's refused reload is reported; a second replacement, refused too, is not.
    @Test func aReloadRefusedForTheTotalIsReportedAgainWhenTheFileChangesAgain() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let total = WasmMemoryBudget(limit: 4 * Self.page)
        let limits = WasmLimits(memoryTotal: total)
        let path = directory + "/scratchy.wasm"
        try FileManager.default.copyItem(atPath: wasmPlugin("scratchy", in: "hostile"), toPath: path)
        let host = PluginHost(loadOptions: .init(wasmLimits: limits), log: { _ in })
        #expect(await host.scan(directory: directory).map(\.description) == ["loaded plugin scrtch 1.0.0 from \(path)"])
        let grower = try load("grower", limits)
        var others: [PluginMachine] = []
        while let machine = try? PluginMachine(plugin: grower) { others.append(machine) }
        #expect(total.available < 2 * Self.page)
        func replace() throws {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: wasmPlugin("scratchy", in: "hostile")))
            try FileManager.default.removeItem(atPath: path)
            try bytes.write(to: URL(fileURLWithPath: path))
        }
        try replace()
        let first = await host.scan(directory: directory).map(\.description)
        #expect(first.count == 1 && first.first?.hasPrefix("error: \(path)") == true, "\(first)")
        #expect(await host.scan(directory: directory).isEmpty, "reported once")
        try replace()
        let second = await host.scan(directory: directory).map(\.description)
        #expect(second.count == 1 && second.first?.hasPrefix("error: \(path)") == true, "a second new version, refused too: \(second)")
        _ = others
    }
}
