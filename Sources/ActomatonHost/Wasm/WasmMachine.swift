import ActomatonPluginContract
@_spi(Fuzzing) import WasmKit

/// One instance of a `.wasm` plugin module: its store (fuel, memory cap), its exports, and
/// the host imports bound to it. Every offset and length the module hands over is checked
/// against its memory before it is read.
///
/// Confined to its machine's actor, like a ``PluginInstance``: one call at a time.
final class WasmMachine: @unchecked Sendable {
    /// What a call is doing, for the host imports: effects are accepted only while acting,
    /// `fail` while acting, restoring or reading the manifest.
    enum Phase { case idle, acting, restoring, loading }

    /// What the imports record during one call.
    final class Context: @unchecked Sendable {
        var phase = Phase.idle
        var memory: Memory?
        var plugin: Plugin?
        /// What the call in progress requested and said.
        var recorder = PluginCallRecorder()
        var effectBudget = EffectBudget.unlimited()
        var log: @Sendable (String) -> Void = { _ in }
        /// The bytes of module memory the host import in progress read (``HostImportFuel``).
        var bytesRead = 0

        func reset() {
            recorder.reset()
        }
    }

    let module: WasmPluginModule
    let path: String
    let store: Store
    let instance: Instance
    let memory: Memory
    /// What the instance's memory holds of the host's total.
    let memoryCap: MemoryCap
    let context = Context()
    private let alloc: Function
    private let snapshotFunction: Function
    private let restoreFunction: Function
    private let describeFunction: Function
    private let manifestFunction: Function
    /// `actomaton_active`, once a manifest that says the module names active nodes is bound.
    private var activeFunction: Function?
    /// One export per action, in manifest order, with its parameter types; empty until the
    /// manifest is read.
    private(set) var actions: [Function] = []
    private var parameterTypes: [[PluginValueType]] = []

    /// Instantiates `module`. The manifest is read by ``readManifest()`` (at load) or taken
    /// from `plugin` (for every later instance).
    ///
    /// - Parameter credit: Bytes of the host's total this instance takes over from the one
    ///   it replaces (``MemoryCap/surrender()``); what it does not need is given back by
    ///   ``MemoryCap/trim()``.
    init(module: WasmPluginModule, path: String, plugin: Plugin? = nil, credit: Int = 0, forcing: Bool = false) throws(PluginLoadError) {
        self.module = module
        self.path = path
        store = Store(engine: module.engine)
        memoryCap = MemoryCap(limit: module.limits.memoryLimit, total: module.limits.memoryTotal, credit: credit)
        memoryCap.forcing = forcing
        store.resourceLimiter = memoryCap
        var imports = Imports()
        let context = self.context
        for function in HostImport.allCases {
            imports.define(module: "actomaton", name: function.rawValue, Function(store: store, type: function.type) { caller, arguments in
                context.bytesRead = 0
                let results = try hostCall(function, arguments, context)
                try HostImportFuel.charge(caller.store, bytesRead: context.bytesRead)
                return results
            })
        }
        // Instantiation runs the module's start function, if it has one: it gets the same
        // budget as any other call, so a start function that never returns cannot hang a load.
        if let fuel = module.limits.fuel { store.fuel = Fuel(remaining: fuel) }
        do {
            instance = try module.module.instantiate(store: store, imports: imports)
        } catch {
            if memoryCap.refused != nil { throw PluginLoadError(.wasmMemoryTotalReached(limit: module.limits.memoryTotal.limit), at: path) }
            throw PluginLoadError(.wasm(Self.instantiationFailure(error, store: store, limits: module.limits)), at: path)
        }
        guard let memory = instance.exports[memory: "memory"] else {
            throw PluginLoadError(.wasm("the module exports no memory named \"memory\""), at: path)
        }
        self.memory = memory
        context.memory = memory
        var found: [Function] = []
        for (name, type) in WasmPluginModule.requiredExports {
            guard let function = instance.exports[function: name] else {
                throw PluginLoadError(.wasm("the module does not export \(name), which every plugin module must (see actomaton_wasm_plugin.h)"), at: path)
            }
            guard function.type == type else {
                throw PluginLoadError(.wasm("the module's \(name) has the signature \(signatureText(function.type)), not \(signatureText(type))"), at: path)
            }
            found.append(function)
        }
        alloc = found[2]
        snapshotFunction = found[3]
        restoreFunction = found[4]
        describeFunction = found[5]
        manifestFunction = found[1]
        let version: UInt32
        do {
            version = try call(found[0], [])?.i32 ?? 0
        } catch {
            throw PluginLoadError(.wasm("actomaton_abi_version trapped: \(error.message)"), at: path)
        }
        guard WasmPluginModule.abiVersions.contains(version) else {
            throw PluginLoadError(.manifest(.unsupportedABIVersion(found: version, supported: WasmPluginModule.abiVersion)), at: path)
        }
        if let plugin { try bindActions(of: plugin.manifest, plugin: plugin) }
    }

