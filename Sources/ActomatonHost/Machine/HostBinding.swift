import ActomatonPluginContract
import ActomatonPluginABI
import ActomatonFFI
import CFFI
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a ``PluginInstance``'s host function table reaches: the table, its libffi closures,
/// and which call (if any) may use them now.
///
/// It is immortal: it is retained once and never released, and with it the table and the
/// closures, so a plugin that keeps the table and calls it after `destroy` — or from a thread
/// of its own during a reload — gets `ACTOMATON_INVALID_REQUEST` instead of freed memory.
///
/// Which call is in progress is kept in atomics, so a plugin thread can ask at any time:
/// effect requests and `fail` are taken only on the thread of the call in progress, and only
/// that thread then touches the instance.
final class HostBinding: @unchecked Sendable {
    /// The call in progress.
    enum Phase: UInt8 {
        case idle, acting, restoring, destroyed
    }

    /// The table handed to `create`.
    let table: UnsafeMutablePointer<actomaton_host>
    /// Whether every closure of the table could be made.
    private(set) var isBound = false
    let log: @Sendable (String) -> Void
    private var closures: [FFIClosure] = []
    private let phase = Atomic<UInt8>(Phase.idle.rawValue)
    private let thread = Atomic<UInt>(0)
    /// Set once, before `create`; read only by the thread of a call in progress.
    private unowned(unsafe) var instance: PluginInstance?

    init(log: @escaping @Sendable (String) -> Void) {
        self.log = log
        table = .allocate(capacity: 1)
        table.initialize(to: actomaton_host())
        table.pointee.abi_version = ManifestReader.supportedABIVersion
        _ = Unmanaged.passRetained(self) // immortal; see the type's documentation
        isBound = bind()
    }

    func attach(_ instance: PluginInstance) {
        self.instance = instance
    }

    /// The state is gone: from now on every host function is refused.
    func detach() {
        phase.store(Phase.destroyed.rawValue, ordering: .releasing)
        thread.store(0, ordering: .releasing)
    }

    /// A call into the plugin starts on this thread.
    @inline(__always)
    func enter(_ newPhase: Phase) {
        thread.store(UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .relaxed)
        phase.store(newPhase.rawValue, ordering: .releasing)
    }

    /// The call into the plugin returned.
    @inline(__always)
    func leave() {
        phase.store(Phase.idle.rawValue, ordering: .releasing)
        thread.store(0, ordering: .relaxed)
    }

    /// The instance, when the caller is the thread of an action call (or of a `restore` call,
    /// if `orRestoring`); else `nil` and the phase found.
    fileprivate func caller(orRestoring: Bool) -> (instance: PluginInstance?, phase: Phase) {
        let current = Phase(rawValue: phase.load(ordering: .acquiring)) ?? .destroyed
        guard current == .acting || (orRestoring && current == .restoring),
              thread.load(ordering: .relaxed) == UInt(bitPattern: Int(bitPattern: pthread_self()))
        else { return (nil, current) }
        return (instance, current)
    }

    /// Whether the state was destroyed.
    fileprivate var isDestroyed: Bool { phase.load(ordering: .acquiring) == Phase.destroyed.rawValue }

    private func bind() -> Bool {
        let me = Unmanaged.passUnretained(self).toOpaque()
        func closure(_ interface: CallInterface, _ trampoline: FFIClosure.Trampoline) -> UnsafeMutableRawPointer? {
            guard let closure = FFIClosure(interface: interface, trampoline: trampoline, userData: me) else { return nil }
            closures.append(closure)
            return closure.code
        }
        let signatures = HostFunctionSignatures.shared
        guard let next = closure(signatures.call, nextActionTrampoline),
              let delayed = closure(signatures.timed, delayedActionTrampoline),
              let repeating = closure(signatures.timed, repeatingActionTrampoline),
              let cancel = closure(signatures.call, cancelTrampoline),
              let fail = closure(signatures.message, failTrampoline),
              let log = closure(signatures.message, logTrampoline)
        else { return false }
        table.pointee.next_action = unsafeBitCast(next, to: type(of: table.pointee.next_action))
        table.pointee.delayed_action = unsafeBitCast(delayed, to: type(of: table.pointee.delayed_action))
        table.pointee.repeating_action = unsafeBitCast(repeating, to: type(of: table.pointee.repeating_action))
        table.pointee.cancel = unsafeBitCast(cancel, to: type(of: table.pointee.cancel))
        table.pointee.fail = unsafeBitCast(fail, to: type(of: table.pointee.fail))
        table.pointee.log = unsafeBitCast(log, to: type(of: table.pointee.log))
        return true
    }

