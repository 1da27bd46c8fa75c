// ActomatonWasmKit: turns a core reducer into a .wasm plugin of the contract in
// actomaton_wasm_plugin.h. Embedded Swift: no Foundation, no Codable, no reflection.
//
// A plugin is a reducer whose output is PluginEffect, a state that is PluginSnapshotCodable
// and CustomStringConvertible (its description is what `describe` shows), and these lines:
//
//     let counter = WasmPlugin(
//         name: "counter", version: "1.0.0",
//         reducer: counterReducer, initialState: Count(),
//         actions: [
//             .action("increment") { .increment },
//             .action("add", "amount") { (amount: Int64) in .add(amount) },
//         ],
//         requests: \.call
//     )
//
//     @_cdecl("actomaton_wasm_plugin")
//     func plugin() -> UnsafeMutableRawPointer { counter.handle }
//
//     @_expose(wasm, "actomaton_action_increment") @_cdecl("actomaton_action_increment")
//     func increment() -> Int32 { counter.send(.increment) }
//     @_expose(wasm, "actomaton_action_add") @_cdecl("actomaton_action_add")
//     func add(_ amount: Int64) -> Int32 { counter.send(.add(amount)) }
//
// `actions` is an array of PluginActionEntry (ActomatonPluginCore): the same value the .so
// build hands to PluginExport(…, actions:). A String parameter arrives in the export as two
// UInt32s, an offset and a length, which wasmString(_:_:) reads. The kit exports the rest of
// the contract (abi version, manifest, alloc, snapshot, restore, describe, active), and checks the
// vocabulary against the contract's limits and `requests` against the vocabulary when the
// host reads the manifest.
import ActomatonCore
import ActomatonPluginCore

// MARK: Host imports

@_extern(wasm, module: "actomaton", name: "next_action") @_extern(c)
func hostNextAction(_ call: UInt32) -> Int32
@_extern(wasm, module: "actomaton", name: "delayed_action") @_extern(c)
func hostDelayedAction(_ call: UInt32, _ delay: UInt64, _ options: UInt32) -> Int32
@_extern(wasm, module: "actomaton", name: "repeating_action") @_extern(c)
func hostRepeatingAction(_ call: UInt32, _ interval: UInt64, _ options: UInt32) -> Int32
@_extern(wasm, module: "actomaton", name: "cancel") @_extern(c)
func hostCancel(_ id: UInt32, _ length: UInt32) -> Int32
@_extern(wasm, module: "actomaton", name: "fail") @_extern(c)
func hostFail(_ message: UInt32, _ length: UInt32)
@_extern(wasm, module: "actomaton", name: "log") @_extern(c)
func hostLog(_ message: UInt32, _ length: UInt32)

/// The plugin the module exports: the user's one line, `@_cdecl("actomaton_wasm_plugin")`.
@_extern(c, "actomaton_wasm_plugin")
func installedPlugin() -> UnsafeMutableRawPointer

/// The offset of `pointer` in linear memory.
@inline(__always)
func offset(_ pointer: UnsafeRawPointer) -> UInt32 { UInt32(UInt(bitPattern: pointer)) }

/// Calls `body` with `text`'s UTF-8 bytes as an offset and a length.
func withBytes<R>(of text: String, _ body: (UInt32, UInt32) -> R) -> R {
    var copy = text
    return copy.withUTF8 { buffer in
        body(buffer.baseAddress.map { offset($0) } ?? 0, UInt32(buffer.count))
    }
}

/// Says why the current action fails, through the host's `fail` import.
public func wasmFail(_ message: String) {
    withBytes(of: message) { hostFail($0, $1) }
}

/// Writes a line to the host's log, through its `log` import.
public func wasmLog(_ message: String) {
    withBytes(of: message) { hostLog($0, $1) }
}

/// The string a typed action export receives as an offset and a length (in the buffer the
/// host filled); invalid UTF-8 is repaired.
public func wasmString(_ bytes: UInt32, _ length: UInt32) -> String {
    guard length > 0, let start = UnsafeRawPointer(bitPattern: UInt(bytes)) else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: start, count: Int(length)), as: UTF8.self)
}

// MARK: The plugin

