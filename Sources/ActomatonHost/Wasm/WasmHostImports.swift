import ActomatonPluginContract
import ActomatonPluginABI
import WasmKit

/// The functions a module may import, all from module `"actomaton"`.
enum HostImport: String, CaseIterable {
    case nextAction = "next_action"
    case delayedAction = "delayed_action"
    case repeatingAction = "repeating_action"
    case cancel
    case fail
    case log

    /// Its wasm signature.
    var type: FunctionType {
        switch self {
        case .nextAction: FunctionType(parameters: [.i32], results: [.i32])
        case .delayedAction, .repeatingAction: FunctionType(parameters: [.i32, .i64, .i32], results: [.i32])
        case .cancel: FunctionType(parameters: [.i32, .i32], results: [.i32])
        case .fail, .log: FunctionType(parameters: [.i32, .i32], results: [])
        }
    }
}

/// What a host import costs in fuel, on top of the instructions that call it: the work it does
/// for the module is the host's, outside the interpreter's count, so a loop of calls (a log
/// line, a next action with a long string argument, again and again) would otherwise run for
/// hours on a budget meant for seconds.
enum HostImportFuel {
    /// Fuel per call: a call does about as much as this many instructions.
    static let perCall: UInt64 = 100
    /// One unit of fuel for this many bytes of module memory read (strings, IDs, messages):
    /// the host checks and copies about that many bytes in the time the interpreter runs an
    /// instruction (a loop of next actions with a 1 MiB argument ran 3.2 s at the default
    /// budget at 16 bytes a unit; 0.8 s at 4).
    static let bytesPerUnit = 4

    /// Out of fuel in a host import: the call fails as one out of fuel in the module does.
    struct Exhausted: Error, CustomStringConvertible {
        var description: String { "out of fuel" }
    }

    /// Takes the cost of a call that read `bytesRead` bytes from `store`'s budget (nothing
    /// when it runs unmetered); throws ``Exhausted`` when the budget does not cover it.
    static func charge(_ store: Store, bytesRead: Int) throws(Exhausted) {
        guard let fuel = store.fuel else { return }
        let cost = perCall + UInt64(bytesRead / bytesPerUnit)
        guard fuel.remaining >= cost else {
            store.fuel = Fuel(remaining: 0)
            throw Exhausted()
        }
        store.fuel = Fuel(remaining: fuel.remaining - cost)
    }
}

/// Runs the host import `function` for a module: records an effect request, a failure message
/// or a log line in `context`. A request the host cannot accept returns
/// `ACTOMATON_INVALID_REQUEST` and fails the action; nothing a module passes can trap
/// the host.
func hostCall(_ function: HostImport, _ arguments: [Value], _ context: WasmMachine.Context) throws -> [Value] {
    func i32(_ index: Int) -> Int { Int(arguments[index].i32 ?? 0) }
    switch function {
    case .fail:
        let message = readText(context, offset: i32(0), length: i32(1), limit: PluginLimits.maxMessageBytes)
        switch context.phase {
        case .acting, .restoring, .loading:
            context.recorder.fail(message ?? "(an unreadable message)")
        case .idle:
            context.log("fail called outside an action: \(message ?? "(an unreadable message)")")
        }
        return []
    case .log:
        context.log(readText(context, offset: i32(0), length: i32(1), limit: PluginLimits.maxMessageBytes) ?? "(an unreadable log line)")
        return []
    case .nextAction, .delayedAction, .repeatingAction, .cancel:
        return [.i32(UInt32(bitPattern: request(function, arguments, context)))]
    }
}

/// Records one effect request; returns the contract's status.
private func request(_ function: HostImport, _ arguments: [Value], _ context: WasmMachine.Context) -> Int32 {
    let name = function.rawValue
    guard context.phase == .acting, let plugin = context.plugin else {
        context.log("\(name) called outside an action: ignored")
        return Int32(ACTOMATON_INVALID_REQUEST)
    }
    let offset = Int(arguments[0].i32 ?? 0)
    return context.recorder.record(name, budget: context.effectBudget) { () throws(HostRequestError) -> PluginEffectRequest in
        switch function {
        case .nextAction:
            return .next(try readCall(context, plugin, at: offset))
        case .delayedAction, .repeatingAction:
            let action = try readCall(context, plugin, at: offset)
            let nanoseconds = arguments[1].i64 ?? 0
            let options = try readOptions(context, at: Int(arguments[2].i32 ?? 0))
            let duration = Duration.nanoseconds(Int64(clamping: nanoseconds))
            if function == .delayedAction { return .delayed(action, after: duration, options) }
            guard nanoseconds > 0 else { throw HostRequestError("the interval must be more than 0") }
            return .repeating(action, every: duration, options)
        case .cancel:
            let length = Int(arguments[1].i32 ?? 0)
            guard length <= PluginLimits.maxIdentifierBytes else {
                throw HostRequestError("the effect ID is longer than \(PluginLimits.maxIdentifierBytes) bytes")
            }
            guard let id = readText(context, offset: offset, length: length, limit: PluginLimits.maxIdentifierBytes) else {
                throw HostRequestError("the effect ID is outside the module's memory or not UTF-8")
            }
            return .cancel(id: id)
        case .fail, .log:
            throw HostRequestError("not an effect request") // hostCall handles them
        }
    }
}