    // MARK: What the host functions do

    /// Records an effect request of the action in progress, or refuses it.
    fileprivate func request(_ make: (PluginInstance) throws(HostRequestError) -> PluginEffectRequest, what: String) -> Int32 {
        let (found, phase) = caller(orRestoring: false)
        guard let instance = found else {
            switch phase {
            case .destroyed: break // nobody to tell: the state is gone
            case .idle: log("\(what) called outside an action: ignored")
            case .acting, .restoring: log("\(what) called from another thread than the call's: ignored")
            }
            return Int32(ACTOMATON_INVALID_REQUEST)
        }
        return instance.scratch.pointee.recorder.record(what, budget: instance.effectBudget) { () throws(HostRequestError) in try make(instance) }
    }

    fileprivate func fail(_ message: String) {
        let (found, phase) = caller(orRestoring: true)
        if let instance = found {
            instance.scratch.pointee.recorder.fail(message)
            return
        }
        if phase != .destroyed { log("fail called outside an action: \(message)") }
    }

    fileprivate func logLine(_ line: String) {
        if !isDestroyed { log(line) }
    }
}

// MARK: Reading what a plugin hands over

extension PluginInstance {
    /// Reads an `actomaton_call` and checks it against this plugin's vocabulary.
    fileprivate func readCall(_ pointer: UnsafePointer<actomaton_call>?) throws(HostRequestError) -> PluginAction {
        guard let call = pointer?.pointee else { throw HostRequestError("the action is NULL") }
        guard let name = readString(call.action, limit: Int(ACTOMATON_MAX_NAME_LENGTH)) else {
            throw HostRequestError("the action name is NULL, longer than \(ACTOMATON_MAX_NAME_LENGTH) bytes or not UTF-8")
        }
        guard let signature = plugin.manifest.actions.first(where: { $0.name == name }) else {
            throw HostRequestError(PluginCallError.Reason.unknownAction(name, plugin: plugin.name, known: plugin.manifest.actions.map(\.name)).description)
        }
        let count = Int(call.arg_count)
        guard count == signature.parameters.count else {
            throw HostRequestError(PluginCallError.Reason.wrongArgumentCount(action: name, signature: signature.description,
                                                                             expected: signature.parameters.count, got: count).description)
        }
        var values: [PluginValue] = []
        if count > 0, call.args == nil { throw HostRequestError("args is NULL but arg_count is \(count)") }
        for (position, parameter) in signature.parameters.enumerated() {
            let value = call.args![position]
            guard value.type == parameter.type.rawValue else {
                let got = PluginValueType(rawValue: value.type).map { "a value of type \($0)" } ?? "unknown type \(value.type)"
                throw HostRequestError(PluginCallError.Reason.wrongArgumentType(action: name, index: position + 1, parameter: parameter.name,
                                                                                expected: parameter.type, got: got).description)
            }
            switch parameter.type {
            // Read as a byte: a C `bool` holding 2 is not a Swift `Bool` (reading it so is undefined).
            case .bool: values.append(.bool(withUnsafeBytes(of: value.as) { $0[0] } != 0))
            case .int8, .int16, .int32, .int64: values.append(.int(value.as.i))
            case .uint8, .uint16, .uint32, .uint64: values.append(.uint(value.as.u))
            case .float, .double: values.append(.float(value.as.f))
            case .string:
                guard let text = readString(value.as.s, limit: PluginLimits.maxStringArgumentBytes) else {
                    throw HostRequestError("argument \(position + 1) (\(parameter.name)) of '\(name)' is NULL, "
                        + "longer than \(PluginLimits.maxStringArgumentBytes) bytes or not UTF-8")
                }
                values.append(.string(text))
            }
        }
        do {
            return try plugin.checkedAction(name, values)
        } catch {
            throw HostRequestError(error.description)
        }
    }

    /// Reads effect options; `nil` pointer means none.
    fileprivate func readOptions(_ pointer: UnsafePointer<actomaton_effect_options>?) throws(HostRequestError) -> PluginEffectOptions {
        guard let options = pointer?.pointee else { return PluginEffectOptions() }
        let limit = PluginLimits.maxIdentifierBytes
        var result = PluginEffectOptions()
        if options.id != nil {
            guard let id = readString(options.id, limit: limit) else { throw HostRequestError("the effect ID is longer than \(limit) bytes or not UTF-8") }
            result.id = id
        }
        if options.queue != nil {
            guard let queue = readString(options.queue, limit: limit) else { throw HostRequestError("the queue name is longer than \(limit) bytes or not UTF-8") }
            guard options.max_count >= 1 else { throw HostRequestError("queue '\(queue)' has max_count 0; it must be at least 1") }
            let maxCount = Int(options.max_count)
            guard let policy = PluginQueuePolicy(abiPolicy: options.policy, maxCount: maxCount) else {
                throw HostRequestError("queue '\(queue)' has unknown policy \(options.policy)")
            }
            result.queue = .init(name: queue, policy: policy)
        }
        return result
    }
}

