import ActomatonHost
import ActomatonPluginContract
import HostCommandLine
import Synchronization

// The one file that talks to `ActomatonHost`'s `PluginMachine`: when its API changes, this
// adapter changes and nothing else in the service does.

/// One transition of an instance, as the service reports it and watchers receive it.
public struct InstanceTransition: Sendable, Hashable {
    /// Where the action came from.
    public enum Origin: String, Sendable, Hashable {
        /// Sent by a client.
        case input
        /// Fed back by the action before it.
        case next
        /// Sent by a delayed action.
        case delayed
        /// Sent by a repeating action.
        case repeating
    }

    /// The instance's count of transitions, this one included (from 1).
    public var seq: UInt64
    /// The action's name.
    public var action: String
    /// The action as the command line writes it (`add 5`).
    public var actionText: String
    /// Where the action came from.
    public var origin: Origin
    /// The effect ID of the delayed or repeating action that sent it, if any.
    public var effectID: String?
    /// The plugin's description of the state after the transition; `nil` when it could not be had.
    public var state: String?
    /// The effects the action started, as the command line prints them (`after 1s: tick`).
    public var started: [String]
    /// The effect IDs the action cancelled.
    public var cancelled: [String]
    /// The plugin's diagram nodes active in the state after the transition; `nil` when the
    /// plugin names none, or they could not be had.
    public var active: [String]?

    /// The transition the machine reported, as the service numbers and describes it.
    init(_ transition: PluginTransition, seq: UInt64) {
        let (origin, effectID) = Self.origin(of: transition)
        self.init(transition, seq: seq, origin: origin, effectID: effectID)
    }

    /// Where a transition's action came from, and the effect ID that sent it.
    static func origin(of transition: PluginTransition) -> (Origin, String?) {
        switch transition.origin {
        case .input: (.input, nil)
        case .next: (.next, nil)
        case let .delayed(id): (.delayed, id)
        case let .repeating(id): (.repeating, id)
        }
    }

    /// The transition the machine reported, as the service numbers and describes it.
    init(_ transition: PluginTransition, seq: UInt64, origin: Origin, effectID: String?) {
        self.seq = seq
        action = transition.action.name
        actionText = transition.action.description
        self.origin = origin
        self.effectID = effectID
        state = if case let .success(text)? = transition.state { text } else { nil }
        // Each cut as a transition's line cuts it: a plugin's request may carry megabytes.
        started = transition.started.map { PluginLimits.echo($0.description) }
        cancelled = transition.cancelled
        active = if case let .success(names)? = transition.activeNodes { names } else { nil }
    }
}

/// A delayed or repeating action an instance has pending, as far as its transitions tell.
public struct PendingTimer: Sendable, Hashable {
    /// `delayed` or `repeating`.
    public var kind: String
    /// Its effect ID, if any.
    public var id: String?
    /// The effect as the command line prints it (`every 1s: tick`).
    public var text: String
    /// The action it sends.
    public var action: String
    /// The delay of a delayed action (for one armed again from the journal after a restart,
    /// what was left of it then); the period of a repeating one.
    public var interval: Duration
    /// When it was armed: the transition that started it.
    public var armed: ContinuousClock.Instant

    /// How long until it next fires, as of `now`: what is left of the delay (zero once due), or
    /// of the current period of a repeating action.
    public func dueIn(at now: ContinuousClock.Instant) -> Duration {
        let elapsed = now - armed
        guard interval > .zero else { return .zero }
        if kind == "delayed" { return max(.zero, interval - elapsed) }
        let periods = Int64(elapsed / interval)
        return interval * (periods + 1) - elapsed
    }
}

/// What ``InstanceMachine/status()`` reports.
public struct InstanceStatus: Sendable, Hashable {
    /// The count of transitions so far.
    public var seq: UInt64
    /// The plugin's description of the state after transition ``seq``.
    public var state: String?
    /// The pending delayed and repeating actions.
    public var timers: [PendingTimer]
    /// How many effects are running or waiting.
    public var effects: Int
    /// The plugin's diagram nodes active in the state; `nil` when the plugin names none.
    public var active: [String]? = nil
}