/// A plugin as the kit's exports see it, without its generic parameters.
/// A wasm module runs one thread, so a plugin is never shared across threads.
open class WasmPluginBase: @unchecked Sendable {
    /// The manifest's offset, or 0 when the plugin cannot be loaded (the reason went to `fail`).
    func manifestOffset() -> UInt32 { 0 }
    /// The snapshot bytes.
    func snapshotBytes() -> [UInt8] { [] }
    /// Replaces the state from snapshot bytes.
    func restore(_ bytes: [UInt8]) -> Int32 { 1 }
    /// The description, UTF-8.
    func descriptionBytes() -> [UInt8] { [] }
    /// The active nodes' names, separated by `\n`.
    func activeNodeBytes() -> [UInt8] { [] }

    /// The buffer `actomaton_alloc` hands out, reused.
    var input: UnsafeMutableRawPointer?
    var inputCapacity = 0
    /// The bytes of the last snapshot or description, kept until the next call.
    var output: UnsafeMutableRawPointer?
    var outputCapacity = 0

    init() {}

    /// `bytes` copied to the output buffer, packed as offset | length << 32.
    func publish(_ bytes: [UInt8]) -> UInt64 {
        if bytes.count > outputCapacity {
            output?.deallocate()
            output = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 8)
            outputCapacity = bytes.count
        }
        guard let output else { return 0 }
        if !bytes.isEmpty { bytes.withUnsafeBytes { output.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) } }
        return UInt64(offset(output)) | UInt64(bytes.count) << 32
    }
}

