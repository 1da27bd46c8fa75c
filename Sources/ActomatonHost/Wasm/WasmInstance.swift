import ActomatonPluginContract

/// One plugin state in the WebAssembly sandbox, seen from the host: the same calls as a
/// ``PluginInstance``, with the module's traps contained.
///
/// A trap — `unreachable`, an out-of-bounds access, call-stack exhaustion, running out of
/// fuel, a grow past the memory cap that the module did not survive — fails the call in
/// progress with one line. The instance is then thrown away and a new one is built from the
/// last good snapshot and the actions completed since (replayed; their effects already ran),
/// so the state is exactly as it was before the failed call. The host takes a snapshot every
/// ``WasmLimits/snapshotInterval`` actions, which bounds the replay.
///
/// Confined to its machine's actor, like a ``PluginInstance``: one call at a time.
final class WasmInstance: @unchecked Sendable {
    let plugin: Plugin
    private let module: WasmPluginModule
    private let log: @Sendable (String) -> Void
    private let effectBudget: EffectBudget
    private var machine: WasmMachine
    private var lastSnapshot: [UInt8]?
    private var actionsSinceSnapshot: [PluginAction] = []

    init(plugin: Plugin, log: (@Sendable (String) -> Void)?, effectBudget: EffectBudget) throws(PluginLoadError) {
        guard let module = plugin.wasm else {
            throw PluginLoadError(.wasm("the plugin is not a WebAssembly module"), at: plugin.path)
        }
        self.plugin = plugin
        self.module = module
        let name = plugin.name
        self.log = log ?? { line in printToStandardError("[\(name)] \(line)") }
        self.effectBudget = effectBudget
        machine = try Self.makeMachine(module: module, plugin: plugin, log: self.log, budget: effectBudget)
    }

    private static func makeMachine(module: WasmPluginModule, plugin: Plugin, log: @escaping @Sendable (String) -> Void,
                                    budget: EffectBudget) throws(PluginLoadError) -> WasmMachine {
        let machine = try WasmMachine(module: module, path: plugin.path, plugin: plugin)
        machine.context.log = log
        machine.context.effectBudget = budget
        return machine
    }

    /// Runs `action`; see ``PluginInstance/perform(_:)``.
    func perform(_ action: PluginAction) -> PluginInstance.Outcome {
        guard action.vocabulary == plugin.vocabulary else {
            do {
                return perform(try plugin.checkedAction(action.name, action.arguments))
            } catch {
                return .failure(error)
            }
        }
        do {
            let outcome = try machine.perform(action)
            if case .success = outcome { completed(action) }
            return outcome
        } catch {
            return .failure(.sandboxTrapped(call: "'\(action)'", cause: error.message, recovery: recover(after: error)))
        }
    }

    /// The module's snapshot of its state.
    func snapshot() throws(PluginCallError.Reason) -> [UInt8] {
        do {
            let bytes = try machine.snapshot()
            lastSnapshot = bytes
            actionsSinceSnapshot.removeAll()
            return bytes
        } catch {
            throw .snapshotFailed("\(error.message)\(recovery(error))")
        }
    }

    /// Replaces the state with one read from `bytes`.
    func restore(_ bytes: [UInt8]) throws(PluginCallError.Reason) {
        do {
            try machine.restore(bytes)
            lastSnapshot = bytes
            actionsSinceSnapshot.removeAll()
        } catch {
            if error.trapped { throw .restoreRefused("\(error.message)\(recovery(error))") }
            throw .restoreRefused(error.message)
        }
    }

    /// The module's one-line description of its state.
    func describe() throws(PluginCallError.Reason) -> String {
        do {
            return try machine.describe()
        } catch {
            throw .describeFailed("\(error.message)\(recovery(error))")
        }
    }

    // MARK: Recovery

    private func completed(_ action: PluginAction) {
        actionsSinceSnapshot.append(action)
        guard actionsSinceSnapshot.count >= module.limits.snapshotInterval else { return }
        if let bytes = try? machine.snapshot() {
            lastSnapshot = bytes
            actionsSinceSnapshot.removeAll()
        }
    }

    /// `; ` and what recovery did, when the call trapped.
    private func recovery(_ failure: WasmMachine.CallFailure) -> String {
        failure.trapped ? "; \(recover(after: failure))" : ""
    }

    /// Rebuilds the instance after a trap; says what became of the state.
    private func recover(after failure: WasmMachine.CallFailure) -> String {
        guard failure.trapped else { return "the state is unchanged" }
        do throws(PluginLoadError) {
            let fresh = try Self.makeMachine(module: module, plugin: plugin, log: log, budget: effectBudget)
            if let lastSnapshot { try? fresh.restore(lastSnapshot) }
            for action in actionsSinceSnapshot { _ = try? fresh.perform(action) }
            machine = fresh
            return "the instance was rebuilt with the state as it was before"
        } catch {
            log("cannot rebuild the instance after a trap: \(error.reason)")
            return "the instance could not be rebuilt (\(error.reason))"
        }
    }
}
