import ActomatonPluginContract
import ActomatonPluginABI
import ActomatonFFI
import CFFI
import Synchronization

/// A loaded plugin: its validated manifest, one libffi call interface per action prepared at
/// load, and its lifecycle functions. Immutable and shareable; each machine makes its own
/// ``PluginInstance`` from it.
///
/// ```swift
/// let plugin = try Plugin.load(path: "counter.so")
/// let action = try plugin.action("add", [.int(5)])
/// ```
public final class Plugin: Sendable {
    /// Options for ``load(path:options:)``.
    public struct LoadOptions: Sendable {
        /// Loads a file that others could change: one owned by another user, writable by group
        /// or others, or in a directory they can write (see `PluginFile`). Off by default:
        /// whoever can write a plugin file, or replace it, can run code in the host.
        public var allowWritableByOthers: Bool
        /// The largest plugin file loaded, in bytes; see ``PluginLimits/defaultMaxFileSize``.
        public var maxFileSize: Int64
        /// The entry symbol to look up. Tests use it to load the fixture library's broken
        /// manifests; plugins always export the default.
        public var entrySymbol: String
        /// The sandbox's limits for a `.wasm` plugin (fuel, memory); ignored for a `.so`.
        public var wasmLimits: WasmLimits

        /// Creates options.
        public init(
            allowWritableByOthers: Bool = false,
            maxFileSize: Int64 = PluginLimits.defaultMaxFileSize,
            entrySymbol: String = ACTOMATON_PLUGIN_ENTRY_SYMBOL,
            wasmLimits: WasmLimits = WasmLimits()
        ) {
            self.allowWritableByOthers = allowWritableByOthers
            self.maxFileSize = maxFileSize
            self.entrySymbol = entrySymbol
            self.wasmLimits = wasmLimits
        }
    }

    /// The file the plugin was loaded from, as given.
    public let path: String
    /// The validated manifest.
    public let manifest: PluginManifest
    /// Identifies this load: actions checked against it carry it.
    let vocabulary: UInt64
    /// The file's identity when it was read, to notice when it is replaced.
    let fileIdentity: FileIdentity
    /// The plugin's code, as loaded: what a runtime for it is made from
    /// (``PluginRuntimes/make(plugin:log:effectBudget:)``).
    let code: PluginCode
    /// Whether the plugin is a `.wasm` module, run in the WebAssembly sandbox.
    public var isWebAssembly: Bool {
        if case .wasm = code { true } else { false }
    }
    /// The memory budget a `.wasm` plugin's instances share with the host's others, and the
    /// bytes one more instance takes from it when made; `nil` for a `.so`.
    public var wasmMemory: (total: WasmMemoryBudget, perInstance: Int)? {
        if case let .wasm(module) = code { (module.limits.memoryTotal, module.initialMemoryBytes) } else { nil }
    }
    /// Action indices by name.
    private let actionIndex: [String: Int]

    private static let nextVocabulary = Atomic<UInt64>(1)

    init(path: String, manifest: PluginManifest, fileIdentity: FileIdentity, code: PluginCode) {
        self.path = path
        self.manifest = manifest
        self.fileIdentity = fileIdentity
        self.code = code
        vocabulary = Self.nextVocabulary.add(1, ordering: .relaxed).newValue
        actionIndex = Dictionary(uniqueKeysWithValues: manifest.actions.enumerated().map { ($1.name, $0) })
    }

    /// Loads, validates and prepares the plugin at `path`: a shared library (see
    /// `PluginLoader`) or a WebAssembly module (recognised by its first bytes, whatever the
    /// file's name), which runs in the sandbox with `options.wasmLimits`.
    public static func load(path: String, options: LoadOptions = LoadOptions()) throws(PluginLoadError) -> Plugin {
        if PluginFile.isWasm(path) {
            let (bytes, identity) = try PluginFile.readVetted(path, options: options)
            return try WasmPluginModule.load(path: path, bytes: bytes, identity: identity, limits: options.wasmLimits)
        }
        var loader = PluginLoader(path: path, options: options)
        do {
            return try loader.run()
        } catch where error.reason == .notELF && path.hasSuffix(".wasm") {
            // Named as a module, and neither a module nor a library: say what its name promised.
            throw PluginLoadError(.wasm("not a WebAssembly module: it does not begin with the magic bytes \\0asm"), at: path)
        }
    }

    /// The plugin's name, from its manifest.
    public var name: String { manifest.name }

    /// Checks `name` and `arguments` against the vocabulary and returns the action to send.
    ///
    /// Refuses an unknown action, a wrong number of arguments, an argument of the wrong kind,
    /// an integer out of its parameter's range, and a string with a NUL character or longer
    /// than ``PluginLimits/maxStringArgumentBytes``, naming which.
    public func action(_ name: String, _ arguments: [PluginValue]) throws(PluginCallError) -> PluginAction {
        do {
            return try checkedAction(name, arguments)
        } catch {
            throw PluginCallError(error, plugin: manifest.name)
        }
    }

