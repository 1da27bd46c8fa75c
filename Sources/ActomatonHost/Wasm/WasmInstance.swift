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

    /// Whether a call that succeeded although the host's total refused the module memory fails
    /// all the same (``PluginCallError/Reason/wasmMemoryTotalReached(limit:size:needed:failure:)``):
    /// set while a journal is replayed, which must bring back the state the actions made, not
    /// one a module made do without the memory. Confined like the instance.
    var strictMemory = false
    /// Whether the last action succeeded although the host's total refused the module memory:
    /// a replay given that memory could take another path, so it is snapshotted at once, here
    /// for a rebuild and by a journaling machine for a restart.
    private(set) var wantsSnapshot = false

    /// Sets ``strictMemory`` for a journal's replay.
    func setReplaying(_ replaying: Bool) {
        strictMemory = replaying
    }

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
                                    budget: EffectBudget, credit: Int = 0, forcing: Bool = false) throws(PluginLoadError) -> WasmMachine {
        let machine = try WasmMachine(module: module, path: plugin.path, plugin: plugin, credit: credit, forcing: forcing)
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
        machine.memoryCap.refused = nil
        wantsSnapshot = false
        do {
            let outcome = try machine.perform(action)
            if case let .failure(reason) = outcome { return .failure(refusingMemory(reason, machine)) }
            if strictMemory, machine.memoryCap.refused != nil {
                return .failure(refusingMemory(.refused(action: action.description, message: Self.wentOnWithoutMemory), machine))
            }
            wantsSnapshot = machine.memoryCap.refused != nil
            if case .success = outcome, recovery.completed(action) || wantsSnapshot {
                do { _ = try snapshot() } catch {
                    // Kept for a replay; the host's own finding, not the plugin's log line.
                    let kept = recovery.snapshotFailed()
                    if recovery.stopped != nil { self.machine = nil }
                    HostErrorLines.report(SupervisedRecovery.snapshotFailureLine(plugin: plugin.name, after: action, error: error, kept: kept))
                }
            }
            return outcome
        } catch {
            let reason = PluginCallError.Reason.sandboxTrapped(call: "'\(action)'", cause: error.message, recovery: recover(after: error))
            return .failure(refusingMemory(reason, machine))
        }
    }

    func snapshot() throws(PluginCallError.Reason) -> [UInt8] {
        guard let machine else { throw recovery.stopped ?? .pluginStopped("it is stopped") }
        machine.memoryCap.refused = nil
        do {
            let bytes = try machine.snapshot()
            recovery.stateIs(bytes)
            return bytes
        } catch {
            throw refusingMemory(.snapshotFailed("\(error.message)\(words(error))"), machine)
        }
    }

    func restore(_ bytes: [UInt8]) throws(PluginCallError.Reason) {
        guard let machine else { throw recovery.stopped ?? .pluginStopped("it is stopped") }
        machine.memoryCap.refused = nil
        do {
            try machine.restore(bytes)
        } catch {
            throw refusingMemory(.restoreRefused("\(error.message)\(words(error))"), machine)
        }
        if strictMemory, machine.memoryCap.refused != nil { throw refusingMemory(.restoreRefused(Self.wentOnWithoutMemory), machine) }
        recovery.stateIs(bytes)
    }

    func describe() throws(PluginCallError.Reason) -> String {
        guard let machine else { throw recovery.stopped ?? .pluginStopped("it is stopped") }
        machine.memoryCap.refused = nil
        do {
            return try machine.describe()
        } catch {
            throw refusingMemory(.describeFailed("\(error.message)\(words(error))"), machine)
        }
    }

    func activeNodes() throws(PluginCallError.Reason) -> [String]? {
        guard let machine else { throw recovery.stopped ?? .pluginStopped("it is stopped") }
        machine.memoryCap.refused = nil
        do {
            return try machine.activeNodes()
        } catch {
            throw refusingMemory(.describeFailed(ActiveNodes.failure("\(error.message)\(words(error))")), machine)
        }
    }

    /// Frees the module's instance, and the memory it holds of the host's total, now rather
    /// than when the last reference to the machine goes: the machine is closed.
    func release() {
        machine = nil
    }

    /// Why a call that succeeded without memory the host refused fails while ``strictMemory``.
    static let wentOnWithoutMemory = "the module went on without memory the host refused it, which a replay must not"

    /// `reason`, or, when the host's total refused `machine` memory during the call (and the
    /// plugin is not stopped: then the stop is what the caller must hear),
    /// ``PluginCallError/Reason/wasmMemoryTotalReached(limit:size:needed:failure:)`` with it.
    private func refusingMemory(_ reason: PluginCallError.Reason, _ machine: WasmMachine) -> PluginCallError.Reason {
        guard recovery.stopped == nil, let refused = machine.memoryCap.refused else { return reason }
        return .wasmMemoryTotalReached(limit: machine.memoryCap.total.limit, size: refused.size, needed: refused.needed, failure: reason)
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
        // A trap on memory the host's total refused is not the plugin failing: not counted
        // against its restarts, or clients retrying as told would get it stopped.
        let refusedByTotal = machine?.memoryCap.refused != nil
        // The memory the trapped instance held goes to the first one made in its place, which
        // takes what more it needs whatever the others hold: a rebuild replaces an instance,
        // and must not fail, or stop the plugin, for the others' memory.
        var credit = machine?.memoryCap.surrender() ?? 0
        let (fresh, words) = recovery.recover(
            countsRestart: !refusedByTotal,
            rebuiltWords: "the instance was rebuilt with the state as it was before",
            start: { () throws(PluginLoadError) in
                defer { credit = 0 }
                return try Self.makeMachine(module: module, plugin: plugin, log: { line in if !replaying.load(ordering: .relaxed) { log(line) } },
                                            budget: budget, credit: credit, forcing: true)
            },
            restore: { (machine: WasmMachine, bytes) throws(PluginCallError.Reason) in
                do throws(WasmMachine.CallFailure) { try machine.restore(bytes) } catch { throw .restoreRefused(error.message) }
            },
            replay: { (machine: WasmMachine, action) throws(PluginCallError.Reason) in
                replaying.store(true, ordering: .relaxed)
                defer { replaying.store(false, ordering: .relaxed) }
                let outcome: PluginInstance.Outcome
                // Its effects are dropped (the machine holds them still): nothing is refused for them.
                budget.beginReplay()
                defer { budget.endReplay() }
                do throws(WasmMachine.CallFailure) { outcome = try machine.perform(action) } catch { throw .refused(action: action.description, message: error.message) }
                if case let .failure(reason) = outcome { throw reason }
            }
        )
        // Stopped before a new instance was made: what the trapped one held goes back.
        if credit > 0 { module.limits.memoryTotal.release(credit) }
        fresh?.memoryCap.forcing = false
        fresh?.memoryCap.trim()
        machine = fresh
        return words
    }
}
