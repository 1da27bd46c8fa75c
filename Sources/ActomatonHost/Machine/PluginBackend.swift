/// Where a machine's plugin state lives: in this process, or in a worker process.
///
/// One switch per call, no existential: the in-process path stays as direct as before.
enum PluginBackend: @unchecked Sendable {
    /// The library is mapped in this process.
    case inProcess(PluginInstance)
    /// The library runs in a supervised worker process.
    case worker(IsolatedInstance, EffectBudget)
    /// A `.wasm` module, in the WebAssembly sandbox in this process.
    case wasm(WasmInstance)

    /// A state of `plugin` in this process: sandboxed when it is a `.wasm` module.
    static func local(_ plugin: Plugin, log: (@Sendable (String) -> Void)?, budget: EffectBudget) throws(PluginLoadError) -> PluginBackend {
        if plugin.wasm != nil { return .wasm(try WasmInstance(plugin: plugin, log: log, effectBudget: budget)) }
        return .inProcess(try PluginInstance(plugin: plugin, log: log, effectBudget: budget))
    }

    /// The plugin whose state this is.
    var plugin: Plugin {
        switch self {
        case let .inProcess(instance): instance.plugin
        case let .worker(instance, _): instance.plugin
        case let .wasm(instance): instance.plugin
        }
    }

    /// Runs `action`; see ``PluginInstance/perform(_:)``.
    func perform(_ action: PluginAction) -> PluginInstance.Outcome {
        switch self {
        case let .inProcess(instance):
            return instance.perform(action)
        case let .worker(instance, budget):
            let outcome = instance.perform(action)
            // The worker cannot see the machine's effects: the limit is checked here.
            if case let .success(requests) = outcome {
                let timed = requests.count { if case .delayed = $0 { true } else if case .repeating = $0 { true } else { false } }
                if timed > 0 && budget.count + timed > budget.limit {
                    return .failure(.effectLimitReached(action: action.description, limit: budget.limit))
                }
            }
            return outcome
        case let .wasm(instance):
            return instance.perform(action)
        }
    }

    func snapshot() throws(PluginCallError.Reason) -> [UInt8] {
        switch self {
        case let .inProcess(instance): try instance.snapshot()
        case let .worker(instance, _): try instance.snapshot()
        case let .wasm(instance): try instance.snapshot()
        }
    }

    func restore(_ bytes: [UInt8]) throws(PluginCallError.Reason) {
        switch self {
        case let .inProcess(instance): try instance.restore(bytes)
        case let .worker(instance, _): try instance.restore(bytes)
        case let .wasm(instance): try instance.restore(bytes)
        }
    }

    func describe() throws(PluginCallError.Reason) -> String {
        switch self {
        case let .inProcess(instance): try instance.describe()
        case let .worker(instance, _): try instance.describe()
        case let .wasm(instance): try instance.describe()
        }
    }
}