/// A core reducer exported as a .wasm plugin.
public final class WasmPlugin<Reducer: MealyReducerProtocol>: WasmPluginBase, @unchecked Sendable
where Reducer.Environment == Void, Reducer.Output == PluginEffect<Reducer.Action>,
      Reducer.State: PluginSnapshotCodable & CustomStringConvertible {
    let name: String
    let version: String
    let summary: String?
    let reducer: Reducer
    let actions: [PluginActionEntry<Reducer.Action>]
    let requests: ((Reducer.Action) -> PluginCall)?
    let diagram: PluginDiagram<Reducer.State>?
    /// The state of the module's one machine.
    public private(set) var state: Reducer.State
    private var manifest: UInt32 = 0

    /// Describes the plugin.
    ///
    /// - Parameters:
    ///   - name: The plugin's name (letters, digits and `_`).
    ///   - version: Its version, free text.
    ///   - summary: One line saying what it does.
    ///   - reducer: The reducer the machine runs.
    ///   - initialState: The state the module starts with.
    ///   - actions: The vocabulary, in the order of the manifest: the same value the `.so`
    ///     build hands to `PluginExport(…, actions:)`. The export `actomaton_action_<name>` of
    ///     each entry is the module's own; its wasm signature must be the one the parameters
    ///     declare (the host checks it at load).
    ///   - requests: The vocabulary entry and arguments of an action the reducer requests as
    ///     an effect; checked against `actions` when the host reads the manifest.
    ///   - diagram: The plugin's state diagram (DOT) and how to find its active nodes: the
    ///     manifest's diagram and the `actomaton_active` export (contract version 2). The same
    ///     value the `.so` build hands to `PluginExport(…, diagram:)`.
    public init(
        name: String, version: String, summary: String? = nil,
        reducer: Reducer, initialState: Reducer.State,
        actions: [PluginActionEntry<Reducer.Action>],
        requests: ((Reducer.Action) -> PluginCall)? = nil,
        diagram: PluginDiagram<Reducer.State>? = nil
    ) {
        self.diagram = diagram
        self.name = name
        self.version = version
        self.summary = summary
        self.reducer = reducer
        self.state = initialState
        self.actions = actions
        self.requests = requests
    }

    /// What the module's `actomaton_wasm_plugin` function returns.
    public var handle: UnsafeMutableRawPointer {
        Unmanaged.passUnretained(self as WasmPluginBase).toOpaque()
    }

    /// Runs one action: the reducer on a copy of the state, kept only when the output does
    /// not fail and the host accepts every effect request. Returns the contract's status.
    public func send(_ action: Reducer.Action) -> Int32 {
        var next = state
        let output = reducer.reduce(action, into: &next, environment: ())
        for part in output.parts {
            if case let .fail(message) = part {
                wasmFail(message)
                return 1
            }
        }
        for part in output.parts {
            let status = request(part)
            guard status == 0 else { return status }
        }
        state = next
        return 0
    }

    // MARK: Effects

    private func request(_ part: PluginEffect<Reducer.Action>.Part) -> Int32 {
        switch part {
        case .fail:
            return 0
        case let .cancel(id):
            return withBytes(of: id) { hostCancel($0, $1) }
        case let .next(action):
            return withCall(action) { call in hostNextAction(call) }
        case let .delayed(action, delay, id, queue):
            return withCall(action) { call in
                withOptions(id: id, queue: queue) { hostDelayedAction(call, nanoseconds(delay), $0) }
            }
        case let .repeating(action, interval, id, queue):
            return withCall(action) { call in
                withOptions(id: id, queue: queue) { hostRepeatingAction(call, nanoseconds(interval), $0) }
            }
        }
    }

    /// Runs `body` with `action` laid out as an actomaton_wasm_call.
    private func withCall(_ action: Reducer.Action, _ body: (UInt32) -> Int32) -> Int32 {
        guard let requests else {
            wasmFail("the reducer requested one of its actions, but the plugin's WasmPlugin has no requests: mapping")
            return 2
        }
        let call = requests(action)
        guard let index = actions.firstIndex(where: { $0.name.utf8.elementsEqual(call.name.utf8) }),
              actions[index].parameters.count == call.arguments.count else {
            wasmFail("the reducer requested '" + call.name + "', which is not an action of the plugin's vocabulary with those arguments")
            return 2
        }
        var stringBytes = 0
        for (value, parameter) in zip(call.arguments, actions[index].parameters) {
            guard parameter.type.fits(value) else {
                wasmFail("the reducer requested '" + call.name + "' with an argument that does not fit parameter '" + parameter.name + "'")
                return 2
            }
            if case let .string(text) = value { stringBytes += text.utf8.count }
        }
        // call (12 bytes, padded to 16), values (16 bytes each), then string bytes.
        let valuesStart = 16
        let stringsStart = valuesStart + 16 * call.arguments.count
        let memory = UnsafeMutableRawPointer.allocate(byteCount: stringsStart + stringBytes, alignment: 8)
        defer { memory.deallocate() }
        memory.storeBytes(of: UInt32(index), toByteOffset: 0, as: UInt32.self)
        memory.storeBytes(of: call.arguments.isEmpty ? 0 : offset(memory + valuesStart), toByteOffset: 4, as: UInt32.self)
        memory.storeBytes(of: UInt32(call.arguments.count), toByteOffset: 8, as: UInt32.self)
        var stringOffset = stringsStart
        for (position, (value, parameter)) in zip(call.arguments, actions[index].parameters).enumerated() {
            let slot = memory + valuesStart + 16 * position
            slot.storeBytes(of: parameter.type.rawValue, toByteOffset: 0, as: UInt32.self)
            slot.storeBytes(of: UInt32(0), toByteOffset: 4, as: UInt32.self)
            slot.storeBytes(of: UInt64(0), toByteOffset: 8, as: UInt64.self)
            switch value {
            case let .bool(flag): slot.storeBytes(of: UInt32(flag ? 1 : 0), toByteOffset: 8, as: UInt32.self)
            case let .int(n): slot.storeBytes(of: n, toByteOffset: 8, as: Int64.self)
            case let .uint(n): slot.storeBytes(of: n, toByteOffset: 8, as: UInt64.self)
            case let .float(x): slot.storeBytes(of: x.bitPattern, toByteOffset: 8, as: UInt64.self)
            case let .string(text):
                let utf8 = Array(text.utf8)
                utf8.withUnsafeBytes { (memory + stringOffset).copyMemory(from: $0.baseAddress!, byteCount: utf8.count) }
                slot.storeBytes(of: offset(memory + stringOffset), toByteOffset: 8, as: UInt32.self)
                slot.storeBytes(of: UInt32(utf8.count), toByteOffset: 12, as: UInt32.self)
                stringOffset += utf8.count
            }
        }
        return body(offset(memory))
    }

    // MARK: Manifest, snapshot, description

    override func manifestOffset() -> UInt32 {
        if manifest != 0 { return manifest }
        if let problem = pluginVocabularyProblem(actions) {
            wasmFail(problem)
            return 0
        }
        if let requests, let problem = pluginMappingProblem(actions, requests: requests) {
            wasmFail(problem)
            return 0
        }
        // Strings, kept for the module's life.
        func string(_ text: String) -> (UInt32, UInt32) {
            let utf8 = Array(text.utf8)
            guard !utf8.isEmpty else { return (0, 0) }
            let memory = UnsafeMutableRawPointer.allocate(byteCount: utf8.count, alignment: 1)
            utf8.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: utf8.count) }
            return (offset(memory), UInt32(utf8.count))
        }
        func store(_ value: (UInt32, UInt32), _ memory: UnsafeMutableRawPointer, at byteOffset: Int) {
            memory.storeBytes(of: value.0, toByteOffset: byteOffset, as: UInt32.self)
            memory.storeBytes(of: value.1, toByteOffset: byteOffset + 4, as: UInt32.self)
        }
        let table = UnsafeMutableRawPointer.allocate(byteCount: max(16 * actions.count, 16), alignment: 4)
        for (index, action) in actions.enumerated() {
            let entry = table + 16 * index
            store(string(action.name), entry, at: 0)
            let parameters = UnsafeMutableRawPointer.allocate(byteCount: max(12 * action.parameters.count, 12), alignment: 4)
            for (position, parameter) in action.parameters.enumerated() {
                store(string(parameter.name), parameters + 12 * position, at: 0)
                parameters.storeBytes(of: parameter.type.rawValue, toByteOffset: 12 * position + 8, as: UInt32.self)
            }
            entry.storeBytes(of: offset(parameters), toByteOffset: 8, as: UInt32.self)
            entry.storeBytes(of: UInt32(action.parameters.count), toByteOffset: 12, as: UInt32.self)
        }
        // Version 2: the 40 bytes of version 1, then the diagram and the active-nodes flag.
        let memory = UnsafeMutableRawPointer.allocate(byteCount: 52, alignment: 4)
        memory.storeBytes(of: UInt32(2), toByteOffset: 0, as: UInt32.self)
        store(string(name), memory, at: 4)
        store(string(version), memory, at: 12)
        store(summary.map(string) ?? (0, 0), memory, at: 20)
        memory.storeBytes(of: offset(table), toByteOffset: 28, as: UInt32.self)
        memory.storeBytes(of: UInt32(actions.count), toByteOffset: 32, as: UInt32.self)
        memory.storeBytes(of: UInt32(0), toByteOffset: 36, as: UInt32.self)
        store(diagram.map { string($0.dot) } ?? (0, 0), memory, at: 40)
        memory.storeBytes(of: UInt32(diagram?.activeNodes == nil ? 0 : 1), toByteOffset: 48, as: UInt32.self)
        manifest = offset(memory)
        return manifest
    }

    override func snapshotBytes() -> [UInt8] { state.snapshotBytes }

    override func restore(_ bytes: [UInt8]) -> Int32 {
        do throws(PluginSnapshotError) {
            state = try Reducer.State(snapshotBytes: bytes)
            return 0
        } catch {
            wasmFail("cannot read the snapshot: " + error.message)
            return 1
        }
    }

    override func descriptionBytes() -> [UInt8] { Array(state.description.utf8) }

    override func activeNodeBytes() -> [UInt8] {
        guard let activeNodes = diagram?.activeNodes else { return [] }
        var bytes: [UInt8] = []
        for (index, name) in activeNodes(state).enumerated() {
            if index > 0 { bytes.append(10) }
            bytes.append(contentsOf: name.utf8)
        }
        return bytes
    }
}

