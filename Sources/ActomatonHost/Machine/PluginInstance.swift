import CProcessControl
import ActomatonPluginContract
import ActomatonPluginABI
import ActomatonFFI
import CFFI
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One plugin state, with the host function table bound to it.
///
/// The table's function pointers are libffi closures whose user data is this instance's
/// `HostBinding`, so a plugin calling `host->delayed_action(...)` reaches exactly the machine
/// that runs this state, without global state on either side. Calls are confined: the host
/// calls into the instance from one task at a time (the machine's actor), and host functions
/// are accepted only on the thread of the call in progress.
///
/// The binding, the table and its closures are never freed: a plugin may keep the table and
/// call it from a thread of its own after `destroy` (the library stays mapped for the life of
/// the process), and such a call must get an error status, not freed memory. They cost about
/// 1 KB per state the host creates (one per machine, one per reload).
///
/// An instance moves through these phases:
///
///     ┌──────┐ perform ┌────────┐ entry returns ┌──────┐
///     │ idle │───────▶│ acting │──────────────▶│ idle │      deinit: destroy ──▶ destroyed
///     └──────┘         └────────┘               └──────┘
///         │ restore ┌───────────┐ restore returns ▲
///         └───────▶│ restoring │─────────────────┘
///                   └───────────┘
public final class PluginInstance: PluginRuntime, @unchecked Sendable {
    /// The plugin whose state this is.
    public let plugin: Plugin

    /// What changes during calls, touched only on the thread of the call in progress. It sits
    /// behind a pointer, not in `var` properties, so the per-action path pays no dynamic
    /// exclusivity checks; the confinement above keeps it safe.
    struct Scratch {
        /// What the call in progress requested and said.
        var recorder = PluginCallRecorder()
        /// The pointer `create` returned; `nil` only while `init` runs or when it failed.
        var statePointer: UnsafeMutableRawPointer?
    }

    let scratch: UnsafeMutablePointer<Scratch>
    /// What the table's closures reach; outlives the instance.
    let binding: HostBinding
    /// One 8-byte slot per argument (the state pointer first), and a pointer to each.
    private let slots: UnsafeMutableRawPointer
    private let argumentPointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    /// Each action's call, without reference counting: the plugin (held above) owns the call
    /// interfaces these point into.
    private let calls: UnsafeMutableBufferPointer<Call>
    /// The effects running or waiting on the machine this state runs on.
    let effectBudget: EffectBudget
    private let functions: LifecycleFunctions
    /// Marks which plugin code runs, for the host's one line if it ends the process.
    private let marker: PluginCallMarker

    /// One action's prepared call, as plain pointers.
    private struct Call {
        let cif: UnsafeMutablePointer<ffi_cif>
        let entry: @convention(c) () -> Void
        let types: UnsafeMutableBufferPointer<PluginValueType>
    }

    /// Creates a state of `plugin` with a host table bound to it.
    ///
    /// - Parameters:
    ///   - plugin: The loaded plugin.
    ///   - log: Where `host->log` lines go; standard error by default, escaped.
    ///   - effectBudget: The effect limit of the machine this state runs on; unlimited when
    ///     `nil`.
    ///   - limitsLogLines: Whether `log` takes at most ``PluginLimits/maxLogLinesPerSecond``
    ///     lines a second; `false` in a worker process, whose host limits the lines it passes
    ///     on (two limits would lose the count of the lines the first one left out).
    public init(plugin: Plugin, log: (@Sendable (String) -> Void)? = nil, effectBudget: EffectBudget? = nil,
                limitsLogLines: Bool = true) throws(PluginLoadError) {
        self.plugin = plugin
        let name = plugin.name
        guard case let .native(actions, functions) = plugin.code else {
            throw PluginLoadError(.manifest(.invalid("the plugin is not a shared library loaded in this process")), at: plugin.path)
        }
        self.functions = functions
        self.effectBudget = effectBudget ?? EffectBudget.unlimited()
        let slotCount = Int(ACTOMATON_MAX_PARAMETERS) + 1
        slots = .allocate(byteCount: slotCount * 8, alignment: 8)
        argumentPointers = .allocate(capacity: slotCount)
        for index in 0..<slotCount { argumentPointers[index] = slots + index * 8 }
        scratch = .allocate(capacity: 1)
        scratch.initialize(to: Scratch())
        calls = .allocate(capacity: actions.count)
        for (index, action) in actions.enumerated() {
            let types = UnsafeMutableBufferPointer<PluginValueType>.allocate(capacity: max(action.parameterTypes.count, 1))
            _ = types.initialize(from: action.parameterTypes)
            calls.initializeElement(at: index, to: Call(cif: action.interface.cif, entry: action.entry, types: types))
        }
        marker = PluginCallMarker(plugin: name, actions: plugin.manifest.actions.map(\.name))
        // `deinit` frees what was allocated if a step throws.
        binding = HostBinding(log: pluginLogSink(log, name: name, limited: limitsLogLines))
        guard binding.isBound else {
            throw PluginLoadError(.libffi("cannot allocate a closure for the host function table"), at: plugin.path)
        }
        binding.attach(self)
        guard let created = marker.call(PluginCallMarker.Call.create, { functions.create(binding.table) }) else {
            throw PluginLoadError(.stateCreationFailed, at: plugin.path)
        }
        scratch.pointee.statePointer = created
    }

