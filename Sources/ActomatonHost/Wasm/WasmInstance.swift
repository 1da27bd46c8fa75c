import ActomatonPluginContract
import Synchronization

/// One plugin state in the WebAssembly sandbox, seen from the host: the same calls as a
/// ``PluginInstance``, with the module's traps contained.
///
/// A trap — `unreachable`, an out-of-bounds access, call-stack exhaustion, running out of
/// fuel, a grow past the memory cap that the module did not survive — fails the call in
/// progress with one line. The instance is then thrown away and rebuilt by the
/// ``SupervisedRecovery`` a worker runtime uses too: a new instance, the last good snapshot
/// (taken every ``WasmLimits/snapshotInterval`` actions), the actions completed since
/// replayed; or the plugin is stopped when it cannot be rebuilt exactly, or traps more than
/// ``WasmLimits/maxRestarts`` times within ``WasmLimits/restartWindow``.
///
/// Confined to its machine, like a ``PluginInstance``: one call at a time.
final class WasmInstance: PluginRuntime, @unchecked Sendable {
    let plugin: Plugin
    /// A trapped instance's state is rebuilt from the last snapshot.
    var rebuildsFromSnapshots: Bool { true }
    /// A call runs until the module returns or its fuel runs out.
    var callsRunLong: Bool { true }
    private let module: WasmPluginModule
    private let log: @Sendable (String) -> Void
    private let effectBudget: EffectBudget
    /// `nil` once the plugin is stopped.
    private var machine: WasmMachine?

    /// The fuel the instance's last snapshot or restore spent: for tests.
    var stateCallFuel: UInt64 { machine?.stateCallFuel ?? 0 }
    private var recovery: SupervisedRecovery

    init(plugin: Plugin, module: WasmPluginModule, log: (@Sendable (String) -> Void)?, effectBudget: EffectBudget) throws(PluginLoadError) {
        self.plugin = plugin
        self.module = module
        self.log = pluginLogSink(log, name: plugin.name)
        self.effectBudget = effectBudget
        recovery = SupervisedRecovery(snapshotInterval: module.limits.snapshotInterval, maxRestarts: module.limits.maxRestarts,
                                      restartWindow: module.limits.restartWindow)
        machine = try Self.makeMachine(module: module, plugin: plugin, log: self.log, budget: effectBudget)
    }

    private static func makeMachine(module: WasmPluginModule, plugin: Plugin, log: @escaping @Sendable (String) -> Void,
                                    budget: EffectBudget, credit: Int = 0) throws(PluginLoadError) -> WasmMachine {
        let machine = try WasmMachine(module: module, path: plugin.path, plugin: plugin, credit: credit)
        machine.context.log = log
        machine.context.effectBudget = budget
        return machine
    }

    func perform(_ action: PluginAction) -> PluginInstance.Outcome {
        guard action.vocabulary == plugin.vocabulary else {
            do {
                return perform(try plugin.checkedAction(action.name, action.arguments))
            } catch {
                return .failure(error)
            }
        }
        guard let machine else { return .failure(recovery.stopped ?? .pluginStopped("it is stopped")) }
        machine.memoryCap.refusedSize = nil
        do {
            let outcome = try machine.perform(action)
            if case let .failure(reason) = outcome { return .failure(reason.refusingMemory(machine)) }
            if case .success = outcome, recovery.completed(action) {
                do { _ = try snapshot() } catch {
                    // Kept for a replay; the host's own finding, not the plugin's log line.
                    let kept = recovery.snapshotFailed()
                    if recovery.stopped != nil { self.machine = nil }
                    HostErrorLines.report(SupervisedRecovery.snapshotFailureLine(plugin: plugin.name, after: action, error: error, kept: kept))
                }
            }
            return outcome
        } catch {
            return .failure(PluginCallError.Reason.sandboxTrapped(call: "'\(action)'", cause: error.message, recovery: recover(after: error))
                .refusingMemory(machine))
        }
    }