    /// Why instantiation failed, on one line: the start function out of fuel or trapped, a
    /// memory or table past its cap, or (at load, where every function is compiled) a function
    /// that is not valid.
    private static func instantiationFailure(_ error: any Error, store: Store, limits: WasmLimits) -> String {
        let message = oneLine(error)
        if !(error is Trap), error is WasmKitError, message.contains(" at offset 0x") {
            return "a function of the module is not valid WebAssembly: \(message)"
        }
        if message == "out of fuel", let fuel = limits.fuel {
            return "the module's start function ran out of fuel (the budget is \(fuel) per call; --fuel raises it)"
        }
        // A trap other than a cap or a data or element segment out of bounds comes from running
        // code, and the start function is the only code instantiation runs; so does one that
        // used fuel.
        let fromSetUp = message.hasPrefix("initial ") || message == "out of bounds memory access"
            || message.hasPrefix("out of bounds table access")
        let usedFuel = limits.fuel.map { fuel in (store.fuel?.remaining ?? fuel) < fuel } ?? false
        if error is Trap, !message.hasPrefix("initial "), !fromSetUp || usedFuel {
            return "the module's start function trapped: \(message)"
        }
        if message.hasPrefix("initial memory size exceeds the resource limit") {
            return "cannot instantiate the module: \(message) (the limit is \(limits.memoryLimit) bytes; --wasm-memory-limit raises it)"
        }
        if message.hasPrefix("initial table size exceeds the resource limit") {
            return "cannot instantiate the module: \(message) (a table may have at most \(WasmLimits.maxTableElements) elements; that limit is fixed)"
        }
        return "cannot instantiate the module: \(message)"
    }

    /// Binds the action exports and the plugin the imports check requests against.
    private func bindActions(of manifest: PluginManifest, plugin: Plugin?) throws(PluginLoadError) {
        var bound: [Function] = []
        parameterTypes = manifest.actions.map { $0.parameters.map(\.type) }
        for action in manifest.actions {
            let name = WasmPluginModule.exportName(of: action.name)
            let expected = FunctionType(parameters: WasmPluginModule.wasmParameters(action.parameters.map(\.type)), results: [.i32])
            guard let function = instance.exports[function: name] else {
                throw PluginLoadError(.wasm("the manifest declares action '\(action.name)' but the module does not export \(name)"), at: path)
            }
            guard function.type == expected else {
                throw PluginLoadError(.wasm("the module's \(name) has the signature \(signatureText(function.type)), "
                    + "but '\(action)' needs \(signatureText(expected))"), at: path)
            }
            bound.append(function)
        }
        if manifest.namesActiveNodes {
            let (name, type) = WasmPluginModule.activeExport
            guard let function = instance.exports[function: name] else {
                throw PluginLoadError(.wasm("the manifest says the module names active nodes but it does not export \(name)"), at: path)
            }
            guard function.type == type else {
                throw PluginLoadError(.wasm("the module's \(name) has the signature \(signatureText(function.type)), not \(signatureText(type))"), at: path)
            }
            activeFunction = function
        }
        actions = bound
        context.plugin = plugin
    }