/// A passivated instance: what its machine left when it was freed, enough to make it again.
public struct PassivatedInstance: Sendable {
    /// The plugin's snapshot of the state.
    public var snapshot: [UInt8]
    /// The count of transitions so far: the restored instance's next one is `seq + 1`.
    public var seq: UInt64
    /// The plugin's description of the state.
    public var state: String?

    /// The bytes it holds (the snapshot and the description).
    public var byteCount: Int { snapshot.count + (state?.utf8.count ?? 0) }
}

/// A plugin file the service runs instances of: a machine type.
public struct PluginType: Sendable {
    /// The plugin as loaded (its manifest; the vocabulary actions are checked against).
    public let plugin: Plugin
    /// The file it was loaded from.
    public let path: String
    /// Where its instances run: in this process, or each in a worker process.
    public let isolation: PluginIsolation
    /// How the file is loaded again for a worker.
    public let loadOptions: Plugin.LoadOptions

    /// The plugin's name.
    public var name: String { plugin.name }

    /// Whether each instance runs in a worker process of its own: a shared library under
    /// process isolation (a `.wasm` module always runs in this process, in its sandbox).
    public var runsInWorkers: Bool { isolation != .none && !plugin.isWebAssembly }

    /// Loads the plugin at `path`. With process isolation a native plugin is loaded only in a
    /// worker (never mapped in the service's process): one started to read its manifest and stopped.
    public static func load(path: String, isolation: PluginIsolation, options: Plugin.LoadOptions) throws(PluginLoadError) -> PluginType {
        switch isolation {
        case .none:
            return PluginType(plugin: try Plugin.load(path: path, options: options), path: path, isolation: isolation, loadOptions: options)
        case let .process(worker):
            let probe = try PluginMachine(isolatedPluginAt: path, loadOptions: options, workerOptions: worker)
            return PluginType(plugin: probe.plugin, path: path, isolation: isolation, loadOptions: options)
        }
    }

    /// Checks an action's name and positional arguments against the plugin's vocabulary.
    public func action(_ name: String, _ arguments: [PluginValue]) throws(PluginCallError) -> PluginAction {
        try plugin.action(name, arguments)
    }

    /// Checks an action's name and arguments (positional, or named as in JSON objects) against
    /// the plugin's vocabulary, with the command line's messages.
    public func action(_ name: String, _ arguments: InputLine.Arguments) throws(PluginCallError) -> PluginAction {
        try plugin.action(name, try HostSession.positional(arguments, for: name, of: plugin))
    }
}

/// One instance's machine: a `PluginMachine` made from a ``PluginType``, its transitions
/// counted and described, its actions applied one at a time in the order they arrived.
public final class InstanceMachine: Sendable {
    /// The machine type.
    public let type: PluginType
    private let machine: PluginMachine
    private let observed: ObservedTransitions
    /// The turn each send, snapshot, restore, passivation and close takes (tests hold it).
    let turn: TurnLock
    /// Set in a turn by ``passivate(admitting:unlessBusy:)`` or ``close()``: the machine is freed (or forgotten);
    /// later sends are turned away.
    private let passivated: Atomic<Bool>

