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
/// The table's function pointers are libffi closures whose user data is this instance, so a
/// plugin calling `host->delayed_action(...)` reaches exactly the machine that runs this
/// state, without global state on either side. Calls are confined: the host calls into the
/// instance from one task at a time (the machine's actor), and host functions are accepted
/// only on the thread of the action call in progress.
///
/// An instance moves through these phases:
///
///     ┌──────┐ perform ┌────────┐ entry returns ┌──────┐
///     │ idle │───────▶│ acting │──────────────▶│ idle │      deinit: destroy ──▶ destroyed
///     └──────┘         └────────┘               └──────┘
///         │ restore ┌───────────┐ restore returns ▲
///         └───────▶│ restoring │─────────────────┘
///                   └───────────┘
public final class PluginInstance: @unchecked Sendable {
    /// The plugin whose state this is.
    public let plugin: Plugin

    private enum Phase {
        case idle
        /// Inside an action's entry point, on `thread`: effect requests and `fail` are taken.
        case acting(thread: pthread_t)
        /// Inside `restore`, on `thread`: `fail` is taken.
        case restoring(thread: pthread_t)
    }

    /// What changes during calls. It sits behind a pointer, not in `var` properties, so the
    /// per-action path pays no dynamic exclusivity checks; the confinement above keeps it safe.
    private struct Scratch {
        var phase = Phase.idle
        /// The effects the current action requested, in order.
        var requests: [PluginEffectRequest] = []
        /// What the plugin said through `fail` during the current call.
        var failureMessage: String?
        /// The first invalid request of the current action, if any.
        var invalidRequest: String?
        /// The pointer `create` returned; `nil` only while `init` runs or when it failed.
        var statePointer: UnsafeMutableRawPointer?
    }

    private let scratch: UnsafeMutablePointer<Scratch>
    /// The host table handed to `create`; valid until `destroy` returns.
    private let table: UnsafeMutablePointer<actomaton_host>
    private var closures: [FFIClosure] = []
    /// One 8-byte slot per argument (the state pointer first), and a pointer to each.
    private let slots: UnsafeMutableRawPointer
    private let argumentPointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    private let log: @Sendable (String) -> Void
    /// Each action's call, without reference counting: the plugin (held above) owns the call
    /// interfaces these point into.
    private let calls: UnsafeMutableBufferPointer<Call>

    /// One action's prepared call, as plain pointers.
    private struct Call {
        let cif: UnsafeMutablePointer<ffi_cif>
        let entry: @convention(c) () -> Void
        let types: UnsafeMutableBufferPointer<PluginValueType>
    }

    /// Creates a state of `plugin` with a host table bound to it.
    ///
    /// - Parameter log: Where `host->log` lines go; standard error by default.
    public init(plugin: Plugin, log: (@Sendable (String) -> Void)? = nil) throws(PluginError) {
        self.plugin = plugin
        let name = plugin.name
        self.log = log ?? { line in printToStandardError("[\(name)] \(line)") }
        let slotCount = Int(ACTOMATON_MAX_PARAMETERS) + 1
        slots = .allocate(byteCount: slotCount * 8, alignment: 8)
        argumentPointers = .allocate(capacity: slotCount)
        for index in 0..<slotCount { argumentPointers[index] = slots + index * 8 }
        scratch = .allocate(capacity: 1)
        scratch.initialize(to: Scratch())
        calls = .allocate(capacity: plugin.actions.count)
        for (index, action) in plugin.actions.enumerated() {
            let types = UnsafeMutableBufferPointer<PluginValueType>.allocate(capacity: max(action.parameterTypes.count, 1))
            _ = types.initialize(from: action.parameterTypes)
            calls.initializeElement(at: index, to: Call(cif: action.interface.cif, entry: action.entry, types: types))
        }
        table = .allocate(capacity: 1)
        table.initialize(to: actomaton_host())
        table.pointee.abi_version = ManifestReader.supportedABIVersion
        // `deinit` frees what was allocated if either step throws.
        do {
            try bindHostFunctions()
        } catch {
            throw PluginError(error, at: plugin.path)
        }
        guard let created = plugin.functions.create(table) else {
            throw PluginError(.stateCreationFailed, at: plugin.path)
        }
        scratch.pointee.statePointer = created
    }