    // MARK: Calls

    /// Why a call into the module failed.
    struct CallFailure: Error {
        let message: String
        /// Whether the instance trapped (and must not be used again).
        let trapped: Bool
    }

    /// The fuel the last snapshot or restore spent (metered modules only): for tests.
    private(set) var stateCallFuel: UInt64 = 0

    /// Calls `function` with the fuel budget (an action's, or `stateFuel` for a snapshot or a
    /// restore, which the host needs to rebuild an instance); a trap is a ``CallFailure``.
    private func call(_ function: Function, _ arguments: [Value], walksTheState: Bool = false) throws(CallFailure) -> Value? {
        let budget = walksTheState ? module.limits.stateFuel(memoryBytes: memory.byteCount) : module.limits.fuel
        if let budget { store.fuel = Fuel(remaining: budget) }
        defer {
            if walksTheState, let budget { stateCallFuel = budget - min(store.fuel?.remaining ?? budget, budget) }
        }
        do {
            return try function.invoke(arguments).first
        } catch {
            var message = oneLine(error)
            if message == "out of fuel", let budget, let fuel = module.limits.fuel {
                message = budget == fuel
                    ? "it ran out of fuel (the budget is \(fuel) per call; --fuel raises it)"
                    : "it ran out of fuel (the budget is \(budget): \(fuel) per call, and \(WasmLimits.stateFuelPerMemoryByte) per byte of its memory; "
                        + "--fuel raises it)"
            } else {
                message = "it trapped: \(message)"
            }
            throw CallFailure(message: message, trapped: true)
        }
    }

    /// Reads and validates the manifest, and binds the action exports it names.
    func readManifest() throws(PluginLoadError) -> PluginManifest {
        context.phase = .loading
        defer { context.phase = .idle; context.reset() }
        let offset: UInt32
        do {
            offset = try call(manifestFunction, [])?.i32 ?? 0
        } catch {
            throw PluginLoadError(.wasm("actomaton_manifest failed: \(error.message)"), at: path)
        }
        guard offset != 0 else {
            let why = context.recorder.failureMessage.map { ": \($0)" } ?? ""
            throw PluginLoadError(.manifest(.invalid("the module returned no manifest\(why)")), at: path)
        }
        let manifest: PluginManifest
        do {
            manifest = try WasmManifestReader(memory: memory).read(at: offset)
        } catch {
            throw PluginLoadError(.manifest(error), at: path)
        }
        try bindActions(of: manifest, plugin: nil)
        return manifest
    }

    /// Runs `action` (checked against this plugin), returning what it requested.
    func perform(_ action: PluginAction) throws(CallFailure) -> PluginInstance.Outcome {
        var arguments: [Value] = []
        let types = parameterTypes[action.index]
        var strings: [[UInt8]] = []
        for case let .string(text) in action.arguments { strings.append(Array(text.utf8)) }
        var stringOffset: UInt32 = 0
        if !strings.isEmpty {
            let total = strings.reduce(0) { $0 + $1.count }
            stringOffset = try buffer(for: total, what: "the action's string arguments")
            var cursor = Int(stringOffset)
            for bytes in strings {
                try write(bytes, at: cursor)
                cursor += bytes.count
            }
        }
        for (value, type) in zip(action.arguments, types) {
            switch (value, type) {
            case let (.bool(b), _): arguments.append(.i32(b ? 1 : 0))
            case let (.int(n), .int64): arguments.append(.i64(UInt64(bitPattern: n)))
            case let (.int(n), _): arguments.append(.i32(UInt32(truncatingIfNeeded: n)))
            case let (.uint(n), .uint64): arguments.append(.i64(n))
            case let (.uint(n), _): arguments.append(.i32(UInt32(truncatingIfNeeded: n)))
            case let (.float(x), .float): arguments.append(.f32(Float(x).bitPattern))
            case let (.float(x), _): arguments.append(.f64(x.bitPattern))
            case let (.string(text), _):
                let length = UInt32(text.utf8.count)
                arguments.append(.i32(stringOffset))
                arguments.append(.i32(length))
                stringOffset += length
            }
        }
        context.reset()
        context.phase = .acting
        defer { context.phase = .idle }
        let status = Int32(bitPattern: try call(actions[action.index], arguments)?.i32 ?? 1)
        return context.recorder.outcome(of: action, status: status)
    }