    /// Creates an instance in its initial state.
    ///
    /// - Parameters:
    ///   - type: The plugin.
    ///   - maxEffects: How many delayed and repeating actions it may have running or waiting.
    ///   - effectTotal: What they count against too, shared with the service's other instances.
    ///   - log: Where the plugin's log lines go.
    ///   - restoring: A passivated instance this one continues: ``start()`` restores its
    ///     snapshot, and the transitions are counted on from its `seq`. With a journal, only
    ///     whether it is given counts: ``start()`` then brings the instance back from the journal.
    ///   - journal: Where its actions, snapshots and timers are journaled, under `journalName`
    ///     (a new instance's name must hold no records: its recovery is not read). A restored
    ///     instance's `seq` goes on from the journal's number of its last action.
    ///   - journalName: The name its records are kept under (`plugin/key`).
    ///   - journalEpoch: In a cluster, the epoch at which this host claimed the instance: its
    ///     records carry it, and are refused once the host owns the name at another epoch.
    ///   - onFailure: Told, in one line, each failed action no request answers: one a delayed
    ///     or repeating effect sent (a request's own failure is thrown to it instead); and each
    ///     transition whose state or active nodes the plugin could not describe.
    ///   - onEffectAction: Told, for each action an effect sent (a delayed or repeating action,
    ///     or one fed back), whether it was applied.
    ///   - onRecoveryProblem: Told, by ``start()``, each line `PluginMachine.recover()`
    ///     returns for a journaled instance: what could not be brought back (a refused
    ///     snapshot, an action that cannot be replayed, a timer that cannot be armed). Without
    ///     one, each goes to standard error after `warning: `.
    ///   - onTransition: Told about every transition, timers' included, in order and never two
    ///     at once: keep it short. Without a journal it is told on the machine's actor; with
    ///     one, once the transition is durable, by the task that learns so (the request's own,
    ///     or one that waits for a timer's commit).
    public init(
        type: PluginType,
        maxEffects: Int = PluginLimits.defaultMaxEffects,
        effectTotal: EffectBudget? = nil,
        log: (@Sendable (String) -> Void)? = nil,
        restoring: PassivatedInstance? = nil,
        journal: PluginJournal? = nil,
        journalName: String? = nil,
        journalEpoch: Int64? = nil,
        onFailure: (@Sendable (String) -> Void)? = nil,
        onEffectAction: (@Sendable (_ applied: Bool) -> Void)? = nil,
        onRecoveryProblem: (@Sendable (String) -> Void)? = nil,
        onTransition: @escaping @Sendable (InstanceTransition) -> Void
    ) throws(PluginLoadError) {
        self.type = type
        self.journalEpoch = journalEpoch
        self.restoring = restoring
        self.journaled = journal != nil
        self.journalName = journalName
        self.onRecoveryProblem = onRecoveryProblem ?? { problem in printToStandardError("warning: \(problem)") }
        let observed = ObservedTransitions(onTransition: onTransition, seqBase: journal == nil ? restoring?.seq ?? 0 : 0,
                                           waitsForDurability: journal != nil, onFailure: onFailure, onEffectAction: onEffectAction)
        self.observed = observed
        switch type.isolation {
        case .none:
            machine = try PluginMachine(plugin: type.plugin, describesState: true, observer: observed.observe, observesSends: true,
                                        log: log, maxEffects: maxEffects, effectTotal: effectTotal, journal: journal, journalName: journalName)
        case .process:
            machine = try PluginMachine(pluginAt: type.path, isolation: type.isolation, loadOptions: type.loadOptions,
                                        describesState: true, observer: observed.observe, observesSends: true, log: log,
                                        maxEffects: maxEffects, effectTotal: effectTotal, journal: journal, journalName: journalName)
        }
        // Set once nothing can throw: with them set before the machine (as the properties'
        // default values), the optimizer of Swift 6.3.1 crashed on the path that throws
        // (`-c release`: "Found outside of lifetime use", an `Atomic`'s deinit).
        turn = TurnLock()
        passivated = Atomic(false)
    }

    private let restoring: PassivatedInstance?
    private let journaled: Bool
    private let journalName: String?
    private let journalEpoch: Int64?
    private let onRecoveryProblem: @Sendable (String) -> Void