    deinit {
        if let statePointer = scratch.pointee.statePointer { plugin.functions.destroy(statePointer) }
        closures = []
        table.deallocate()
        slots.deallocate()
        argumentPointers.deallocate()
        scratch.deinitialize(count: 1)
        scratch.deallocate()
        for call in calls { call.types.deallocate() }
        calls.deallocate()
    }

    // MARK: Actions

    /// What one action did: the effects it requested, or why the plugin (or the host) refused it.
    public typealias Outcome = Result<[PluginEffectRequest], PluginError.Reason>

    /// Runs `action` through its prepared libffi call. An action checked against another load
    /// of the plugin (see ``Plugin/action(_:_:)``) is checked again, by name, first.
    ///
    /// On failure the plugin has left its state unchanged (the contract), and the effects it
    /// requested are discarded.
    public func perform(_ action: PluginAction) -> Outcome {
        guard action.vocabulary == plugin.vocabulary else {
            // Checked against another load of a plugin: check it again, by name.
            do {
                return perform(try plugin.action(action.name, action.arguments))
            } catch {
                return .failure(error.reason)
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
                let copy = strdup(s)!
                strings.append(copy)
                slot.storeBytes(of: UnsafePointer(copy), as: UnsafePointer<CChar>.self)
            default:
                preconditionFailure("PluginAction \(action) was not checked against \(plugin.name)")
            }
        }
        scratch.pointee.phase = .acting(thread: pthread_self())
        // libffi widens integral returns narrower than a register to `ffi_arg`.
        var result: ffi_sarg = 0
        ffi_call(call.cif, call.entry, &result, argumentPointers)
        let status = Int32(truncatingIfNeeded: result)
        scratch.pointee.phase = .idle
        if !strings.isEmpty { for string in strings { free(string) } }

        if status == ACTOMATON_OK && scratch.pointee.invalidRequest == nil {
            scratch.pointee.failureMessage = nil
            if scratch.pointee.requests.isEmpty { return .success([]) }
            defer { scratch.pointee.requests.removeAll(keepingCapacity: true) }
            return .success(scratch.pointee.requests)
        }
        let message = scratch.pointee.invalidRequest.map { "the plugin made an invalid request: \($0)" }
            ?? scratch.pointee.failureMessage
            ?? "the plugin returned status \(status) without saying why"
        scratch.pointee.invalidRequest = nil
        scratch.pointee.failureMessage = nil
        scratch.pointee.requests.removeAll(keepingCapacity: true)
        return .failure(.transitionFailed(action: action.description, message: message))
    }

    // MARK: Snapshot, restore, describe

    /// The plugin's snapshot of the state, in its own format.
    public func snapshot() -> [UInt8] {
        var capacity = 256
        while true {
            var buffer = [UInt8](repeating: 0, count: capacity)
            let size = buffer.withUnsafeMutableBufferPointer { plugin.functions.snapshot(scratch.pointee.statePointer, $0.baseAddress, capacity) }
            if size <= capacity { return Array(buffer[0..<size]) }
            precondition(size <= 1 << 30, "plugin \(plugin.name) asked for a snapshot buffer of \(size) bytes")
            capacity = size
        }
    }

    /// Replaces the state with one read from `snapshot`; the plugin refuses bytes it cannot
    /// read and then leaves the state unchanged.
    public func restore(_ snapshot: [UInt8]) throws(PluginError) {
        scratch.pointee.phase = .restoring(thread: pthread_self())
        let status = snapshot.withUnsafeBufferPointer { plugin.functions.restore(scratch.pointee.statePointer, $0.baseAddress, $0.count) }
        scratch.pointee.phase = .idle
        let message = scratch.pointee.failureMessage
        scratch.pointee.failureMessage = nil
        guard status == ACTOMATON_OK else {
            throw PluginError(.restoreFailed(message ?? "restore returned status \(status)"), at: plugin.path)
        }
    }