    /// ``action(_:_:)``, throwing the reason alone.
    func checkedAction(_ name: String, _ arguments: [PluginValue]) throws(PluginCallError.Reason) -> PluginAction {
        guard let index = actionIndex[name] else {
            throw .unknownAction(name, plugin: manifest.name, known: manifest.actions.map(\.name))
        }
        let signature = manifest.actions[index]
        guard arguments.count == signature.parameters.count else {
            throw .wrongArgumentCount(action: name, signature: signature.description,
                                      expected: signature.parameters.count, got: arguments.count)
        }
        var checked: [PluginValue] = []
        checked.reserveCapacity(arguments.count)
        for (position, (value, parameter)) in zip(arguments, signature.parameters).enumerated() {
            do {
                checked.append(try Self.check(value, against: parameter.type))
            } catch let failure {
                switch failure {
                case .wrongKind:
                    throw .wrongArgumentType(action: name, index: position + 1, parameter: parameter.name,
                                             expected: parameter.type, got: value.kindDescription)
                case .outOfRange:
                    throw .integerOutOfRange(action: name, index: position + 1, parameter: parameter.name,
                                             type: parameter.type, value: value.description)
                case .containsNUL:
                    throw .stringContainsNUL(action: name, index: position + 1, parameter: parameter.name)
                case .tooLong:
                    throw .stringTooLong(action: name, index: position + 1, parameter: parameter.name,
                                         limit: PluginLimits.maxStringArgumentBytes)
                }
            }
        }
        return PluginAction(name: name, arguments: checked, index: index, vocabulary: vocabulary)
    }

    private enum CheckFailure: Error { case wrongKind, outOfRange, containsNUL, tooLong }

    /// `value` in the form the call expects for `type`: integers as `.int` (or `.uint` for
    /// unsigned types), floats as `.float`.
    private static func check(_ value: PluginValue, against type: PluginValueType) throws(CheckFailure) -> PluginValue {
        switch (type, value) {
        case (.bool, .bool):
            return value
        case let (.string, .string(text)):
            // A C plugin receives a NUL-terminated string: a NUL would cut it short.
            guard text.utf8.count <= PluginLimits.maxStringArgumentBytes else { throw .tooLong }
            guard !text.utf8.contains(0) else { throw .containsNUL }
            return value
        case let (.float, .float(x)):
            // Past a Float's range the plugin would get infinity.
            guard !x.isFinite || abs(x) <= Double(Float.greatestFiniteMagnitude) else { throw .outOfRange }
            return value
        case (.double, .float):
            return value
        case (.float, .int(let n)), (.double, .int(let n)):
            return .float(Double(n))
        case (.float, .uint(let n)), (.double, .uint(let n)):
            return .float(Double(n))
        case (_, .int(let n)):
            if let range = type.signedRange {
                guard range.contains(n) else { throw .outOfRange }
                return .int(n)
            }
            if let max = type.unsignedMax {
                guard n >= 0, UInt64(n) <= max else { throw .outOfRange }
                return .uint(UInt64(n))
            }
            throw .wrongKind
        case (_, .uint(let n)):
            if type.signedRange != nil { throw .outOfRange } // .uint is only made for values above Int64.max
            if let max = type.unsignedMax {
                guard n <= max else { throw .outOfRange }
                return .uint(n)
            }
            throw .wrongKind
        case let (_, .float(x)) where type.signedRange != nil || type.unsignedMax != nil:
            // JSON has one kind of number: an integer written `1.0` or `1e2` (as some encoders
            // write every number) is that integer; one with a fraction is not, nor one past 2^53,
            // which a double may hold as another integer than the one written (…993.0 is …992).
            guard x.isFinite, x.rounded(.towardZero) == x else { throw .wrongKind }
            // Past every int64 (lines and JSON give the integers below it as `.int` or `.uint`).
            guard x.magnitude < 0x1p63 else { throw .outOfRange }
            guard x.magnitude <= 9_007_199_254_740_992 else { throw .wrongKind }
            return try check(.int(Int64(x)), against: type)
        default:
            throw .wrongKind
        }
    }
}

/// A plugin's code, as its load left it; decided once, by the file's kind and where it runs.
enum PluginCode: Sendable {
    /// A shared library mapped in this process: one prepared call per action, in manifest
    /// order, and the lifecycle functions.
    case native(actions: [PreparedAction], functions: LifecycleFunctions)
    /// A `.wasm` module, run in the sandbox.
    case wasm(WasmPluginModule)
    /// A shared library loaded by a worker process: only its manifest is here.
    case inWorker
}

/// One action's libffi call interface and entry point, prepared at load.
final class PreparedAction: @unchecked Sendable {
    /// `actomaton_status entry(void *state, T1, ..., Tn)`.
    let interface: CallInterface
    /// The entry point, as libffi calls it.
    let entry: @convention(c) () -> Void
    /// The parameter types, in order.
    let parameterTypes: [PluginValueType]

    init(interface: CallInterface, entry: @escaping @convention(c) () -> Void, parameterTypes: [PluginValueType]) {
        self.interface = interface
        self.entry = entry
        self.parameterTypes = parameterTypes
    }
}

/// The plugin's lifecycle functions, checked non-`NULL` at load, and its `active` function
/// (ABI version 2), which may be `NULL`.
struct LifecycleFunctions: @unchecked Sendable {
    let create: @convention(c) (UnsafePointer<actomaton_host>?) -> UnsafeMutableRawPointer?
    let destroy: @convention(c) (UnsafeMutableRawPointer?) -> Void
    let snapshot: @convention(c) (UnsafeRawPointer?, UnsafeMutablePointer<UInt8>?, Int) -> Int
    let restore: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<UInt8>?, Int) -> Int32
    let describe: @convention(c) (UnsafeRawPointer?, UnsafeMutablePointer<CChar>?, Int) -> Int
    let active: (@convention(c) (UnsafeRawPointer?, UnsafeMutablePointer<CChar>?, Int) -> Int)?
}
