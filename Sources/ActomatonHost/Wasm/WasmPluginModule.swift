import ActomatonPluginContract
@_spi(Fuzzing) import WasmKit
import WasmParser

/// A validated `.wasm` plugin module: parsed once at load, instantiated once per machine
/// (and again after a trap). See `wasm/kit/actomaton_wasm_plugin.h` for the contract.
final class WasmPluginModule: @unchecked Sendable {
    let engine: Engine
    let module: Module
    let limits: WasmLimits
    /// The memory an instance has once made (its declared minimum, and what its start
    /// function grew): what making one more takes from ``WasmLimits/memoryTotal``.
    private(set) var initialMemoryBytes = 0

    /// The newest contract version this host speaks.
    static let abiVersion: UInt32 = 2
    /// Every contract version this host accepts: version 2 added the manifest's diagram and
    /// active-nodes flag, and the `actomaton_active` export.
    static let abiVersions: ClosedRange<UInt32> = 1...2
    /// The export that names the active nodes, required when a version-2 manifest says so.
    static let activeExport = ("actomaton_active", FunctionType(parameters: [], results: [.i64]))
    /// The exports every module has, with their signatures.
    static let requiredExports: [(String, FunctionType)] = [
        ("actomaton_abi_version", FunctionType(parameters: [], results: [.i32])),
        ("actomaton_manifest", FunctionType(parameters: [], results: [.i32])),
        ("actomaton_alloc", FunctionType(parameters: [.i32], results: [.i32])),
        ("actomaton_snapshot", FunctionType(parameters: [], results: [.i64])),
        ("actomaton_restore", FunctionType(parameters: [.i32, .i32], results: [.i32])),
        ("actomaton_describe", FunctionType(parameters: [], results: [.i64])),
    ]

    private init(engine: Engine, module: Module, limits: WasmLimits) {
        self.engine = engine
        self.module = module
        self.limits = limits
    }

    /// Whether `bytes` start with the WebAssembly magic number.
    static func isWasm(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.starts(with: [0x00, 0x61, 0x73, 0x6D])
    }

    /// Counts and parses `bytes`, checks them against the fixed limits, compiles every
    /// function of a first instance (so that a function that is not valid is refused here, not
    /// at its first call), reads the manifest from it and returns the plugin.
    static func load(path: String, bytes: [UInt8], identity: FileIdentity, limits: WasmLimits) throws(PluginLoadError) -> Plugin {
        let census: WasmModuleCensus
        let module: Module
        do {
            census = try WasmModuleCensus.take(bytes)
        } catch {
            throw PluginLoadError(.wasm(error.description), at: path)
        }
        do {
            module = try parseWasm(bytes: census.stripped)
        } catch {
            throw PluginLoadError(.wasm("not a valid WebAssembly module: \(oneLine(error))"), at: path)
        }
        do {
            try WasmModuleCensus.checkNesting(census.stripped)
        } catch {
            throw PluginLoadError(.wasm(error.description), at: path)
        }
        let tables = census.tables
        guard tables <= WasmLimits.maxTables else {
            throw PluginLoadError(.wasm("the module declares \(tables) tables; a module may have at most \(WasmLimits.maxTables) "
                                        + "(each of at most \(WasmLimits.maxTableElements) elements; those limits are fixed)"), at: path)
        }
        for item in module.imports {
            guard item.module == "actomaton", case .function = item.descriptor, HostImport(rawValue: item.name) != nil else {
                let kind = switch item.descriptor {
                case .function: "function"
                case .memory: "memory"
                case .table: "table"
                case .global: "global"
                case .tag: "tag"
                }
                let why = item.module.hasPrefix("wasi") ? "plugins get no WASI (file-system, network or clock) access" : "the host provides only the functions of module \"actomaton\""
                throw PluginLoadError(.wasm("the module imports \(kind) \(item.module).\(item.name), which the host does not provide: \(why)"), at: path)
            }
        }
        let engine = Engine(configuration: EngineConfiguration(fuelMetering: limits.fuel != nil))
        // Every later instance compiles a function at its first call.
        let eager = Engine(configuration: EngineConfiguration(compilationMode: .eager, fuelMetering: limits.fuel != nil))
        let probe = try WasmMachine(module: WasmPluginModule(engine: eager, module: module, limits: limits), path: path)
        let initialMemoryBytes = probe.memoryCap.granted
        let manifest = try probe.readManifest()
        let pluginModule = WasmPluginModule(engine: engine, module: module, limits: limits)
        pluginModule.initialMemoryBytes = initialMemoryBytes
        return Plugin(path: path, manifest: manifest, fileIdentity: identity, code: .wasm(pluginModule))
    }

    /// The wasm parameter types of an action export whose parameters are `types`.
    static func wasmParameters(_ types: [PluginValueType]) -> [ValueType] {
        types.flatMap { type -> [ValueType] in
            switch type {
            case .bool, .int8, .int16, .int32, .uint8, .uint16, .uint32: [.i32]
            case .int64, .uint64: [.i64]
            case .float: [.f32]
            case .double: [.f64]
            case .string: [.i32, .i32]
            }
        }
    }

    /// The name of action `name`'s export.
    static func exportName(of name: String) -> String { "actomaton_action_" + name }
}

/// `error`'s description on one line, without WasmKit's backtrace.
func oneLine(_ error: any Error) -> String {
    var text = "\(error)"
    if let newline = text.firstIndex(of: "\n") { text = String(text[..<newline]) }
    // WasmKit shows a parser's message with an offset as `"Message(text: "…")" at offset 0x8`.
    let wrapped = #""Message(text: ""#
    if text.hasPrefix(wrapped), let end = text.firstRange(of: #"")" at offset "#) {
        text = String(text[text.index(text.startIndex, offsetBy: wrapped.count)..<end.lowerBound]) + " at offset " + text[end.upperBound...]
    } else if text.hasPrefix("\""), let end = text.firstRange(of: "\" at offset ") {
        // A validation error: `"text" at offset 0x135`.
        text = String(text[text.index(after: text.startIndex)..<end.lowerBound]) + " at offset " + text[end.upperBound...]
    }
    if text.hasPrefix("Trap: ") { text.removeFirst(6) }
    return text
}