    /// The plugin's one-line description of the state (often JSON).
    public func describe() -> String {
        var capacity = 256
        while true {
            var buffer = [UInt8](repeating: 0, count: capacity)
            let size = buffer.withUnsafeMutableBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { plugin.functions.describe(scratch.pointee.statePointer, $0.baseAddress, capacity) }
            }
            if size <= capacity { return String(decoding: buffer[0..<size], as: UTF8.self) }
            precondition(size <= 1 << 26, "plugin \(plugin.name) asked for a description buffer of \(size) bytes")
            capacity = size
        }
    }

    // MARK: Host functions

    private func bindHostFunctions() throws(PluginError.Reason) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        func closure(_ interface: CallInterface, _ trampoline: FFIClosure.Trampoline) throws(PluginError.Reason) -> UnsafeMutableRawPointer {
            guard let closure = FFIClosure(interface: interface, trampoline: trampoline, userData: me) else {
                throw .libffi("cannot allocate a closure for the host function table")
            }
            closures.append(closure)
            return closure.code
        }
        let signatures = HostFunctionSignatures.shared
        table.pointee.next_action = unsafeBitCast(try closure(signatures.call, nextActionTrampoline), to: type(of: table.pointee.next_action))
        table.pointee.delayed_action = unsafeBitCast(try closure(signatures.timed, delayedActionTrampoline), to: type(of: table.pointee.delayed_action))
        table.pointee.repeating_action = unsafeBitCast(try closure(signatures.timed, repeatingActionTrampoline), to: type(of: table.pointee.repeating_action))
        table.pointee.cancel = unsafeBitCast(try closure(signatures.call, cancelTrampoline), to: type(of: table.pointee.cancel))
        table.pointee.fail = unsafeBitCast(try closure(signatures.message, failTrampoline), to: type(of: table.pointee.fail))
        table.pointee.log = unsafeBitCast(try closure(signatures.message, logTrampoline), to: type(of: table.pointee.log))
    }

    /// Whether the caller is the action call in progress; records an invalid request if not.
    private func acceptsEffectRequest(_ what: String) -> Bool {
        guard case let .acting(thread) = scratch.pointee.phase else {
            log("\(what) called outside an action: ignored")
            return false
        }
        guard pthread_equal(thread, pthread_self()) != 0 else {
            log("\(what) called from another thread than the action's: ignored")
            return false
        }
        return true
    }

    fileprivate func request(_ make: () throws(PluginError.Reason) -> PluginEffectRequest, what: String) -> Int32 {
        guard acceptsEffectRequest(what) else { return Int32(ACTOMATON_INVALID_REQUEST) }
        do {
            scratch.pointee.requests.append(try make())
            return ACTOMATON_OK
        } catch {
            if scratch.pointee.invalidRequest == nil { scratch.pointee.invalidRequest = "\(what): \(error)" }
            return Int32(ACTOMATON_INVALID_REQUEST)
        }
    }

    fileprivate func fail(_ message: String) {
        switch scratch.pointee.phase {
        case let .acting(thread), let .restoring(thread):
            if pthread_equal(thread, pthread_self()) != 0 {
                if scratch.pointee.failureMessage == nil { scratch.pointee.failureMessage = message }
                return
            }
        case .idle:
            break
        }
        log("fail called outside an action: \(message)")
    }

    fileprivate func logLine(_ line: String) { log(line) }

    /// Reads an `actomaton_call` and checks it against this plugin's vocabulary.
    fileprivate func readCall(_ pointer: UnsafePointer<actomaton_call>?) throws(PluginError.Reason) -> PluginAction {
        guard let call = pointer?.pointee else { throw .syntax("the action is NULL") }
        guard let name = readString(call.action, limit: Int(ACTOMATON_MAX_NAME_LENGTH)) else {
            throw .syntax("the action name is NULL, too long or not UTF-8")
        }
        guard let signature = plugin.manifest.actions.first(where: { $0.name == name }) else {
            throw .unknownAction(name, plugin: plugin.name, known: plugin.manifest.actions.map(\.name))
        }
        let count = Int(call.arg_count)
        guard count == signature.parameters.count else {
            throw .wrongArgumentCount(action: name, signature: signature.description, expected: signature.parameters.count, got: count)
        }
        var values: [PluginValue] = []
        for (position, parameter) in signature.parameters.enumerated() {
            guard let args = call.args else { throw .syntax("args is NULL but arg_count is \(count)") }
            let value = args[position]
            guard value.type == parameter.type.rawValue else {
                let got = PluginValueType(rawValue: value.type).map { "a value of type \($0)" } ?? "unknown type \(value.type)"
                throw .wrongArgumentType(action: name, index: position + 1, parameter: parameter.name, expected: parameter.type, got: got)
            }
            switch parameter.type {
            case .bool: values.append(.bool(value.as.b))
            case .int8, .int16, .int32, .int64: values.append(.int(value.as.i))
            case .uint8, .uint16, .uint32, .uint64: values.append(.uint(value.as.u))
            case .float, .double: values.append(.float(value.as.f))
            case .string:
                guard let text = readString(value.as.s, limit: 1 << 20) else {
                    throw .wrongArgumentType(action: name, index: position + 1, parameter: parameter.name, expected: .string, got: "NULL or invalid UTF-8")
                }
                values.append(.string(text))
            }
        }
        do {
            return try plugin.action(name, values)
        } catch {
            throw error.reason
        }
    }

    /// Reads effect options; `nil` pointer means none.
    fileprivate func readOptions(_ pointer: UnsafePointer<actomaton_effect_options>?) throws(PluginError.Reason) -> PluginEffectOptions {
        guard let options = pointer?.pointee else { return PluginEffectOptions() }
        var result = PluginEffectOptions()
        if options.id != nil {
            guard let id = readString(options.id, limit: 256) else { throw .syntax("the effect ID is too long or not UTF-8") }
            result.id = id
        }
        if options.queue != nil {
            guard let queue = readString(options.queue, limit: 256) else { throw .syntax("the queue name is too long or not UTF-8") }
            guard options.max_count >= 1 else { throw .syntax("queue '\(queue)' has max_count 0; it must be at least 1") }
            let maxCount = Int(options.max_count)
            let policy: PluginEffectOptions.Policy
            switch options.policy {
            case ACTOMATON_QUEUE_RUN_NEWEST: policy = .runNewest(maxCount: maxCount)
            case ACTOMATON_QUEUE_RUN_OLDEST_SUSPEND_NEW: policy = .runOldest(maxCount: maxCount, discardNew: false)
            case ACTOMATON_QUEUE_RUN_OLDEST_DISCARD_NEW: policy = .runOldest(maxCount: maxCount, discardNew: true)
            default: throw .syntax("queue '\(queue)' has unknown policy \(options.policy)")
            }
            result.queue = .init(name: queue, policy: policy)
        }
        return result
    }
}