    /// Reads the initial state's description — or restores the passivated instance's snapshot
    /// it was made with; call once after `init`, before any action. Throws when the plugin
    /// refuses the snapshot.
    public func start() async throws(PluginCallError) {
        if let journalEpoch { await machine.writeJournal(atEpoch: journalEpoch) }
        if journaled, let address = journalName.flatMap(InstanceRegistry.address(journaledAs:)) {
            // Each transition's watch message is journaled with it: a watcher resumes from the journal.
            await machine.journalMessages { ServiceJSON.watchMessage(InstanceTransition($0, seq: $0.sequence), address: address) }
        }
        if journaled, restoring != nil {
            do {
                for problem in try await machine.recover() { onRecoveryProblem(problem) }
            } catch {
                if case .stateLost = error.reason { throw PluginCallError(.restoreRefused(error.description), plugin: type.name) }
                // Answered 429: the registry keeps the instance passivated, the journal untouched.
                if case let .recoveryPostponed(_, cause) = error.reason, case let .wasmMemoryTotalReached(limit, size, needed, failure) = cause {
                    throw PluginCallError(.wasmMemoryTotalReached(limit: limit, size: size, needed: needed, failure: .restoreRefused(
                        "its journal's replay stopped (\(failure)) and waits, nothing skipped, for the next request")), plugin: type.name)
                }
                throw PluginCallError(.restoreRefused("its journal cannot be read: \(error)"), plugin: type.name)
            }
            // Told from `recoveredSequence`, not `sequence`: a timer due at once may have fired by
            // now, its transition not yet told. The state is the one at the sequence it was
            // described at, read in the same turn of the machine.
            let (described, describedAt) = await Self.describedState(of: machine)
            observed.setRecovered(seq: await machine.recoveredSequence, describedAt: describedAt, state: try? described.description.get(),
                                  active: try? described.activeNodes?.get(), timers: await machine.recoveredTimers)
        } else if let restoring {
            try await machine.restore(restoring.snapshot)
            let active = type.plugin.manifest.namesActiveNodes ? try? await machine.describedState().activeNodes?.get() : nil
            observed.setInitialState(restoring.state, active: active)
        } else {
            let described = await machine.describedState()
            observed.setInitialState(try? described.description.get(), active: try? described.activeNodes?.get())
        }
    }

    /// The machine's described state and the sequence it is the state of.
    private static func describedState(of machine: isolated PluginMachine) -> (PluginDescribedState, UInt64) {
        (machine.describedState(), machine.sequence)
    }

    /// Applies `action` in its turn and returns its transition, or `nil` when the instance was
    /// passivated before its turn came (nothing applied: send it to the restored instance), or
    /// the task was cancelled before it (nothing applied); throws why it failed (the state then
    /// is as it was, or as the error says).
    ///
    /// - Parameters:
    ///   - action: The action.
    ///   - receipt: With a journal, the answer to keep with the action in the same commit (an
    ///     idempotent request's response); ignored without one.
    ///   - onTurn: Called once the action has its turn on this instance (not when `nil` is
    ///     returned): the service then lets the next request to the instance in.
    public func send(_ action: PluginAction, receipt: JournalReceiptRequest? = nil,
                     onTurn: (@Sendable () -> Void)? = nil) async throws(PluginCallError) -> InstanceTransition? {
        guard await turn.acquireUnlessCancelled() else { return nil }
        defer { turn.release() }
        guard !passivated.load(ordering: .acquiring) else { return nil }
        onTurn?()
        observed.expectInput()
        // The transitions this wait settles are told by this task, once it ends.
        observed.beginSend()
        do throws(PluginCallError) {
            let submission = try await machine.submit(action, receipt: receipt)
            try await submission.acknowledged()
        } catch {
            observed.endSend()
            throw error
        }
        observed.endSend()
        guard let transition = observed.takeInput() else {
            // The observer sees an input action's transition before `submit` returns
            // (`observesSends`); were it not to, the request fails rather than the service.
            throw PluginCallError(.refused(action: action.description, message: "its transition was not observed"), plugin: type.name)
        }
        await observed.waitUntilDelivered(transition.seq)
        return transition
    }

    /// The seq of the last transition `onTransition` was told (it is told a transition only
    /// once durable, with a journal): where watchers that join now begin.
    var toldSeq: UInt64 { observed.toldSeq }

    /// The count of transitions made so far.
    var seq: UInt64 { observed.seq }