    func snapshot() throws(PluginCallError.Reason) -> [UInt8] {
        guard let machine else { throw recovery.stopped ?? .pluginStopped("it is stopped") }
        machine.memoryCap.refusedSize = nil
        do {
            let bytes = try machine.snapshot()
            recovery.stateIs(bytes)
            return bytes
        } catch {
            throw PluginCallError.Reason.snapshotFailed("\(error.message)\(words(error))").refusingMemory(machine)
        }
    }

    func restore(_ bytes: [UInt8]) throws(PluginCallError.Reason) {
        guard let machine else { throw recovery.stopped ?? .pluginStopped("it is stopped") }
        machine.memoryCap.refusedSize = nil
        do {
            try machine.restore(bytes)
            recovery.stateIs(bytes)
        } catch {
            throw PluginCallError.Reason.restoreRefused("\(error.message)\(words(error))").refusingMemory(machine)
        }
    }

    func describe() throws(PluginCallError.Reason) -> String {
        guard let machine else { throw recovery.stopped ?? .pluginStopped("it is stopped") }
        machine.memoryCap.refusedSize = nil
        do {
            return try machine.describe()
        } catch {
            throw PluginCallError.Reason.describeFailed("\(error.message)\(words(error))").refusingMemory(machine)
        }
    }

    func activeNodes() throws(PluginCallError.Reason) -> [String]? {
        guard let machine else { throw recovery.stopped ?? .pluginStopped("it is stopped") }
        machine.memoryCap.refusedSize = nil
        do {
            return try machine.activeNodes()
        } catch {
            throw PluginCallError.Reason.describeFailed(ActiveNodes.failure("\(error.message)\(words(error))")).refusingMemory(machine)
        }
    }

    // MARK: Recovery

    /// `; ` and what recovery did, when the call trapped.
    private func words(_ failure: WasmMachine.CallFailure) -> String {
        failure.trapped ? "; \(recover(after: failure))" : ""
    }

    /// Rebuilds the instance after a trap (``SupervisedRecovery``); says what became of the state.
    private func recover(after failure: WasmMachine.CallFailure) -> String {
        guard failure.trapped else { return "the state is unchanged" }
        let (module, plugin, log, budget) = (self.module, self.plugin, self.log, effectBudget)
        // A replayed action's log lines were printed the first time.
        let replaying = Atomic<Bool>(false)
        // The memory the trapped instance held goes to the first one made in its place: a
        // rebuild must not find the host's total taken by others meanwhile.
        var credit = machine?.memoryCap.surrender() ?? 0
        let (fresh, words) = recovery.recover(
            rebuiltWords: "the instance was rebuilt with the state as it was before",
            start: { () throws(PluginLoadError) in
                defer { credit = 0 }
                return try Self.makeMachine(module: module, plugin: plugin, log: { line in if !replaying.load(ordering: .relaxed) { log(line) } },
                                            budget: budget, credit: credit)
            },
            restore: { (machine: WasmMachine, bytes) throws(PluginCallError.Reason) in
                do throws(WasmMachine.CallFailure) { try machine.restore(bytes) } catch { throw .restoreRefused(error.message) }
            },
            replay: { (machine: WasmMachine, action) throws(PluginCallError.Reason) in
                replaying.store(true, ordering: .relaxed)
                defer { replaying.store(false, ordering: .relaxed) }
                let outcome: PluginInstance.Outcome
                do throws(WasmMachine.CallFailure) { outcome = try machine.perform(action) } catch { throw .refused(action: action.description, message: error.message) }
                if case let .failure(reason) = outcome { throw reason }
            }
        )
        fresh?.memoryCap.trim()
        machine = fresh
        return words
    }
}

extension PluginCallError.Reason {
    /// This failure of a call into `machine`, or, when the host's total refused the machine
    /// memory during the call, ``wasmMemoryTotalReached(limit:size:failure:)`` with it.
    fileprivate func refusingMemory(_ machine: WasmMachine) -> Self {
        guard let size = machine.memoryCap.refusedSize else { return self }
        return .wasmMemoryTotalReached(limit: machine.memoryCap.total.limit, size: size, failure: self)
    }
}
