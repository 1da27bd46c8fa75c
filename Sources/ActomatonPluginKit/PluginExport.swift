import ActomatonCore
import ActomatonPluginABI
import ActomatonPluginContract
import ActomatonFFI
import CFFI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Exports a core reducer as an Actomaton plugin: it writes the manifest, the typed entry
/// points, state creation, snapshot / restore and the description.
///
/// A Swift plugin is a reducer whose output is `PluginEffect`, a state that is `Codable`
/// (snapshots are JSON) or `PluginSnapshotCodable` (snapshots are its bytes, the same as the
/// wasm kit writes), and these few lines (in a `.library(type: .dynamic)` target):
///
/// ```swift
/// let plugin = PluginExport(
///     name: "counter", version: "1.0.0",
///     reducer: counter, initialState: 0,
///     actions: [
///         .action("add", "amount") { (amount: Int64) in .add(amount) },
///         .action("reset") { .reset },
///     ],
///     requests: { action in
///         switch action {
///         case let .add(amount): PluginCall("add", .int(amount))
///         case .reset: PluginCall("reset")
///         }
///     }
/// )
///
/// @_cdecl("actomaton_plugin_entry")
/// public func actomatonPluginEntry(_ hostABIVersion: UInt32) -> UnsafeRawPointer? {
///     plugin.manifest
/// }
/// ```
///
/// `actions` is the vocabulary, an array of `PluginActionEntry` (from `ActomatonPluginCore`,
/// which this module re-exports): declared once, in a file that imports only `ActomatonCore`
/// and `ActomatonPluginCore`, the same value builds the `.wasm` plugin too
/// (`WasmPlugin(…, actions:)`). A vocabulary past the contract's limits (an entry with more
/// than `ACTOMATON_MAX_PARAMETERS` parameters, more than `ACTOMATON_MAX_ACTIONS` entries, or
/// none) is refused at load, with the reason on standard error.
///
/// `requests` maps an action to its vocabulary entry when the reducer requests it as an
/// effect (`PluginEffect/next(_:)`, `PluginEffect/after(_:send:id:queue:)`, …); it is
/// checked when the manifest is built — each entry's action, made from example arguments,
/// must map back to that entry — and a plugin whose mapping is wrong is refused at load with
/// the reason on standard error. A reducer that requests no actions can leave it out.
///
/// `diagram` (ABI version 2) puts the plugin's state diagram, Graphviz DOT, in the manifest
/// and an `active` function that names the diagram's nodes active in a state: a
/// `PluginDiagram`, made from a core transition table or statechart, or DOT written by hand.
///
/// The typed entry points are libffi closures made once, when the manifest is first asked
/// for: each has the C signature its parameters declare, so the host calls it exactly as it
/// calls a plugin written in C. An action runs the reducer on a copy of the state and keeps
/// the copy only when the output does not `PluginEffect/fail(_:)` and the host accepts
/// every effect request: a refused action leaves the state unchanged.
public final class PluginExport<Reducer: MealyReducerProtocol & Sendable>: ExportBase, @unchecked Sendable
where Reducer.Environment == Void, Reducer.Output == PluginEffect<Reducer.Action> {
    /// The manifest to return from `actomaton_plugin_entry`. If libffi could not make the
    /// entry points, the vocabulary is past the contract's limits, or `requests` does not map
    /// the vocabulary back, its `create` is `NULL`,
    /// which the host refuses with a clear error.
    public let manifest: UnsafeRawPointer

    let reducer: Reducer
    let initialState: Reducer.State
    let actions: [PluginActionEntry<Reducer.Action>]
    let requests: ((Reducer.Action) -> PluginCall)?
    let coding: StateCoding<Reducer.State>
    /// Names the diagram's nodes active in a state, if the plugin does.
    let activeNodes: ((Reducer.State) -> [String])?
    /// The closures and objects the manifest's function pointers use; kept for the library's life.
    private var keepAlive: [AnyObject] = []

    /// Describes a plugin whose state is `Codable` (JSON snapshots) and builds its manifest.
    ///
    /// - Parameters:
    ///   - name: The plugin's name (letters, digits and `_`).
    ///   - version: Its version, free text.
    ///   - summary: One line saying what it does.
    ///   - reducer: The reducer every state runs.
    ///   - initialState: The state `create` makes.
    ///   - actions: The vocabulary, in the order of the manifest: the same value a `.wasm`
    ///     build hands to `WasmPlugin(…, actions:)`.
    ///   - requests: The vocabulary entry and arguments of an action the reducer requests.
    ///   - diagram: The plugin's state diagram and how to find its active nodes (ABI version 2);
    ///     see `PluginDiagram`.
    public convenience init(
        name: String,
        version: String,
        summary: String? = nil,
        reducer: Reducer,
        initialState: Reducer.State,
        actions: [PluginActionEntry<Reducer.Action>],
        requests: ((Reducer.Action) -> PluginCall)? = nil,
        diagram: PluginDiagram<Reducer.State>? = nil
    ) where Reducer.State: Codable {
        self.init(name: name, version: version, summary: summary, reducer: reducer, initialState: initialState,
                  actions: actions, requests: requests, diagram: diagram, coding: .json())
    }

    /// Describes a plugin whose state is `PluginSnapshotCodable` (byte snapshots, as in the
    /// wasm kit: the `.so` and the `.wasm` then read each other's snapshots) and builds its
    /// manifest. The description is the state's `description` when it is
    /// `CustomStringConvertible`.
    ///
    /// - Parameters:
    ///   - name: The plugin's name (letters, digits and `_`).
    ///   - version: Its version, free text.
    ///   - summary: One line saying what it does.
    ///   - reducer: The reducer every state runs.
    ///   - initialState: The state `create` makes.
    ///   - actions: The vocabulary, in the order of the manifest: the same value a `.wasm`
    ///     build hands to `WasmPlugin(…, actions:)`.
    ///   - requests: The vocabulary entry and arguments of an action the reducer requests.
    ///   - diagram: The plugin's state diagram and how to find its active nodes (ABI version 2);
    ///     see `PluginDiagram`.
    public convenience init(
        name: String,
        version: String,
        summary: String? = nil,
        reducer: Reducer,
        initialState: Reducer.State,
        actions: [PluginActionEntry<Reducer.Action>],
        requests: ((Reducer.Action) -> PluginCall)? = nil,
        diagram: PluginDiagram<Reducer.State>? = nil
    ) where Reducer.State: PluginSnapshotCodable {
        self.init(name: name, version: version, summary: summary, reducer: reducer, initialState: initialState,
                  actions: actions, requests: requests, diagram: diagram, coding: .bytes())
    }

    init(
        name: String, version: String, summary: String?, reducer: Reducer, initialState: Reducer.State,
        actions: [PluginActionEntry<Reducer.Action>], requests: ((Reducer.Action) -> PluginCall)?,
        diagram: PluginDiagram<Reducer.State>? = nil, coding: StateCoding<Reducer.State>
    ) {
        self.reducer = reducer
        self.initialState = initialState
        self.actions = actions
        self.requests = requests
        self.coding = coding
        activeNodes = diagram?.activeNodes
        manifest = Self.buildManifest(name: name, version: version, summary: summary, actions: actions,
                                      diagram: diagram?.dot, namesActiveNodes: diagram?.activeNodes != nil)
        super.init()
        finishManifest()
        if let problem = Self.vocabularyProblem(actions, requests) {
            printLine("[\(name)] the plugin cannot be loaded: \(problem)")
            fail(UnsafeMutablePointer(mutating: manifest.assumingMemoryBound(to: actomaton_manifest.self)))
        }
    }

    /// Checks the vocabulary against the contract's limits (`ACTOMATON_MAX_PARAMETERS`,
    /// `ACTOMATON_MAX_ACTIONS`), then `requests` against the vocabulary: each entry's action,
    /// made from example arguments, must map back to it.
    static func vocabularyProblem(
        _ actions: [PluginActionEntry<Reducer.Action>], _ requests: ((Reducer.Action) -> PluginCall)?
    ) -> String? {
        if let problem = pluginVocabularyProblem(actions) { return problem }
        for action in actions where action.parameters.count > Int(ACTOMATON_MAX_PARAMETERS) {
            return "the vocabulary entry '\(action.name)' has \(action.parameters.count) parameters; at most \(ACTOMATON_MAX_PARAMETERS)"
        }
        guard let requests else { return nil }
        return pluginMappingProblem(actions, requests: requests)
    }

    // MARK: Manifest

    private static func buildManifest(
        name: String, version: String, summary: String?, actions: [PluginActionEntry<Reducer.Action>],
        diagram: String?, namesActiveNodes: Bool
    ) -> UnsafeRawPointer {
        let manifest = UnsafeMutablePointer<actomaton_manifest>.allocate(capacity: 1)
        manifest.initialize(to: actomaton_manifest())
        manifest.pointee.abi_version = ACTOMATON_PLUGIN_ABI_VERSION
        manifest.pointee.name = UnsafePointer(strdup(name))
        manifest.pointee.version = UnsafePointer(strdup(version))
        manifest.pointee.summary = summary.map { UnsafePointer(strdup($0)) }
        let table = UnsafeMutablePointer<actomaton_action>.allocate(capacity: max(actions.count, 1))
        for (index, action) in actions.enumerated() {
            let parameters = UnsafeMutablePointer<actomaton_parameter>.allocate(capacity: max(action.parameters.count, 1))
            for (position, parameter) in action.parameters.enumerated() {
                parameters[position] = actomaton_parameter(name: UnsafePointer(strdup(parameter.name)), type: parameter.type.abiType)
            }
            table[index] = actomaton_action(name: UnsafePointer(strdup(action.name)), parameters: UnsafePointer(parameters),
                                            parameter_count: UInt32(action.parameters.count), entry: nil)
        }
        manifest.pointee.actions = UnsafePointer(table)
        manifest.pointee.action_count = UInt32(actions.count)
        manifest.pointee.destroy = destroyState
        manifest.pointee.snapshot = snapshotState
        manifest.pointee.describe = describeState
        manifest.pointee.restore = restoreState
        manifest.pointee.diagram = diagram.map { UnsafePointer(strdup($0)) }
        manifest.pointee.active = namesActiveNodes ? activeState : nil
        return UnsafeRawPointer(manifest)
    }

    /// Makes the libffi closures (create and the typed entry points) that need `self`.
    private func finishManifest() {
        let raw = UnsafeMutablePointer(mutating: manifest.assumingMemoryBound(to: actomaton_manifest.self))
        let me = Unmanaged.passUnretained(self as ExportBase).toOpaque()

        guard let createInterface = CallInterface(returning: cffi_type_pointer(), arguments: [cffi_type_pointer()]),
              let create = FFIClosure(interface: createInterface, trampoline: createTrampoline, userData: me)
        else { return fail(raw) }
        keepAlive.append(create)
        raw.pointee.create = unsafeBitCast(create.code, to: (@convention(c) (UnsafePointer<actomaton_host>?) -> UnsafeMutableRawPointer?).self)

        let table = UnsafeMutablePointer(mutating: raw.pointee.actions!)
        for (index, action) in actions.enumerated() {
            let types: [UnsafeMutablePointer<ffi_type>] = [cffi_type_pointer()] + action.parameters.map { $0.type.ffiType }
            let entry = ActionEntry(export: self, index: index)
            guard let interface = CallInterface(returning: cffi_type_sint32(), arguments: types),
                  let closure = FFIClosure(interface: interface, trampoline: actionTrampoline,
                                           userData: Unmanaged.passUnretained(entry as EntryBase).toOpaque())
            else { return fail(raw) }
            keepAlive.append(entry)
            keepAlive.append(closure)
            table[index].entry = unsafeBitCast(closure.code, to: actomaton_function.self)
        }
    }

    /// Leaves a manifest the host refuses (no `create`), rather than one that crashes it.
    private func fail(_ raw: UnsafeMutablePointer<actomaton_manifest>) {
        raw.pointee.create = nil
    }

    // MARK: Running an action

    override func makeState(host: UnsafePointer<actomaton_host>?) -> StateBox {
        TypedStateBox(export: self, host: host)
    }

    /// Runs the reducer for one typed entry point call.
    final class ActionEntry: EntryBase {
        unowned let export: PluginExport
        let index: Int

        init(export: PluginExport, index: Int) {
            self.export = export
            self.index = index
        }

        override func call(_ arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> actomaton_status {
            let state = arguments[0]!.load(as: UnsafeMutableRawPointer.self)
            let box = unsafeDowncast(Unmanaged<StateBox>.fromOpaque(state).takeUnretainedValue(), to: TypedStateBox.self)
            let entry = export.actions[index]
            var values: [PluginValue] = []
            values.reserveCapacity(entry.parameters.count)
            for (position, parameter) in entry.parameters.enumerated() {
                values.append(pluginValue(of: parameter.type, in: arguments[1 + position]!))
            }
            guard let action = entry.make(values) else {
                "the arguments do not make an action of '\(export.actions[index].name)'".withCString { box.host?.pointee.fail($0) }
                return ACTOMATON_ERROR
            }
            return box.perform(action)
        }
    }

    /// The state of one machine, with the host table bound to it.
    final class TypedStateBox: StateBox {
        unowned let export: PluginExport
        var state: Reducer.State

        init(export: PluginExport, host: UnsafePointer<actomaton_host>?) {
            self.export = export
            state = export.initialState
            super.init(host: host)
        }

        func perform(_ action: Reducer.Action) -> actomaton_status {
            var next = state
            let output = export.reducer.reduce(action, into: &next, environment: ())
            for case let .fail(message) in output.parts {
                message.withCString { host?.pointee.fail($0) }
                return ACTOMATON_ERROR
            }
            for part in output.parts {
                let status = request(part)
                guard status == ACTOMATON_OK else { return status }
            }
            state = next
            return ACTOMATON_OK
        }

        /// Asks the host for one effect.
        private func request(_ part: PluginEffect<Reducer.Action>.Part) -> actomaton_status {
            guard let host = host?.pointee else { return ACTOMATON_INVALID_REQUEST }
            switch part {
            case .fail:
                return ACTOMATON_OK
            case let .cancel(id):
                return id.withCString { host.cancel($0) }
            case let .next(action):
                return withCall(action) { host.next_action($0) }
            case let .delayed(action, delay, id, queue):
                return withCall(action) { call in
                    withOptions(id: id, queue: queue) { host.delayed_action(call, nanoseconds(delay), $0) }
                }
            case let .repeating(action, interval, id, queue):
                return withCall(action) { call in
                    withOptions(id: id, queue: queue) { host.repeating_action(call, nanoseconds(interval), $0) }
                }
            }
        }

        /// Runs `body` with `action` as an `actomaton_call`: the vocabulary entry and
        /// arguments the export's `requests` mapping gives.
        private func withCall(_ action: Reducer.Action, _ body: (UnsafePointer<actomaton_call>) -> actomaton_status) -> actomaton_status {
            guard let requests = export.requests else {
                "the reducer requested one of its actions, but the plugin's PluginExport has no requests: mapping".withCString { host?.pointee.fail($0) }
                return ACTOMATON_INVALID_REQUEST
            }
            let request = requests(action)
            guard let entry = export.actions.first(where: { $0.name == request.name }), entry.parameters.count == request.arguments.count else {
                let message = "the reducer requested '\(request.name)' with \(request.arguments.count) arguments, which is not an action of the plugin's vocabulary"
                message.withCString { host?.pointee.fail($0) }
                return ACTOMATON_INVALID_REQUEST
            }
            var strings: [UnsafeMutablePointer<CChar>] = []
            defer { strings.forEach { free($0) } }
            var values: [actomaton_value] = []
            for (value, parameter) in zip(request.arguments, entry.parameters) {
                guard let converted = contractValue(value, type: parameter.type.abiType, strings: &strings) else {
                    let message = "the reducer requested '\(request.name)' with \(value) for parameter '\(parameter.name)', which does not fit its type"
                    message.withCString { host?.pointee.fail($0) }
                    return ACTOMATON_INVALID_REQUEST
                }
                values.append(converted)
            }
            return request.name.withCString { cName in
                values.withUnsafeBufferPointer { buffer in
                    var call = actomaton_call(action: cName, args: buffer.baseAddress, arg_count: UInt32(buffer.count))
                    return body(&call)
                }
            }
        }

        override var snapshot: [UInt8]? {
            switch export.coding.encode(state) {
            case let .success(bytes):
                return bytes
            case let .failure(message):
                "cannot write the snapshot: \(message)".withCString { host?.pointee.log($0) }
                return nil
            }
        }

        override var description: [UInt8] {
            export.coding.describe(state)
        }

        override var activeNodes: [UInt8]? {
            export.activeNodes.map { ActiveNodes.encode($0(state)) }
        }

        override func restore(_ bytes: [UInt8]) -> actomaton_status {
            switch export.coding.decode(bytes) {
            case let .success(restored):
                state = restored
                return ACTOMATON_OK
            case let .failure(message):
                "cannot read the snapshot: \(message)".withCString { host?.pointee.fail($0) }
                return ACTOMATON_ERROR
            }
        }
    }
}

/// How an exported plugin's state becomes snapshot bytes and a description, and back.
struct StateCoding<State> {
    let encode: (State) -> Outcome<[UInt8]>
    let decode: ([UInt8]) -> Outcome<State>
    let describe: (State) -> [UInt8]

    /// A value, or one line saying why there is none.
    enum Outcome<Value> {
        case success(Value)
        case failure(String)

        var value: Value? {
            if case let .success(value) = self { value } else { nil }
        }
    }
}

extension StateCoding where State: Codable {
    /// JSON with sorted keys; the description is the state's `description` when it is
    /// `CustomStringConvertible`, else the JSON.
    static func json() -> StateCoding {
        func encode(_ state: State) -> Outcome<[UInt8]> {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            do { return .success(Array(try encoder.encode(state))) } catch { return .failure("\(error)") }
        }
        return StateCoding(
            encode: encode,
            decode: { bytes -> Outcome<State> in
                do { return .success(try JSONDecoder().decode(State.self, from: Data(bytes))) } catch { return .failure("\(error)") }
            },
            describe: { state in
                if let custom = state as? CustomStringConvertible { return Array(custom.description.utf8) }
                return encode(state).value ?? Array("(the state cannot be written as JSON)".utf8)
            }
        )
    }
}

extension StateCoding where State: PluginSnapshotCodable {
    /// The state's own bytes; the description is its `description` when it is
    /// `CustomStringConvertible`, else its size.
    static func bytes() -> StateCoding {
        StateCoding(
            encode: { .success($0.snapshotBytes) },
            decode: { bytes -> Outcome<State> in
                do throws(PluginSnapshotError) { return .success(try State(snapshotBytes: bytes)) } catch { return .failure(error.message) }
            },
            describe: { state in
                if let custom = state as? CustomStringConvertible { return Array(custom.description.utf8) }
                return Array("{\"snapshot_bytes\":\(state.snapshotBytes.count)}".utf8)
            }
        )
    }
}

/// An export as the non-generic `create` trampoline sees it.
public class ExportBase {
    func makeState(host: UnsafePointer<actomaton_host>?) -> StateBox { StateBox(host: host) }
}

/// A typed entry point's target as the non-generic trampoline sees it.
class EntryBase {
    func call(_ arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> actomaton_status { ACTOMATON_ERROR }
}

// The C functions of every exported manifest: non-generic, dispatching through the classes.

private func createTrampoline(
    _: UnsafeMutablePointer<ffi_cif>?, result: UnsafeMutableRawPointer?,
    arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, userData: UnsafeMutableRawPointer?
) {
    let export = Unmanaged<ExportBase>.fromOpaque(userData!).takeUnretainedValue()
    let host = arguments![0]!.load(as: UnsafePointer<actomaton_host>?.self)
    let box = export.makeState(host: host)
    result!.storeBytes(of: Unmanaged.passRetained(box).toOpaque(), as: UnsafeMutableRawPointer?.self)
}

private func actionTrampoline(
    _: UnsafeMutablePointer<ffi_cif>?, result: UnsafeMutableRawPointer?,
    arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, userData: UnsafeMutableRawPointer?
) {
    let entry = Unmanaged<EntryBase>.fromOpaque(userData!).takeUnretainedValue()
    result!.storeBytes(of: ffi_sarg(entry.call(arguments!)), as: ffi_sarg.self)
}

private func destroyState(_ state: UnsafeMutableRawPointer?) {
    guard let state else { return }
    Unmanaged<StateBox>.fromOpaque(state).release()
}

private func snapshotState(_ state: UnsafeRawPointer?, _ buffer: UnsafeMutablePointer<UInt8>?, _ capacity: Int) -> Int {
    Unmanaged<StateBox>.fromOpaque(state!).takeUnretainedValue().write(\.snapshot, into: buffer, capacity: capacity)
}

private func describeState(_ state: UnsafeRawPointer?, _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> Int {
    let bytes = UnsafeMutableRawPointer(buffer)?.assumingMemoryBound(to: UInt8.self)
    return Unmanaged<StateBox>.fromOpaque(state!).takeUnretainedValue().write(\.optionalDescription, into: bytes, capacity: capacity)
}

private func activeState(_ state: UnsafeRawPointer?, _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> Int {
    let bytes = UnsafeMutableRawPointer(buffer)?.assumingMemoryBound(to: UInt8.self)
    return Unmanaged<StateBox>.fromOpaque(state!).takeUnretainedValue().write(\.activeNodes, into: bytes, capacity: capacity)
}

private func restoreState(_ state: UnsafeMutableRawPointer?, _ bytes: UnsafePointer<UInt8>?, _ length: Int) -> actomaton_status {
    let box = Unmanaged<StateBox>.fromOpaque(state!).takeUnretainedValue()
    return box.restore(Array(UnsafeBufferPointer(start: bytes, count: length)))
}

/// A plugin state as the non-generic lifecycle functions see it.
class StateBox {
    /// The host table bound to this state.
    let host: UnsafePointer<actomaton_host>?

    init(host: UnsafePointer<actomaton_host>?) {
        self.host = host
    }

    /// The snapshot bytes; `nil` when they cannot be written.
    var snapshot: [UInt8]? { nil }
    /// The description, UTF-8.
    var description: [UInt8] { [] }
    var optionalDescription: [UInt8]? { description }
    /// The active nodes, separated by `\n`; `nil` when the plugin names none.
    var activeNodes: [UInt8]? { nil }
    /// Replaces the state from snapshot bytes.
    func restore(_ bytes: [UInt8]) -> actomaton_status { ACTOMATON_ERROR }

    /// Writes `bytes` with the snprintf convention of `snapshot` and `describe`.
    func write(_ bytes: KeyPath<StateBox, [UInt8]?>, into buffer: UnsafeMutablePointer<UInt8>?, capacity: Int) -> Int {
        // A size past the contract's limit fails the call, which is how a snapshot that
        // cannot be written is reported (the reason went to the host's log).
        guard let value = self[keyPath: bytes] else { return Int(ACTOMATON_MAX_SNAPSHOT_SIZE) + 1 }
        if value.count <= capacity, let buffer {
            value.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: value.count) }
        }
        return value.count
    }
}

/// `duration` in whole nanoseconds, 0 for negative durations.
func nanoseconds(_ duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0 else { return 0 }
    return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
}

/// Runs `body` with effect options for `id` and `queue` (or `NULL` when both are `nil`).
func withOptions(id: String?, queue: PluginQueue?, _ body: (UnsafePointer<actomaton_effect_options>?) -> actomaton_status) -> actomaton_status {
    if id == nil && queue == nil { return body(nil) }
    let idCopy = id.map { strdup($0)! }
    let queueCopy = queue.map { strdup($0.name)! }
    defer { free(idCopy); free(queueCopy) }
    var options = actomaton_effect_options()
    options.id = idCopy.map { UnsafePointer($0) }
    options.queue = queueCopy.map { UnsafePointer($0) }
    if let policy = queue?.policy {
        options.policy = policy.abiPolicy
        options.max_count = UInt32(clamping: policy.maxCount)
    }
    return body(&options)
}

/// Writes `line` and a newline to standard error.
func printLine(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}