    /// The count of transitions, the state after the last one, and the pending timers.
    public func status() async -> InstanceStatus {
        let running = await machine.runningEffectCount
        return observed.status(running: running)
    }

    /// The plugin's snapshot of the state (taken in a turn of its own).
    public func snapshot() async throws(PluginCallError) -> [UInt8] {
        await turn.acquire()
        defer { turn.release() }
        return try await machine.snapshot()
    }

    /// Replaces the state with `bytes` (in a turn of its own); the plugin may refuse them.
    public func restore(_ bytes: [UInt8]) async throws(PluginCallError) {
        await turn.acquire()
        defer { turn.release() }
        try await machine.restore(bytes)
        let described = await machine.describedState()
        observed.setInitialState(try? described.description.get(), active: try? described.activeNodes?.get())
    }

    /// How many effects are running or waiting.
    public var effectCount: Int {
        get async { await machine.runningEffectCount }
    }

    /// Whether ``passivate(admitting:unlessBusy:)`` freed the machine.
    public var isPassivated: Bool { passivated.load(ordering: .acquiring) }

    /// What ``passivate(admitting:unlessBusy:)`` did.
    public enum Passivation: Sendable {
        /// Passivated: what to restore it from.
        case passivated(PassivatedInstance)
        /// Not passivated, and going on unchanged: it has effects pending, cannot be
        /// snapshotted, or was passivated already.
        case kept
        /// Not passivated, and going on unchanged: the bytes its snapshot and description would
        /// have kept in memory were not admitted.
        case refused(bytes: Int)
    }

    /// Passivates the instance if it is idle — no delayed or repeating action running or
    /// waiting — in a turn of its own, after the actions before it: snapshots the state (into
    /// the journal as well, with one), closes the machine, and turns later sends away
    /// (``send(_:receipt:onTurn:)`` returns `nil`).
    ///
    /// With a journal, what it returns holds no state: the instance comes back from the
    /// journal. Without one, it holds the snapshot and the state's description, and `admit` is
    /// asked first whether memory may keep their bytes: when it says no, the instance goes on.
    /// `unlessBusy`: when an action has the turn or waits for it, the instance goes on at once
    /// (`.kept`) instead of being passivated after it.
    public func passivate(admitting admit: @Sendable (Int) -> Bool = { _ in true }, unlessBusy: Bool = false) async -> Passivation {
        if unlessBusy {
            guard turn.acquireIfFree() else { return .kept }
        } else {
            await turn.acquire()
        }
        defer { turn.release() }
        // With a journal, the snapshot is journaled too: the instance comes back without a replay.
        guard !passivated.load(ordering: .acquiring), await machine.runningEffectCount == 0,
              let bytes = try? await machine.snapshotIntoJournal() else { return .kept }
        let status = observed.status(running: 0)
        let kept = journaled ? PassivatedInstance(snapshot: [], seq: status.seq, state: nil)
            : PassivatedInstance(snapshot: bytes, seq: status.seq, state: status.state)
        guard journaled || admit(kept.byteCount) else { return .refused(bytes: kept.byteCount) }
        passivated.store(true, ordering: .releasing)
        observed.detach()
        await machine.close()
        // Its memory goes now: a request still holding the instance would keep it otherwise.
        await machine.releaseState()
        return .passivated(kept)
    }

    /// Stops telling `onTransition` about transitions and closes the machine, cancelling its
    /// effects: the instance is being forgotten (deleted, or owned by another host now). It
    /// waits for the action that has its turn, if any, and its commit; actions waiting for
    /// their turn after it are not applied here: ``send(_:receipt:onTurn:)`` returns `nil`,
    /// and the service sends them to the instance it holds at that address then.
    ///
    /// An action applied after the close was journaled after the deletion's forgetting, under
    /// the same name: the instance made again at the address began with it (its seq 1 the
    /// deleted instance's last action, its state the deleted one's).
    public func close() async {
        await turn.acquire()
        defer { turn.release() }
        passivated.store(true, ordering: .releasing)
        observed.detach()
        await machine.close()
        await machine.releaseState()
    }
}