/// A NUL-terminated UTF-8 string of at most `limit` bytes, or `nil` (for `NULL` too).
private func readString(_ pointer: UnsafePointer<CChar>?, limit: Int) -> String? {
    (try? CString.read(pointer, limit: limit)) ?? nil
}

/// A message (`fail`, `log`): at most ``PluginLimits/maxMessageBytes``, cut with a note past
/// that; invalid UTF-8 shown as `\xHH`.
private func readMessage(_ pointer: UnsafePointer<CChar>?) -> String {
    guard let pointer else { return "(NULL)" }
    let limit = PluginLimits.maxMessageBytes
    let length = strnlen(pointer, limit + 1)
    let text = TerminalText.decoding(UnsafeRawBufferPointer(start: pointer, count: min(length, limit)))
    return length > limit ? text + " … (cut at \(limit) bytes)" : text
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

// MARK: Trampolines: libffi jumps here with the binding as user data.

private func binding(_ userData: UnsafeMutableRawPointer?) -> HostBinding {
    Unmanaged<HostBinding>.fromOpaque(userData!).takeUnretainedValue()
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
    let call = argument(arguments, 0, as: UnsafePointer<actomaton_call>?.self)
    returnStatus(binding(userData).request({ instance throws(HostRequestError) in .next(try instance.readCall(call)) }, what: "next_action"), result)
}

private func delayedActionTrampoline(
    _: UnsafeMutablePointer<ffi_cif>?, result: UnsafeMutableRawPointer?,
    arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, userData: UnsafeMutableRawPointer?
) {
    let call = argument(arguments, 0, as: UnsafePointer<actomaton_call>?.self)
    let delay = argument(arguments, 1, as: UInt64.self)
    let options = argument(arguments, 2, as: UnsafePointer<actomaton_effect_options>?.self)
    returnStatus(binding(userData).request({ instance throws(HostRequestError) in
        .delayed(try instance.readCall(call), after: .nanoseconds(delay), try instance.readOptions(options))
    }, what: "delayed_action"), result)
}

private func repeatingActionTrampoline(
    _: UnsafeMutablePointer<ffi_cif>?, result: UnsafeMutableRawPointer?,
    arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, userData: UnsafeMutableRawPointer?
) {
    let call = argument(arguments, 0, as: UnsafePointer<actomaton_call>?.self)
    let interval = argument(arguments, 1, as: UInt64.self)
    let options = argument(arguments, 2, as: UnsafePointer<actomaton_effect_options>?.self)
    returnStatus(binding(userData).request({ instance throws(HostRequestError) in
        guard interval > 0 else { throw HostRequestError("the interval must be more than 0") }
        return .repeating(try instance.readCall(call), every: .nanoseconds(interval), try instance.readOptions(options))
    }, what: "repeating_action"), result)
}

private func cancelTrampoline(
    _: UnsafeMutablePointer<ffi_cif>?, result: UnsafeMutableRawPointer?,
    arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, userData: UnsafeMutableRawPointer?
) {
    let id = argument(arguments, 0, as: UnsafePointer<CChar>?.self)
    returnStatus(binding(userData).request({ _ throws(HostRequestError) in
        guard let id = readString(id, limit: PluginLimits.maxIdentifierBytes) else {
            throw HostRequestError("the effect ID is NULL, longer than \(PluginLimits.maxIdentifierBytes) bytes or not UTF-8")
        }
        return .cancel(id: id)
    }, what: "cancel"), result)
}

private func failTrampoline(
    _: UnsafeMutablePointer<ffi_cif>?, result: UnsafeMutableRawPointer?,
    arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, userData: UnsafeMutableRawPointer?
) {
    binding(userData).fail(readMessage(argument(arguments, 0, as: UnsafePointer<CChar>?.self)))
}

private func logTrampoline(
    _: UnsafeMutablePointer<ffi_cif>?, result: UnsafeMutableRawPointer?,
    arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, userData: UnsafeMutableRawPointer?
) {
    binding(userData).logLine(readMessage(argument(arguments, 0, as: UnsafePointer<CChar>?.self)))
}