    /// The module's snapshot of its state.
    func snapshot() throws(CallFailure) -> [UInt8] {
        try readPacked(snapshotFunction, limit: PluginLimits.maxSnapshotBytes, what: "snapshot", walksTheState: true)
    }

    /// The module's description of its state.
    func describe() throws(CallFailure) -> String {
        TerminalText.decoding(try readPacked(describeFunction, limit: PluginLimits.maxDescriptionBytes, what: "description"))
    }

    /// The names of the diagram's nodes active in the state (`actomaton_active`), checked by
    /// `ActiveNodes`; `nil` when the module names none. A bad list is a ``CallFailure``
    /// that did not trap.
    func activeNodes() throws(CallFailure) -> [String]? {
        guard let activeFunction else { return nil }
        let bytes = try readPacked(activeFunction, limit: ActiveNodes.maxBytes, what: "list of active nodes")
        do throws(ActiveNodes.Problem) {
            return try ActiveNodes.parse(bytes)
        } catch {
            throw CallFailure(message: error.description, trapped: false)
        }
    }

    /// Replaces the state from `bytes`; a refusal is a ``CallFailure`` that did not trap.
    func restore(_ bytes: [UInt8]) throws(CallFailure) {
        let offset = try buffer(for: bytes.count, what: "the snapshot")
        try write(bytes, at: Int(offset))
        context.reset()
        context.phase = .restoring
        defer { context.phase = .idle; context.reset() }
        let status = Int32(bitPattern: try call(restoreFunction, [.i32(offset), .i32(UInt32(bytes.count))], walksTheState: true)?.i32 ?? 1)
        if let refusal = context.recorder.restoreRefusal(status: status) { throw CallFailure(message: refusal, trapped: false) }
    }

    // MARK: Memory

    /// An `actomaton_alloc` buffer of `count` bytes, checked to lie inside memory.
    private func buffer(for count: Int, what: String) throws(CallFailure) -> UInt32 {
        let offset = try call(alloc, [.i32(UInt32(count))])?.i32 ?? 0
        guard offset != 0 else { throw CallFailure(message: "the module has no memory for \(what) (\(count) bytes)", trapped: false) }
        guard Int(offset) + count <= memory.byteCount else {
            throw CallFailure(message: "actomaton_alloc returned a buffer past the end of memory", trapped: true)
        }
        return offset
    }

    private func write(_ bytes: [UInt8], at offset: Int) throws(CallFailure) {
        guard offset + bytes.count <= memory.byteCount else { throw CallFailure(message: "a buffer past the end of memory", trapped: true) }
        guard !bytes.isEmpty else { return }
        memory.withUnsafeMutableBufferPointer(offset: UInt(offset), count: bytes.count) { buffer in
            buffer.copyBytes(from: bytes)
        }
    }