/// The transitions the machine's observer saw: the count, the last state, the pending timers
/// and the input action's transition until ``InstanceMachine/send(_:)`` takes it.
final class ObservedTransitions: Sendable {
    private struct State {
        var seq: UInt64 = 0
        /// The seq of the last transition `onTransition` was told (returned from).
        var told: UInt64 = 0
        var state: String?
        var active: [String]?
        var timers: [PendingTimer] = []
        var input: InstanceTransition?
        var onTransition: (@Sendable (InstanceTransition) -> Void)?
    }

    private let state: Mutex<State>
    /// Added to the machine's numbers: the count of a passivated instance this one continues.
    private let seqBase: UInt64
    /// With a journal: the transitions waiting for their commit before `onTransition` is told.
    private let durable: DurableDelivery?
    /// Told each failed action no request answers.
    private let onFailure: (@Sendable (String) -> Void)?
    /// Told whether each action an effect sent was applied.
    private let onEffectAction: (@Sendable (Bool) -> Void)?

    /// - Parameter waitsForDurability: Whether `onTransition` is told a transition only once
    ///   the journal acknowledged it (a watcher never sees one a fenced or failed commit lost).
    init(onTransition: @escaping @Sendable (InstanceTransition) -> Void, seqBase: UInt64, waitsForDurability: Bool = false,
         onFailure: (@Sendable (String) -> Void)? = nil, onEffectAction: (@Sendable (Bool) -> Void)? = nil) {
        state = Mutex(State(seq: seqBase, told: seqBase, onTransition: onTransition))
        self.onFailure = onFailure
        self.onEffectAction = onEffectAction
        self.seqBase = seqBase
        durable = waitsForDurability ? DurableDelivery() : nil
    }

    /// The listener now (`nil` once detached).
    private var listener: (@Sendable (InstanceTransition) -> Void)? {
        state.withLock { $0.onTransition }
    }

    func setInitialState(_ description: String?, active: [String]?) {
        state.withLock { state in
            state.state = description
            state.active = active
        }
    }

    /// Sets what the journal brought back: `seq` transitions replayed (told), and the state
    /// `description` as it was after `describedAt` of them (a timer armed again may have fired
    /// since the replay). A later transition already observed keeps its state: GET answered
    /// its seq with the state before it, right after a restart.
    func setRecovered(seq: UInt64, describedAt: UInt64, state description: String?, active: [String]?,
                      timers: [(request: PluginEffectRequest, firesIn: Duration)]) {
        let now = ContinuousClock.now
        state.withLock { state in
            state.seq = max(state.seq, seq)
            state.told = max(state.told, seq)
            if seqBase + describedAt >= state.seq {
                state.seq = seqBase + describedAt
                state.state = description
                state.active = active
            }
            // A timer armed again from the journal: a delayed one counts what was left of its
            // delay; a repeating one keeps its period, its next tick where the journal had it.
            // Put first: one that fired before this ran is trimmed first by `status` (never
            // more timers than effects running).
            let recovered = timers.compactMap { timer -> PendingTimer? in
                switch timer.request {
                case let .delayed(action, _, options):
                    PendingTimer(kind: "delayed", id: options.id, text: timer.request.description, action: action.name,
                                 interval: timer.firesIn, armed: now)
                case let .repeating(action, period, options):
                    PendingTimer(kind: "repeating", id: options.id, text: timer.request.description, action: action.name,
                                 interval: period, armed: now + timer.firesIn - period)
                default:
                    nil
                }
            }
            state.timers.insert(contentsOf: recovered, at: 0)
        }
    }

    func expectInput() {
        state.withLock { $0.input = nil }
    }

    /// See ``DurableDelivery/beginSend()``.
    func beginSend() {
        durable?.beginSend()
    }

    /// See ``DurableDelivery/endSend()``.
    func endSend() {
        durable?.endSend()
    }

    func takeInput() -> InstanceTransition? {
        state.withLock { $0.input.take() }
    }

