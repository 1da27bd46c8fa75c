/// The sandbox's limits for `.wasm` plugins, set per host (`--fuel`, `--wasm-memory-limit`,
/// `--wasm-memory-total`).
public struct WasmLimits: Sendable, Hashable {
    /// Fuel per call into a module (about one unit per WebAssembly instruction), or `nil` to
    /// run unmetered. A host import the module calls costs 100 units, and one more per 4 bytes
    /// of memory it reads (a message, a string argument). A call that runs out fails with one
    /// line and the state as it was. The module's start function, run when an instance is
    /// made, gets the same budget: a module whose start function runs out is refused.
    public var fuel: UInt64?
    /// The most linear memory one instance may have, in bytes: a module that declares more,
    /// or a `memory.grow` past it, is refused (the grow returns -1 to the module).
    public var memoryLimit: Int
    /// The linear memory all instances made with these limits may have together; see
    /// ``WasmMemoryBudget``. By default the process's budget of ``WasmMemoryBudget/defaultLimit``.
    public var memoryTotal: WasmMemoryBudget
    /// How often, in successful actions, the host takes a snapshot to rebuild an instance
    /// from after a trap (the actions since are replayed).
    public var snapshotInterval: Int
    /// How many rebuilds after a trap are allowed within ``restartWindow`` before the plugin is
    /// stopped (every later call then fails), as for a worker process.
    public var maxRestarts: Int
    /// See ``maxRestarts``.
    public var restartWindow: Duration

    /// The default budget: 100,000,000 units per call (a tenth of a second to a second of
    /// interpreted code).
    public static let defaultFuel: UInt64 = 100_000_000
    /// The most elements one table may have, at instantiation or after `table.grow` (which
    /// returns -1 to the module past it). Fixed: no option raises it.
    public static let maxTableElements = 100_000
    /// The most tables one module may declare. Fixed: tables are not counted against the
    /// memory cap, so this bounds what one instance's tables can take (8 × 100,000 elements).
    public static let maxTables = 8
    /// The largest module, in bytes: 16 MiB. Fixed, like the limits below, which bound what
    /// parsing and compiling a module may take (the parser expands what the binary format
    /// writes compactly). The examples' modules are 2–154 KB.
    public static let maxModuleBytes = 16 << 20
    /// The most functions a module may define: 100,000.
    public static let maxFunctions = 100_000
    /// The most locals a module's functions may declare in all, parameters excluded:
    /// 1,000,000 (each takes about 24 bytes once parsed, and 8 in a call's frame).
    public static let maxLocals = 1_000_000
    /// The deepest a function may nest blocks, loops, ifs and try-tables: 10,000 (the
    /// compiler keeps about 200 bytes for each open one).
    public static let maxBlockNesting = 10_000
    /// The most entries any other section may declare (types, imports, globals, exports,
    /// data segments, tags): 10,000.
    public static let maxSectionEntries = 10_000
    /// The largest section other than the code, data, element and custom ones (types, imports,
    /// exports…), in bytes: 1 MiB (a function type of a million parameters took 400 MB once
    /// parsed). The examples' are under 500 bytes.
    public static let maxSectionBytes = 1 << 20
    /// The largest element section, in bytes: 128 KiB (each of its bytes may stand for an
    /// element of about 190 bytes once parsed).
    public static let maxElementSectionBytes = 128 << 10
    /// The default number of rebuilds allowed per ``restartWindow``: 100. Higher than a
    /// worker's (5): a rebuild starts no process, and replays at most ``snapshotInterval``
    /// actions.
    public static let defaultMaxRestarts = 100
    /// The default memory cap: 64 MiB.
    public static let defaultMemoryLimit = 64 << 20

    /// The fuel of a snapshot or a restore, for an instance whose memory is `memoryBytes`: the
    /// budget of an action, and ``stateFuelPerMemoryByte`` units more per byte of the
    /// instance's memory (about 2.1 billion more under the default memory cap; a lower
    /// `--wasm-memory-limit` lowers it). The state they walk lives in that memory and grows
    /// with it: a plugin whose state outgrew one budget (the CSV example's sheet, after about
    /// 480 KB of CSV) would otherwise fail every snapshot and be stopped. A description gets
    /// an action's budget: it is asked after every transition a service reports. `nil` when
    /// unmetered.
    public func stateFuel(memoryBytes: Int) -> UInt64? {
        guard let fuel else { return nil }
        let (extra, overflowed) = UInt64(max(memoryBytes, 0)).multipliedReportingOverflow(by: Self.stateFuelPerMemoryByte)
        let (budget, overflowedToo) = fuel.addingReportingOverflow(extra)
        return overflowed || overflowedToo ? .max : budget
    }

    /// The fuel a snapshot or a restore gets per byte of the instance's memory, beyond an
    /// action's budget: 32 units. The CSV example spends about 9 to 12 per byte of its memory on a
    /// snapshot of its sheet (about 1,000 to 1,300 units a field).
    public static let stateFuelPerMemoryByte: UInt64 = 32

    /// Limits with the defaults.
    ///
    /// - Parameters:
    ///   - fuel: Fuel per call, or `nil` to run unmetered.
    ///   - memoryLimit: The most linear memory one instance may have, in bytes.
    ///   - memoryTotal: The linear memory all instances may have together.
    ///   - snapshotInterval: Successful actions between the snapshots a rebuild starts from.
    ///   - maxRestarts: Rebuilds allowed within `restartWindow` before the plugin is stopped.
    ///   - restartWindow: See `maxRestarts`.
    public init(fuel: UInt64? = WasmLimits.defaultFuel, memoryLimit: Int = WasmLimits.defaultMemoryLimit,
                memoryTotal: WasmMemoryBudget = .hostWide(), snapshotInterval: Int = 16,
                maxRestarts: Int = WasmLimits.defaultMaxRestarts, restartWindow: Duration = .seconds(60)) {
        self.fuel = fuel
        self.memoryLimit = memoryLimit
        self.memoryTotal = memoryTotal
        self.snapshotInterval = max(snapshotInterval, 1)
        self.maxRestarts = maxRestarts
        self.restartWindow = restartWindow
    }
}