    /// Calls a function that returns offset | length << 32 and copies those bytes out.
    private func readPacked(_ function: Function, limit: Int, what: String, walksTheState: Bool = false) throws(CallFailure) -> [UInt8] {
        let packed = try call(function, [], walksTheState: walksTheState)?.i64 ?? 0
        let offset = Int(packed & 0xFFFF_FFFF), length = Int(packed >> 32)
        guard length <= limit else {
            throw CallFailure(message: "the \(what) is \(length) bytes, more than the limit of \(limit)", trapped: false)
        }
        guard let bytes = readMemory(memory, offset: offset, length: length) else {
            throw CallFailure(message: "the module returned a \(what) of \(length) bytes at offset \(offset), past the end of its memory (\(memory.byteCount) bytes)", trapped: false)
        }
        return bytes
    }
}

/// `length` bytes at `offset` of `memory`, or `nil` when they are not all inside it.
func readMemory(_ memory: Memory, offset: Int, length: Int) -> [UInt8]? {
    guard offset >= 0, length >= 0, offset + length <= memory.byteCount else { return nil }
    if length == 0 { return [] }
    return memory.withUnsafeBufferPointer(offset: UInt(offset), count: length) { Array($0) }
}

/// A signature as messages show it: `(i32, i64) -> i32`.
func signatureText(_ type: FunctionType) -> String {
    func name(_ value: ValueType) -> String {
        switch value {
        case .i32: "i32"
        case .i64: "i64"
        case .f32: "f32"
        case .f64: "f64"
        default: "\(value)"
        }
    }
    let results = type.results.map(name)
    return "(\(type.parameters.map(name).joined(separator: ", "))) -> " + (results.count == 1 ? results[0] : "(\(results.joined(separator: ", ")))")
}

/// Refuses memory past the host's cap for one instance, or past what the host's instances may
/// have together (``WasmMemoryBudget``), and tables past ``WasmLimits/maxTableElements``.
///
/// A module has one memory (WasmKit refuses a second without the multi-memory feature, which
/// the host does not enable), so `desired` is that memory's whole size. Confined to its
/// machine, like the store that asks it: one call at a time.
final class MemoryCap: ResourceLimiter, @unchecked Sendable {
    let limit: Int
    let total: WasmMemoryBudget
    /// The bytes this instance holds of the total: its memory's size, or more while a credit
    /// handed over by a rebuild is unspent (``trim()``).
    private(set) var reserved: Int
    /// The memory's size, as last granted.
    private(set) var granted = 0
    /// The size a grow the total refused asked for, and how many bytes more than this instance
    /// held, since this was last set to `nil` (before each call that may grow the memory).
    var refused: (size: Int, needed: Int)?
    /// Whether reservations are taken whether or not they fit the total (while the instance is
    /// rebuilt in place of one that trapped).
    var forcing = false

    /// - Parameter credit: Bytes already reserved from `total` that this instance takes over
    ///   (those of the instance it replaces), so that a rebuild never waits on the others.
    init(limit: Int, total: WasmMemoryBudget, credit: Int = 0) {
        self.limit = limit
        self.total = total
        reserved = credit
    }

    deinit {
        total.release(reserved)
    }

    func limitMemoryGrowth(to desired: Int) throws -> Bool {
        guard desired <= limit else { return false }
        if desired > reserved {
            if forcing {
                total.forceReserve(desired - reserved)
            } else if !total.reserve(desired - reserved) {
                refused = (desired, desired - reserved)
                return false
            }
            reserved = desired
        }
        granted = max(granted, desired)
        return true
    }

    func limitTableGrowth(to desired: Int) throws -> Bool { desired <= WasmLimits.maxTableElements }

    /// Gives the total back what this instance reserved beyond its memory's size.
    func trim() {
        guard reserved > granted else { return }
        total.release(reserved - granted)
        reserved = granted
    }

    /// Hands over everything this instance reserved (to the instance that replaces it).
    func surrender() -> Int {
        defer { reserved = 0 }
        return reserved
    }
}

extension Value {
    var i32: UInt32? { if case let .i32(value) = self { value } else { nil } }
    var i64: UInt64? { if case let .i64(value) = self { value } else { nil } }
}
