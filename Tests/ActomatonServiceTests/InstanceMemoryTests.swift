import ActomatonHost
@testable import ActomatonService
import Foundation
import Testing

/// The memory of an active and of a passivated counter instance: the growth of the process's
/// resident set over 10,000 of each, divided by 10,000. A measurement, not a check: it runs
/// only when asked (`ACTOMATON_MEASURE_MEMORY=1 swift test --filter InstanceMemoryTests`) and
/// prints its figures.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["ACTOMATON_MEASURE_MEMORY"] == "1"))
struct InstanceMemoryTests {
    static let count = 10_000

    /// Resident memory, in bytes (`/proc/self/statm`).
    static func residentBytes() -> Int {
        let fields = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8))?.split(separator: " ") ?? []
        return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    static func fill(_ registry: InstanceRegistry, prefix: String) async throws {
        let add = try counterType.action("add", [.int(1)])
        for index in 0..<count {
            let address = InstanceAddress(plugin: "counter", key: try InstanceKey("\(prefix)\(index)"))
            let instance = try await registry.instance(at: address, creating: true)
            _ = try await instance.machine.send(add)
        }
    }

    @Test func activeAndPassivatedCounterInstances() async throws {
        // Warm up (code pages, the runtime's first allocations) before measuring.
        let warm = InstanceRegistry(catalog: PluginCatalog([counterType]), limits: .init(), metrics: ServiceMetrics())
        try await Self.fill(warm, prefix: "warm")
        _ = await warm.count

        let active = InstanceRegistry(catalog: PluginCatalog([counterType]), limits: .init(), metrics: ServiceMetrics())
        let before = Self.residentBytes()
        try await Self.fill(active, prefix: "a")
        let activeBytes = Self.residentBytes() - before
        #expect(await active.activeCount == Self.count)

        // One instance in memory: each new one passivates the one before, whose machine's memory
        // the next reuses; what grows is the passivated instances.
        let passivated = InstanceRegistry(catalog: PluginCatalog([counterType]), limits: .init(maxInstances: 1), metrics: ServiceMetrics())
        let beforePassivated = Self.residentBytes()
        try await Self.fill(passivated, prefix: "p")
        let passivatedBytes = Self.residentBytes() - beforePassivated
        #expect(await passivated.passivatedInstances == Self.count - 1)
        print("memory per counter instance, over \(Self.count): active \(activeBytes / Self.count) bytes, "
              + "passivated \(passivatedBytes / Self.count) bytes (resident set growth)")
        _ = await active.count
    }
}