    func detach() {
        state.withLock { $0.onTransition = nil }
        durable?.finish()
    }

    func status(running: Int) -> InstanceStatus {
        state.withLock { state in
            // Queue policies may drop a timer without a transition: never report more than run.
            if state.timers.count > running { state.timers.removeFirst(state.timers.count - running) }
            return InstanceStatus(seq: state.seq, state: state.state, timers: state.timers, effects: running, active: state.active)
        }
    }

    @Sendable func observe(_ transition: PluginTransition) {
        guard case let .success(requests) = transition.outcome else {
            // An action that failed after changing the state (the host kept the change): the
            // state read now is the changed one, under the same seq (no transition was made).
            if case let .failure(error) = transition.outcome, error.reason.mayHaveChangedState, case let .success(text)? = transition.state {
                state.withLock { state in
                    state.state = text
                    if case let .success(nodes)? = transition.activeNodes { state.active = nodes }
                }
            }
            if case let .failure(error) = transition.outcome, transition.origin != .input {
                onEffectAction?(false)
                let (origin, effectID) = InstanceTransition.origin(of: transition)
                let sender = origin == .next ? "fed back by the action before it"
                    : "sent by \(effectID.map { "the \(origin.rawValue) action \($0)" } ?? "a \(origin.rawValue) action")"
                onFailure?("\(error.reason) (\(sender))")
            }
            return
        }
        let (origin, effectID) = InstanceTransition.origin(of: transition)
        if transition.origin != .input { onEffectAction?(true) }
        // Applied, but its state (or its active nodes) could not be described: `state` is null
        // in its answer, and the reason is logged, not lost.
        for case let .failure(error)? in [transition.state.map { $0.map { _ in () } }, transition.activeNodes.map { $0.map { _ in () } }] {
            onFailure?("after '\(PluginLimits.echo(transition.action.description))': \(error.reason)")
        }
        let (made, listener): (InstanceTransition, (@Sendable (InstanceTransition) -> Void)?) = state.withLock { state in
            state.seq = seqBase + transition.sequence
            let made = InstanceTransition(transition, seq: state.seq, origin: origin, effectID: effectID)
            state.state = made.state
            state.active = made.active
            if origin == .delayed, let index = state.timers.firstIndex(where: {
                $0.kind == "delayed" && $0.id == effectID && $0.action == transition.action.name
            }) {
                state.timers.remove(at: index)
            }
            for request in requests {
                switch request {
                case let .delayed(action, delay, options):
                    state.timers.append(PendingTimer(kind: "delayed", id: options.id, text: request.description, action: action.name,
                                                     interval: delay, armed: .now))
                case let .repeating(action, period, options):
                    state.timers.append(PendingTimer(kind: "repeating", id: options.id, text: request.description, action: action.name,
                                                     interval: period, armed: .now))
                case let .cancel(id):
                    state.timers.removeAll { $0.id == id }
                case .next:
                    break
                }
            }
            if origin == .input { state.input = made }
            return (made, state.onTransition)
        }
        if let durable {
            let acknowledgement = transition.acknowledgement.isImmediate ? nil : transition.acknowledgement
            durable.deliver(made, once: acknowledgement) { [weak self] made in
                self?.listener?(made)
                self?.markTold(made.seq)
            }
        } else {
            listener?(made)
            markTold(made.seq)
        }
    }

    private func markTold(_ seq: UInt64) {
        state.withLock { $0.told = max($0.told, seq) }
    }

    /// The seq of the last transition the listener was told and returned from: a watcher set
    /// that begins there gets every later one from the listener, none twice.
    var toldSeq: UInt64 {
        state.withLock { $0.told }
    }

    /// The count of transitions seen.
    var seq: UInt64 {
        state.withLock { $0.seq }
    }

    /// Returns once the listener was told the transition numbered `seq` (or it was refused):
    /// a client answered with a seq finds its watchers past it.
    func waitUntilDelivered(_ seq: UInt64) async {
        await durable?.waitUntilDelivered(seq)
    }
}