/// UTF-8 text the module points to, or `nil` when it is outside memory, too long or not UTF-8.
private func readText(_ context: WasmMachine.Context, offset: Int, length: Int, limit: Int) -> String? {
    guard length <= limit, let memory = context.memory, let bytes = readMemory(memory, offset: offset, length: length) else { return nil }
    context.bytesRead += length
    return String(validating: bytes, as: UTF8.self)
}

/// A little-endian UInt32 at `offset`, or `nil` outside memory.
func u32(_ memory: Memory, _ offset: Int) -> UInt32? {
    guard let bytes = readMemory(memory, offset: offset, length: 4) else { return nil }
    return bytes.enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * $1.offset) }
}

private func u64(_ memory: Memory, _ offset: Int) -> UInt64? {
    guard let bytes = readMemory(memory, offset: offset, length: 8) else { return nil }
    return bytes.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * $1.offset) }
}

/// Reads an `actomaton_wasm_call` and checks it against the plugin's vocabulary.
private func readCall(_ context: WasmMachine.Context, _ plugin: Plugin, at offset: Int) throws(HostRequestError) -> PluginAction {
    guard let memory = context.memory, let index = u32(memory, offset), let args = u32(memory, offset + 4),
          let count = u32(memory, offset + 8) else {
        throw HostRequestError("the call at offset \(offset) is outside the module's memory")
    }
    guard Int(index) < plugin.manifest.actions.count else {
        throw HostRequestError("action index \(index) is not in the vocabulary (\(plugin.manifest.actions.count) actions)")
    }
    let signature = plugin.manifest.actions[Int(index)]
    guard Int(count) == signature.parameters.count else {
        throw HostRequestError(PluginCallError.Reason.wrongArgumentCount(action: signature.name, signature: signature.description,
                                                                         expected: signature.parameters.count, got: Int(count)).description)
    }
    var values: [PluginValue] = []
    for (position, parameter) in signature.parameters.enumerated() {
        let slot = Int(args) + 16 * position
        guard let type = u32(memory, slot), let raw = u64(memory, slot + 8) else {
            throw HostRequestError("argument \(position + 1) of '\(signature.name)' is outside the module's memory")
        }
        guard type == parameter.type.rawValue else {
            let got = PluginValueType(rawValue: type).map { "a value of type \($0)" } ?? "unknown type \(type)"
            throw HostRequestError(PluginCallError.Reason.wrongArgumentType(action: signature.name, index: position + 1, parameter: parameter.name,
                                                                            expected: parameter.type, got: got).description)
        }
        switch parameter.type {
        case .bool: values.append(.bool(raw & 0xFFFF_FFFF != 0))
        case .int8, .int16, .int32, .int64: values.append(.int(Int64(bitPattern: raw)))
        case .uint8, .uint16, .uint32, .uint64: values.append(.uint(raw))
        case .float, .double: values.append(.float(Double(bitPattern: raw)))
        case .string:
            let length = Int(raw >> 32)
            guard length <= PluginLimits.maxStringArgumentBytes,
                  let text = readText(context, offset: Int(raw & 0xFFFF_FFFF), length: length, limit: PluginLimits.maxStringArgumentBytes) else {
                throw HostRequestError("argument \(position + 1) (\(parameter.name)) of '\(signature.name)' is outside the module's memory, "
                    + "longer than \(PluginLimits.maxStringArgumentBytes) bytes or not UTF-8")
            }
            values.append(.string(text))
        }
    }
    do {
        return try plugin.checkedAction(signature.name, values)
    } catch {
        throw HostRequestError(error.description)
    }
}

/// Reads `actomaton_wasm_effect_options`; offset 0 means none.
private func readOptions(_ context: WasmMachine.Context, at offset: Int) throws(HostRequestError) -> PluginEffectOptions {
    guard offset != 0 else { return PluginEffectOptions() }
    guard let memory = context.memory, let words = readMemory(memory, offset: offset, length: 24) else {
        throw HostRequestError("the effect options are outside the module's memory")
    }
    func word(_ index: Int) -> Int { (0..<4).reduce(0) { $0 | Int(words[index * 4 + $1]) << (8 * $1) } }
    let limit = PluginLimits.maxIdentifierBytes
    var result = PluginEffectOptions()
    if word(1) > 0 || word(0) != 0 {
        guard word(1) <= limit, let id = readText(context, offset: word(0), length: word(1), limit: limit) else {
            throw HostRequestError("the effect ID is outside the module's memory, longer than \(limit) bytes or not UTF-8")
        }
        result.id = id
    }
    if word(3) > 0 || word(2) != 0 {
        guard word(3) <= limit, let queue = readText(context, offset: word(2), length: word(3), limit: limit) else {
            throw HostRequestError("the queue name is outside the module's memory, longer than \(limit) bytes or not UTF-8")
        }
        guard word(5) >= 1 else { throw HostRequestError("queue '\(queue)' has max_count 0; it must be at least 1") }
        guard let policy = PluginQueuePolicy(abiPolicy: UInt32(word(4)), maxCount: word(5)) else {
            throw HostRequestError("queue '\(queue)' has unknown policy \(word(4))")
        }
        result.queue = .init(name: queue, policy: policy)
    }
    return result
}