    deinit {
        binding.detach()
        if let statePointer = scratch.pointee.statePointer { marker.call(PluginCallMarker.Call.destroy) { functions.destroy(statePointer) } }
        slots.deallocate()
        argumentPointers.deallocate()
        scratch.deinitialize(count: 1)
        scratch.deallocate()
        for call in calls { call.types.deallocate() }
        calls.deallocate()
    }

    // MARK: Actions

    /// What one action did: the effects it requested, or why the plugin (or the host) refused it.
    public typealias Outcome = Result<[PluginEffectRequest], PluginCallError.Reason>

    /// Runs `action` through its prepared libffi call. An action checked against another load
    /// of the plugin (see ``Plugin/action(_:_:)``) is checked again, by name, first.
    ///
    /// On failure the effects it requested are discarded.
    public func perform(_ action: PluginAction) -> Outcome {
        guard action.vocabulary == plugin.vocabulary else {
            // Checked against another load of a plugin: check it again, by name.
            do {
                return perform(try plugin.checkedAction(action.name, action.arguments))
            } catch {
                return .failure(error)
            }
        }
        let call = calls[action.index]
        slots.storeBytes(of: scratch.pointee.statePointer, as: UnsafeMutableRawPointer?.self)
        var strings: [UnsafeMutablePointer<CChar>] = []
        for (position, value) in action.arguments.enumerated() {
            let slot = slots + (position + 1) * 8
            switch (call.types[position], value) {
            case let (.bool, .bool(b)): slot.storeBytes(of: b ? 1 : 0, as: UInt8.self)
            case let (.int8, .int(n)): slot.storeBytes(of: Int8(truncatingIfNeeded: n), as: Int8.self)
            case let (.int16, .int(n)): slot.storeBytes(of: Int16(truncatingIfNeeded: n), as: Int16.self)
            case let (.int32, .int(n)): slot.storeBytes(of: Int32(truncatingIfNeeded: n), as: Int32.self)
            case let (.int64, .int(n)): slot.storeBytes(of: n, as: Int64.self)
            case let (.uint8, .uint(n)): slot.storeBytes(of: UInt8(truncatingIfNeeded: n), as: UInt8.self)
            case let (.uint16, .uint(n)): slot.storeBytes(of: UInt16(truncatingIfNeeded: n), as: UInt16.self)
            case let (.uint32, .uint(n)): slot.storeBytes(of: UInt32(truncatingIfNeeded: n), as: UInt32.self)
            case let (.uint64, .uint(n)): slot.storeBytes(of: n, as: UInt64.self)
            case let (.float, .float(x)): slot.storeBytes(of: Float(x), as: Float.self)
            case let (.double, .float(x)): slot.storeBytes(of: x, as: Double.self)
            case let (.string, .string(s)):
                guard let copy = strdup(s) else {
                    for string in strings { free(string) }
                    return .failure(.invalidRequest(action: action.description, message: "out of memory for a string argument"))
                }
                strings.append(copy)
                slot.storeBytes(of: UnsafePointer(copy), as: UnsafePointer<CChar>.self)
            default:
                // `Plugin.checkedAction` made the action: the kinds always match.
                for string in strings { free(string) }
                return .failure(.wrongArgumentType(action: action.name, index: position + 1, parameter: "",
                                                   expected: call.types[position], got: value.kindDescription))
            }
        }
        binding.enter(.acting)
        // libffi widens integral returns narrower than a register to `ffi_arg`.
        var result: ffi_sarg = 0
        marker.action(action.index) { ffi_call(call.cif, call.entry, &result, argumentPointers) }
        let status = Int32(truncatingIfNeeded: result)
        binding.leave()
        if !strings.isEmpty { for string in strings { free(string) } }

        return scratch.pointee.recorder.outcome(of: action, status: status)
    }