/// A NUL-terminated UTF-8 string of at most `limit` bytes, or `nil`.
private func readString(_ pointer: UnsafePointer<CChar>?, limit: Int) -> String? {
    guard let pointer else { return nil }
    let length = strnlen(pointer, limit + 1)
    guard length <= limit else { return nil }
    return String(validating: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
}

/// Writes `line` and a newline to standard error.
func printToStandardError(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

/// The call interfaces of the host functions, shared by every instance's closures.
private final class HostFunctionSignatures: Sendable {
    static let shared = HostFunctionSignatures()
    /// `actomaton_status f(const void *)`: next_action, cancel.
    let call = CallInterface(returning: cffi_type_sint32(), arguments: [cffi_type_pointer()])!
    /// `actomaton_status f(const actomaton_call *, uint64_t, const actomaton_effect_options *)`.
    let timed = CallInterface(returning: cffi_type_sint32(), arguments: [cffi_type_pointer(), cffi_type_uint64(), cffi_type_pointer()])!
    /// `void f(const char *)`: fail, log.
    let message = CallInterface(returning: cffi_type_void(), arguments: [cffi_type_pointer()])!
}

// MARK: Trampolines: libffi jumps here with the instance as user data.

private func instance(_ userData: UnsafeMutableRawPointer?) -> PluginInstance {
    Unmanaged<PluginInstance>.fromOpaque(userData!).takeUnretainedValue()
}

private func returnStatus(_ status: Int32, _ result: UnsafeMutableRawPointer?) {
    result?.storeBytes(of: ffi_sarg(status), as: ffi_sarg.self)
}

private func argument<T>(_ arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ index: Int, as type: T.Type) -> T {
    arguments![index]!.load(as: T.self)
}

private func nextActionTrampoline(
    _: UnsafeMutablePointer<ffi_cif>?, result: UnsafeMutableRawPointer?,
    arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, userData: UnsafeMutableRawPointer?
) {
    let host = instance(userData)
    let call = argument(arguments, 0, as: UnsafePointer<actomaton_call>?.self)
    returnStatus(host.request({ () throws(PluginError.Reason) in .next(try host.readCall(call)) }, what: "next_action"), result)
}

private func delayedActionTrampoline(
    _: UnsafeMutablePointer<ffi_cif>?, result: UnsafeMutableRawPointer?,
    arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, userData: UnsafeMutableRawPointer?
) {
    let host = instance(userData)
    let call = argument(arguments, 0, as: UnsafePointer<actomaton_call>?.self)
    let delay = argument(arguments, 1, as: UInt64.self)
    let options = argument(arguments, 2, as: UnsafePointer<actomaton_effect_options>?.self)
    returnStatus(host.request({ () throws(PluginError.Reason) in
        .delayed(try host.readCall(call), after: .nanoseconds(delay), try host.readOptions(options))
    }, what: "delayed_action"), result)
}

private func repeatingActionTrampoline(
    _: UnsafeMutablePointer<ffi_cif>?, result: UnsafeMutableRawPointer?,
    arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, userData: UnsafeMutableRawPointer?
) {
    let host = instance(userData)
    let call = argument(arguments, 0, as: UnsafePointer<actomaton_call>?.self)
    let interval = argument(arguments, 1, as: UInt64.self)
    let options = argument(arguments, 2, as: UnsafePointer<actomaton_effect_options>?.self)
    returnStatus(host.request({ () throws(PluginError.Reason) in
        guard interval > 0 else { throw .syntax("the interval must be more than 0") }
        return .repeating(try host.readCall(call), every: .nanoseconds(interval), try host.readOptions(options))
    }, what: "repeating_action"), result)
}

private func cancelTrampoline(
    _: UnsafeMutablePointer<ffi_cif>?, result: UnsafeMutableRawPointer?,
    arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, userData: UnsafeMutableRawPointer?
) {
    let host = instance(userData)
    let id = argument(arguments, 0, as: UnsafePointer<CChar>?.self)
    returnStatus(host.request({ () throws(PluginError.Reason) in
        guard let id = readString(id, limit: 256) else { throw .syntax("the effect ID is NULL, too long or not UTF-8") }
        return .cancel(id: id)
    }, what: "cancel"), result)
}

private func failTrampoline(
    _: UnsafeMutablePointer<ffi_cif>?, result: UnsafeMutableRawPointer?,
    arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, userData: UnsafeMutableRawPointer?
) {
    let message = argument(arguments, 0, as: UnsafePointer<CChar>?.self)
    instance(userData).fail(readString(message, limit: 4096) ?? "(an unreadable message)")
}

private func logTrampoline(
    _: UnsafeMutablePointer<ffi_cif>?, result: UnsafeMutableRawPointer?,
    arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, userData: UnsafeMutableRawPointer?
) {
    let message = argument(arguments, 0, as: UnsafePointer<CChar>?.self)
    instance(userData).logLine(readString(message, limit: 4096) ?? "(an unreadable message)")
}
