/// The sandbox's limits for `.wasm` plugins, set per host (`--fuel`, `--wasm-memory-limit`).
public struct WasmLimits: Sendable, Hashable {
    /// Fuel per call into a module (about one unit per WebAssembly instruction), or `nil` to
    /// run unmetered. A call that runs out fails with one line and the state as it was. The
    /// module's start function, run when an instance is made, gets the same budget: a module
    /// whose start function runs out is refused.
    public var fuel: UInt64?
    /// The most linear memory one instance may have, in bytes: a module that declares more,
    /// or a `memory.grow` past it, is refused (the grow returns -1 to the module).
    public var memoryLimit: Int
    /// How often, in successful actions, the host takes a snapshot to rebuild an instance
    /// from after a trap (the actions since are replayed).
    public var snapshotInterval: Int

    /// The default budget: 100,000,000 units per call (a tenth of a second to a second of
    /// interpreted code).
    public static let defaultFuel: UInt64 = 100_000_000
    /// The most elements one table may have, at instantiation or after `table.grow` (which
    /// returns -1 to the module past it). Fixed: no option raises it.
    public static let maxTableElements = 100_000
    /// The default memory cap: 64 MiB.
    public static let defaultMemoryLimit = 64 << 20

    /// Limits with the defaults.
    public init(fuel: UInt64? = WasmLimits.defaultFuel, memoryLimit: Int = WasmLimits.defaultMemoryLimit, snapshotInterval: Int = 16) {
        self.fuel = fuel
        self.memoryLimit = memoryLimit
        self.snapshotInterval = max(snapshotInterval, 1)
    }
}