    // MARK: Snapshot, restore, describe

    /// The plugin's snapshot of the state, in its own format; at most
    /// ``PluginLimits/maxSnapshotBytes``.
    public func snapshot() throws(PluginCallError.Reason) -> [UInt8] {
        let state = UnsafeRawPointer(scratch.pointee.statePointer)
        let snapshot = functions.snapshot
        do {
            return try marker.call(PluginCallMarker.Call.snapshot) { () throws(SizedCall.Failure) in
                try SizedCall.run(limit: PluginLimits.maxSnapshotBytes) { buffer, capacity in snapshot(state, buffer, capacity) }
            }
        } catch {
            throw .snapshotFailed(error.description)
        }
    }

    /// Replaces the state with one read from `snapshot`; the plugin refuses bytes it cannot
    /// read.
    public func restore(_ snapshot: [UInt8]) throws(PluginCallError.Reason) {
        binding.enter(.restoring)
        let status = marker.call(PluginCallMarker.Call.restore) {
            snapshot.withUnsafeBufferPointer { functions.restore(scratch.pointee.statePointer, $0.baseAddress, $0.count) }
        }
        binding.leave()
        if let refusal = scratch.pointee.recorder.restoreRefusal(status: status) { throw .restoreRefused(refusal) }
    }

    /// The plugin's one-line description of the state (often JSON), at most
    /// ``PluginLimits/maxDescriptionBytes``; invalid UTF-8 is shown as `\xHH`.
    public func describe() throws(PluginCallError.Reason) -> String {
        let state = UnsafeRawPointer(scratch.pointee.statePointer)
        let describe = functions.describe
        do {
            let bytes = try marker.call(PluginCallMarker.Call.describe) { () throws(SizedCall.Failure) in
                try SizedCall.run(limit: PluginLimits.maxDescriptionBytes) { buffer, capacity in
                    buffer.withMemoryRebound(to: CChar.self, capacity: max(capacity, 1)) { describe(state, $0, capacity) }
                }
            }
            return TerminalText.decoding(bytes)
        } catch {
            throw .describeFailed(error.description)
        }
    }

    /// The names of the diagram's nodes active in the state (the plugin's `active`), at most
    /// `ActiveNodes.maxCount` of at most `ActiveNodes.maxNameBytes` bytes each; `nil` when
    /// the plugin has no `active` function.
    public func activeNodes() throws(PluginCallError.Reason) -> [String]? {
        guard let active = functions.active else { return nil }
        let state = UnsafeRawPointer(scratch.pointee.statePointer)
        let bytes: [UInt8]
        do {
            bytes = try marker.call(PluginCallMarker.Call.active) { () throws(SizedCall.Failure) in
                try SizedCall.run(limit: ActiveNodes.maxBytes) { buffer, capacity in
                    buffer.withMemoryRebound(to: CChar.self, capacity: max(capacity, 1)) { active(state, $0, capacity) }
                }
            }
        } catch {
            throw .describeFailed(ActiveNodes.failure(error.description))
        }
        do throws(ActiveNodes.Problem) {
            return try ActiveNodes.parse(bytes)
        } catch {
            throw .describeFailed(ActiveNodes.failure(error.description))
        }
    }
}

extension ActiveNodes {
    /// The one line of a ``PluginCallError/Reason/describeFailed(_:)`` for a bad `active`.
    static func failure(_ problem: String) -> String {
        "its active nodes: \(problem)"
    }
}

/// Writes `line` and a newline to standard error, with control characters escaped: where the
/// host library's own lines go when it was given nowhere else to send them.
public func printToStandardError(_ line: String) {
    var text = TerminalText.escaping(line) + "\n"
    text.withUTF8 { bytes in _ = try? SystemCall.writeAll(actomaton_error_descriptor(), UnsafeRawBufferPointer(bytes)) }
}