/// `duration` in whole nanoseconds, 0 for negative durations.
func nanoseconds(_ duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0 else { return 0 }
    return UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
}

/// Runs `body` with effect options for `id` and `queue`, or 0 when both are `nil`.
func withOptions(id: String?, queue: PluginQueue?, _ body: (UInt32) -> Int32) -> Int32 {
    if id == nil && queue == nil { return body(0) }
    let idBytes = Array((id ?? "").utf8), queueBytes = Array((queue?.name ?? "").utf8)
    let memory = UnsafeMutableRawPointer.allocate(byteCount: 24 + idBytes.count + queueBytes.count, alignment: 4)
    defer { memory.deallocate() }
    idBytes.withUnsafeBytes { if !$0.isEmpty { (memory + 24).copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
    queueBytes.withUnsafeBytes { if !$0.isEmpty { (memory + 24 + idBytes.count).copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
    memory.storeBytes(of: id == nil ? 0 : offset(memory + 24), toByteOffset: 0, as: UInt32.self)
    memory.storeBytes(of: UInt32(idBytes.count), toByteOffset: 4, as: UInt32.self)
    memory.storeBytes(of: queue == nil ? 0 : offset(memory + 24 + idBytes.count), toByteOffset: 8, as: UInt32.self)
    memory.storeBytes(of: UInt32(queueBytes.count), toByteOffset: 12, as: UInt32.self)
    var policy: UInt32 = 0, maxCount: UInt32 = 0
    if let queue {
        switch queue.policy {
        case let .runNewest(count): policy = 1; maxCount = UInt32(clamping: count)
        case let .runOldest(count, discardNew): policy = discardNew ? 3 : 2; maxCount = UInt32(clamping: count)
        }
    }
    memory.storeBytes(of: policy, toByteOffset: 16, as: UInt32.self)
    memory.storeBytes(of: maxCount, toByteOffset: 20, as: UInt32.self)
    return body(offset(memory))
}

// MARK: The contract's exports

@inline(__always)
func plugin() -> WasmPluginBase {
    Unmanaged<WasmPluginBase>.fromOpaque(installedPlugin()).takeUnretainedValue()
}

@_expose(wasm, "actomaton_abi_version") @_cdecl("actomaton_abi_version")
func actomatonABIVersion() -> UInt32 { 2 }

@_expose(wasm, "actomaton_manifest") @_cdecl("actomaton_manifest")
func actomatonManifest() -> UInt32 { plugin().manifestOffset() }

@_expose(wasm, "actomaton_alloc") @_cdecl("actomaton_alloc")
func actomatonAlloc(_ length: UInt32) -> UInt32 {
    let plugin = plugin()
    let needed = max(Int(length), 1)
    if needed > plugin.inputCapacity {
        plugin.input?.deallocate()
        plugin.input = nil
        plugin.inputCapacity = 0
        guard let memory = tryAllocate(needed) else { return 0 }
        plugin.input = memory
        plugin.inputCapacity = needed
    }
    return plugin.input.map { offset($0) } ?? 0
}

@_expose(wasm, "actomaton_snapshot") @_cdecl("actomaton_snapshot")
func actomatonSnapshot() -> UInt64 {
    let plugin = plugin()
    return plugin.publish(plugin.snapshotBytes())
}

@_expose(wasm, "actomaton_restore") @_cdecl("actomaton_restore")
func actomatonRestore(_ bytes: UInt32, _ length: UInt32) -> Int32 {
    guard length == 0 || UnsafeRawPointer(bitPattern: UInt(bytes)) != nil else { return 1 }
    let data = length == 0 ? [] : Array(UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: UInt(bytes)), count: Int(length)))
    return plugin().restore(data)
}

@_expose(wasm, "actomaton_describe") @_cdecl("actomaton_describe")
func actomatonDescribe() -> UInt64 {
    let plugin = plugin()
    return plugin.publish(plugin.descriptionBytes())
}

/// The names of the diagram's nodes active in the state, separated by `\n`, packed like
/// `actomaton_describe`'s result. The host calls it only when the manifest says the plugin
/// names active nodes.
@_expose(wasm, "actomaton_active") @_cdecl("actomaton_active")
func actomatonActive() -> UInt64 {
    let plugin = plugin()
    return plugin.publish(plugin.activeNodeBytes())
}

/// Allocation that can fail (the runtime's `malloc`), for buffers whose size the host picks.
@_extern(c, "am_try_allocate")
func amTryAllocate(_ size: Int) -> UnsafeMutableRawPointer?

func tryAllocate(_ size: Int) -> UnsafeMutableRawPointer? { amTryAllocate(size) }
