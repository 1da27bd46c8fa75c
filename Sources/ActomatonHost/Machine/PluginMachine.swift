import ActomatonPluginContract
import ActomatonCore
import ActomatonEffect
import Synchronization

/// An action of a ``PluginMachine``'s own effects: a plugin action, where it came from, and
/// how many `next_action` requests deep it is. The machine's effects send these back.
public struct PluginMachineAction: Sendable {
    let action: PluginAction
    let origin: PluginTransition.Origin
    let depth: Int
    /// The journaled timer that sent it, if any.
    var timer: FiredTimer? = nil
    /// What to journal with it, for an input action.
    var receipt: JournalReceiptRequest? = nil
}

/// A journaled timer whose action is being delivered.
struct FiredTimer: Sendable {
    let key: Int64
    let repeating: Bool
}

/// A plugin running on the async layer's `EffectQueueManager`, on an actor of its own: each
/// action goes to the plugin's ``PluginRuntime`` (its libffi call, its worker, or its
/// WebAssembly sandbox), and the effects it requests become real `Effect`s (IDs, queues,
/// cancellation, timers sleeping on the machine's clock).
///
/// The decisions are a pure value (`PluginMachineStateMachine`); the actor carries them out.
/// A machine whose runtime blocks (a worker process) runs on a thread of its own, so a hung
/// plugin never holds a thread of the concurrency pool.
///
/// ```swift
/// let machine = try PluginMachine(plugin: plugin, clock: clock)
/// let transition = try await machine.send("add", [.int(5)])
/// #expect(transition.sequence == 1)
/// #expect(try await machine.describe() == #"{"count":5}"#)
/// ```
public actor PluginMachine: EffectQueueHost {
    /// Told about each transition the machine makes on its own — the actions its delayed and
    /// repeating effects send, and the next actions those feed back — on the machine's actor,
    /// right after the transition (before it is acknowledged: wait on its
    /// ``PluginTransition/acknowledgement`` to act only on durable ones). Keep it short.
    /// Transitions of ``send(_:)-(PluginAction)`` and ``submit(_:receipt:)`` are returned to their caller instead,
    /// and handed to the observer as well only when it was made with `observesSends`.
    public typealias Observer = @Sendable (PluginTransition) -> Void

    var runtime: any PluginRuntime
    var decisions: PluginMachineStateMachine
    var effects: EffectQueueManager<PluginMachineAction>
    /// Where the actor's jobs run: a thread of its own when the runtime blocks.
    private nonisolated let executor: MachineExecutor
    /// The plugin's name; a reload must keep it.
    public nonisolated let name: String
    private nonisolated let currentPlugin: Mutex<Plugin>
    var pluginVersion: String
    private let log: (@Sendable (String) -> Void)?
    /// How reloads load a replaced file.
    private let isolation: PluginIsolation
    private let loadOptions: Plugin.LoadOptions
    private let describesState: Bool
    private let observer: Observer?
    private let observesSends: Bool
    /// How many transitions the machine made, failed ones included (``PluginTransition/ordinal``).
    private var transitionsMade: UInt64 = 0
    /// The effects running or waiting, against the machine's limit.
    public nonisolated let effectBudget: EffectBudget
    /// Where accepted actions, snapshots and timers are journaled, if anywhere.
    public nonisolated let journal: PluginJournal?
    /// The name the machine's journal records are kept under: the plugin's, or the one it was made with.
    public nonisolated let journalName: String
    let clock: any Clock<Duration>

    /// Creates a state of `plugin`, in this process, and a machine for it.
    ///
    /// - Parameters:
    ///   - plugin: The loaded plugin.
    ///   - clock: What delayed and repeating actions sleep on; tests pass a test clock.
    ///   - describesState: Whether transitions carry the state's description.
    ///   - observer: Told about the transitions the machine makes on its own (see ``Observer``).
    ///   - observesSends: Whether `observer` is also told about the transitions of sends.
    ///   - log: Where the plugin's `host->log` lines go (standard error by default).
    ///   - maxEffects: How many delayed and repeating actions the machine may have running or
    ///     waiting; a request past it fails its action.
    ///   - effectTotal: What its delayed and repeating actions count against too, shared with
    ///     other machines (a service's `--max-effects-total`); `nil` for nothing more.
    ///   - journal: Where accepted actions, snapshots and timers are journaled; none when `nil`.
    ///   - journalName: The name its records are kept and recovered under (`counter/room-1`
    ///     for one of many machines of a plugin in one journal); the plugin's name when `nil`.
    public init(
        plugin: Plugin,
        clock: some Clock<Duration> = ContinuousClock(),
        describesState: Bool = false,
        observer: Observer? = nil,
        observesSends: Bool = false,
        log: (@Sendable (String) -> Void)? = nil,
        maxEffects: Int = PluginLimits.defaultMaxEffects,
        effectTotal: EffectBudget? = nil,
        journal: PluginJournal? = nil,
        journalName: String? = nil
    ) throws(PluginLoadError) {
        let budget = EffectBudget(limit: maxEffects, total: effectTotal)
        let runtime = try PluginRuntimes.make(plugin: plugin, log: log, effectBudget: budget)
        self.init(runtime: runtime, budget: budget, isolation: .none, loadOptions: .init(), clock: clock, describesState: describesState,
                  observer: observer, observesSends: observesSends, log: log, journal: journal, journalName: journalName)
    }

    /// Loads the plugin file at `path` where `isolation` says — a shared library in a worker
    /// process under ``PluginIsolation/process(_:)``; a `.wasm` module always in the sandbox —
    /// and makes a machine for its state.
    ///
    /// - Parameters:
    ///   - path: The plugin file.
    ///   - isolation: Where a shared library runs.
    ///   - loadOptions: How the file is vetted and loaded.
    ///   - clock: What delayed and repeating actions sleep on; tests pass a test clock.
    ///   - describesState: Whether transitions carry the state's description.
    ///   - observer: Told about the transitions the machine makes on its own (see ``Observer``).
    ///   - observesSends: Whether `observer` is also told about the transitions of sends.
    ///   - log: Where the plugin's `host->log` lines go (standard error by default).
    ///   - maxEffects: How many delayed and repeating actions the machine may have running or
    ///     waiting.
    ///   - effectTotal: What its delayed and repeating actions count against too, shared with
    ///     other machines (a service's `--max-effects-total`); `nil` for nothing more.
    ///   - journal: Where accepted actions, snapshots and timers are journaled; none when `nil`.
    ///   - journalName: The name its records are kept and recovered under (`counter/room-1`
    ///     for one of many machines of a plugin in one journal); the plugin's name when `nil`.
    public init(
        pluginAt path: String,
        isolation: PluginIsolation,
        loadOptions: Plugin.LoadOptions = .init(),
        clock: some Clock<Duration> = ContinuousClock(),
        describesState: Bool = false,
        observer: Observer? = nil,
        observesSends: Bool = false,
        log: (@Sendable (String) -> Void)? = nil,
        maxEffects: Int = PluginLimits.defaultMaxEffects,
        effectTotal: EffectBudget? = nil,
        journal: PluginJournal? = nil,
        journalName: String? = nil
    ) throws(PluginLoadError) {
        let budget = EffectBudget(limit: maxEffects, total: effectTotal)
        let runtime = try PluginRuntimes.make(path: path, isolation: isolation, loadOptions: loadOptions, log: log, effectBudget: budget)
        self.init(runtime: runtime, budget: budget, isolation: isolation, loadOptions: loadOptions, clock: clock,
                  describesState: describesState, observer: observer, observesSends: observesSends, log: log, journal: journal, journalName: journalName)
    }

    /// Starts a worker process that loads the plugin at `path`, and a machine for its state;
    /// see ``PluginIsolation/process(_:)``. A `.wasm` module needs no worker: it runs in the
    /// sandbox, in this process.
    ///
    /// - Parameters:
    ///   - path: The plugin file.
    ///   - loadOptions: How the file is vetted and loaded.
    ///   - workerOptions: How the worker is started, limited and supervised.
    ///   - clock: What delayed and repeating actions sleep on; tests pass a test clock.
    ///   - describesState: Whether transitions carry the state's description.
    ///   - observer: Told about the transitions the machine makes on its own (see ``Observer``).
    ///   - observesSends: Whether `observer` is also told about the transitions of sends.
    ///   - log: Where the plugin's `host->log` lines go (standard error by default).
    ///   - maxEffects: How many delayed and repeating actions the machine may have running or
    ///     waiting.
    ///   - effectTotal: What its delayed and repeating actions count against too, shared with
    ///     other machines (a service's `--max-effects-total`); `nil` for nothing more.
    ///   - journal: Where accepted actions, snapshots and timers are journaled; none when `nil`.
    ///   - journalName: The name its records are kept and recovered under (`counter/room-1`
    ///     for one of many machines of a plugin in one journal); the plugin's name when `nil`.
    public init(
        isolatedPluginAt path: String,
        loadOptions: Plugin.LoadOptions = .init(),
        workerOptions: WorkerOptions,
        clock: some Clock<Duration> = ContinuousClock(),
        describesState: Bool = false,
        observer: Observer? = nil,
        observesSends: Bool = false,
        log: (@Sendable (String) -> Void)? = nil,
        maxEffects: Int = PluginLimits.defaultMaxEffects,
        effectTotal: EffectBudget? = nil,
        journal: PluginJournal? = nil,
        journalName: String? = nil
    ) throws(PluginLoadError) {
        try self.init(pluginAt: path, isolation: .process(workerOptions), loadOptions: loadOptions, clock: clock,
                      describesState: describesState, observer: observer, observesSends: observesSends, log: log,
                      maxEffects: maxEffects, effectTotal: effectTotal, journal: journal, journalName: journalName)
    }

    private init(
        runtime: any PluginRuntime, budget: EffectBudget, isolation: PluginIsolation, loadOptions: Plugin.LoadOptions,
        clock: some Clock<Duration>, describesState: Bool, observer: Observer?, observesSends: Bool,
        log: (@Sendable (String) -> Void)?, journal: PluginJournal?, journalName: String?
    ) {
        self.runtime = runtime
        name = runtime.plugin.name
        self.journalName = journalName ?? runtime.plugin.name
        pluginVersion = runtime.plugin.manifest.version
        self.journal = journal
        self.clock = clock
        currentPlugin = Mutex(runtime.plugin)
        self.log = log
        self.isolation = isolation
        self.loadOptions = loadOptions
        self.describesState = describesState
        self.observer = observer
        self.observesSends = observesSends
        effectBudget = budget
        executor = MachineExecutor(for: runtime)
        decisions = PluginMachineStateMachine(snapshotInterval: journal?.options.snapshotInterval)
        let effects = EffectQueueManager<PluginMachineAction>(clock: clock, onFailure: Self.reportEffectFailure)
        self.effects = effects
        effects.connect(to: self)
        attach(to: runtime)
    }

    /// Lets an isolated runtime's worker be read between calls, on the machine's thread, and
    /// answer each action with the description the transition carries.
    private nonisolated func attach(to runtime: any PluginRuntime) {
        guard case let .thread(thread) = executor, let isolated = runtime as? IsolatedInstance else { return }
        isolated.prefetchesDescriptions = describesState
        isolated.idleWatcher = { thread.watchWhileIdle($0) }
    }

    deinit {
        effects.shutDown()
        if case let .thread(thread) = executor { thread.shutDown() }
    }

    /// Made from each journaled transition (its acknowledgement aside), and journaled with it
    /// in the same commit: a service keeps its watchers' messages so that a watcher can resume
    /// from the journal (``PluginJournal/journaledMessages(of:after:limit:)``).
    var journalMessage: (@Sendable (PluginTransition) -> String)?
    /// See ``writeJournal(atEpoch:)``.
    var journalEpoch: Int64?

    /// The thread an isolated or sandboxed machine runs on, as a task executor; `nil` for a
    /// machine on the concurrency pool (a shared library in this process).
    ///
    /// A task that sends many actions in a row to one such machine can run beside it:
    ///
    /// ```swift
    /// if let executor = machine.taskExecutor {
    ///     await withTaskExecutorPreference(executor) { await sendAll() }
    /// }
    /// ```
    ///
    /// Each send then hops between the task and the machine on one thread, without waking
    /// another: the README's host benchmark gives both round trips. The task shares the thread
    /// with the machine (and a sandboxed machine's with others of its plugin), so it must not
    /// block (read standard input, wait on a lock) meanwhile: that would hold the machine up too.
    public nonisolated var taskExecutor: (any TaskExecutor)? {
        switch executor {
        case let .thread(thread), let .sandbox(thread): thread
        case .pool: nil
        }
    }

    /// The executor the actor's jobs run on.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        switch executor {
        case let .thread(thread), let .sandbox(thread): thread.asUnownedSerialExecutor()
        case let .pool(donor): donor.unownedExecutor
        }
    }

    /// The worker process's ID when the plugin runs isolated and its worker is up.
    public var workerProcessID: Int32? { runtime.workerProcessID }

    /// The loaded plugin the machine runs now.
    public nonisolated var plugin: Plugin { currentPlugin.withLock { $0 } }

    // MARK: Sending

    /// Performs `action` and returns its transition: the effects it requested, the IDs it
    /// cancelled, its number, the state's description (with `describesState`); or throws why
    /// it failed. With a journal, returns once the action is acknowledged
    /// (``JournalSyncPolicy``), and throws ``PluginCallError/Reason/notAcknowledged(action:journal:)``
    /// if it never will be.
    @discardableResult
    public func send(_ action: PluginAction) async throws(PluginCallError) -> PluginTransition {
        let submission = try submit(action)
        // Awaiting a nonisolated function leaves the actor and comes back: only when needed.
        if !submission.isAcknowledged { try await submission.acknowledged() }
        return submission.transition
    }

    /// Checks `name` and `arguments` against the plugin's vocabulary, then performs the action;
    /// see ``send(_:)-(PluginAction)``.
    @discardableResult
    public func send(_ name: String, _ arguments: [PluginValue] = []) async throws(PluginCallError) -> PluginTransition {
        try await send(try plugin.action(name, arguments))
    }

    /// Performs `action` and returns at once, without waiting for its acknowledgement: its
    /// transition and those of the next actions it fed back, and
    /// ``PluginSubmission/acknowledged()`` to wait for them. Throws why it failed (a failed
    /// action is not journaled). A caller that sends a stream of actions submits them one
    /// after another and waits for the last: the journal commits many at a time
    /// (``JournalSyncPolicy``), and acknowledges them in order.
    ///
    /// - Parameters:
    ///   - action: The action.
    ///   - receipt: With a journal, what to keep with the action in the same commit: the
    ///     answer a retry of the same request gets after a restart
    ///     (``PluginJournal/receipts(keptAfter:limit:answerBytes:)``). Ignored without a journal.
    public func submit(_ action: PluginAction, receipt: JournalReceiptRequest? = nil) throws(PluginCallError) -> PluginSubmission {
        // Nothing waits for the effects' tasks: ``waitUntilIdle()`` waits for none to be left.
        effects.sendOptions = .init(returnsTask: false)
        var transitions = Transitions()
        run(PluginMachineAction(action: action, origin: .input, depth: 0, receipt: receipt), into: &transitions)
        _ = effects.finishSend()
        guard let transition = transitions.first else {
            // `PluginMachineStateMachine.admit` never drops an input action; were it to, the
            // caller gets an error, not a trap.
            throw PluginCallError(.refused(action: action.description, message: "the machine did not run it"), plugin: name)
        }
        if observesSends, let observer { transitions.forEach(observer) }
        if case let .failure(error) = transition.outcome { throw error }
        return PluginSubmission(transition: transition, feedback: transitions.rest)
    }

    /// Sends an action one of the machine's effects produced (`EffectQueueHost`); its
    /// transitions go to the observer.
    public func send(effectAction action: PluginMachineAction, tracksFeedbacks: Bool) -> Task<Void, Error>? {
        effects.sendOptions = .init(tracksFeedbacks: tracksFeedbacks, returnsTask: false)
        var transitions = Transitions()
        run(action, into: &transitions)
        if let observer { transitions.forEach(observer) }
        return effects.finishSend()
    }

    /// Runs `first` and the next actions it feeds back, depth-first, collecting their
    /// transitions.
    private func run(_ first: PluginMachineAction, into transitions: inout Transitions) {
        var next: PluginMachineAction? = first
        while let action = next {
            next = effects.handle(step(action, into: &transitions))
        }
    }

    /// One action: what the decisions say, carried out. Returns the effects to start.
    private func step(_ input: PluginMachineAction, into transitions: inout Transitions) -> Effect<PluginMachineAction> {
        // The total's places taken for effects the action did not get back (its effects are made by now).
        defer { effectBudget.settle() }
        var outcome: Result<[PluginEffectRequest], PluginCallError>
        var ranThePlugin = false
        switch decisions.admit(origin: input.origin, depth: input.depth, action: input.action) {
        case .perform:
            outcome = runtime.perform(input.action).mapError { PluginCallError($0, plugin: name) }
            ranThePlugin = true
        case let .refuse(reason):
            outcome = .failure(PluginCallError(reason, plugin: name))
        case .drop:
            return .empty
        }
        // Its timers' keys, taken before it counts as performed: with none left it fails. One
        // per request (none without a journal or a timer).
        var keys: [Int64?] = []
        if let journal, case let .success(requests) = outcome {
            let timerCount = requests.count { if case .delayed = $0 { true } else if case .repeating = $0 { true } else { false } }
            if timerCount > 0 {
                switch journal.makeTimerKeys(timerCount) {
                case var .success(next):
                    keys = requests.map { request in
                        switch request {
                        case .delayed, .repeating:
                            defer { next += 1 }
                            return next
                        case .cancel, .next:
                            return nil
                        }
                    }
                case let .failure(usedUp):
                    outcome = .failure(PluginCallError(.timerKeysUsedUp(action: input.action.description, lastKey: usedUp.lastKey), plugin: name))
                }
            }
        }
        let step = decisions.performed(succeeded: (try? outcome.get()) != nil)
        transitionsMade += 1
        let ordinal = transitionsMade
        let requests = (try? outcome.get()) ?? []
        // The IDs a cancel finds running, or started earlier by this action.
        var cancelled: [String] = []
        var startedIDs: Set<String> = []
        for request in requests {
            switch request {
            case let .cancel(id):
                if startedIDs.contains(id) || effects.hasEffect(withID: PluginEffectID(name: id)) { cancelled.append(id) }
            case let .delayed(_, _, options), let .repeating(_, _, options):
                if let id = options.id { startedIDs.insert(id) }
            case .next:
                break
            }
        }
        let described: Result<String, PluginCallError>? = describesState
            ? Result { () throws(PluginCallError) in
                do throws(PluginCallError.Reason) { return try runtime.describe() } catch { throw PluginCallError(error, plugin: name) }
            }
            : nil
        // Right after the description, in the same turn: the same state.
        let active = describesState ? activeNodesResult() : nil
        var acknowledgement = PluginAcknowledgement.immediate(action: input.action, plugin: name)
        if step.journal, let journal {
            var receipt: JournaledReceipt?
            var message: (@Sendable () -> String)?
            if input.receipt != nil || journalMessage != nil, case .success = outcome {
                let made = PluginTransition(plugin: name, address: journalName, sequence: step.sequence, action: input.action, origin: input.origin,
                                            outcome: outcome, cancelled: cancelled, state: described, activeNodes: active,
                                            acknowledgement: acknowledgement, ordinal: ordinal)
                if let request = input.receipt {
                    receipt = JournaledReceipt(plugin: journalName, key: request.key, fingerprint: request.fingerprint,
                                               answer: request.answer(made), expires: request.expires)
                }
                // Made on the journal's writer thread, while the machine goes on.
                if let journalMessage { message = { journalMessage(made) } }
            }
            let ticket = journal.append(epoch: journalEpoch, journalRecord(of: input, requests: requests, keys: keys, receipt: receipt,
                                                      message: message))
            acknowledgement = PluginAcknowledgement(journal: journal, ticket: ticket, action: input.action, plugin: name)
            // Also when the runtime says a replay past this state could take another path.
            if step.snapshot || runtime.wantsSnapshot {
                do throws(PluginCallError.Reason) {
                    let bytes = try runtime.snapshot()
                    let snapshotTicket = journalSnapshot(bytes, into: journal)
                    acknowledgement = PluginAcknowledgement(journal: journal, ticket: snapshotTicket, action: input.action, plugin: name)
                } catch {
                    decisions.snapshotFailed()
                    HostErrorLines.report("error: plugin \(journalName): the journal's snapshot after '\(PluginLimits.echo("\(input.action)"))' failed: \(error); "
                                         + "the journal keeps the actions since the last one")
                }
            }
        }
        if ranThePlugin, case let .failure(error) = outcome, error.reason.ranThePlugin {
            keepStateAfterRefusal(of: input.action)
        }
        transitions.append(PluginTransition(plugin: name, address: journalName, sequence: step.sequence, action: input.action, origin: input.origin,
                                            outcome: outcome, cancelled: cancelled, state: described, activeNodes: active,
                                            acknowledgement: acknowledgement, ordinal: ordinal))
        guard !requests.isEmpty else { return .empty }
        let (clock, budget, journal, depth, epoch) = (self.clock, effectBudget, self.journal, input.depth, journalEpoch)
        return Effect.combine(requests.enumerated().map { index, request in
            let key = index < keys.count ? keys[index] : nil
            return request.effect(clock: clock, budget: budget, timer: key.map { JournalTimerToken(journal: journal!, key: $0, name: journalName, epoch: epoch) }) { action, request in
                // A next action goes one level deeper; a timed one starts a new chain.
                if case .next = request { return PluginMachineAction(action: action, origin: .next, depth: depth + 1) }
                return PluginMachineAction(action: action, origin: request.origin, depth: 0,
                                           timer: key.map { FiredTimer(key: $0, repeating: request.isRepeating) })
            }
        })
    }

    // MARK: State

    /// The plugin's snapshot of the state.
    public func snapshot() throws(PluginCallError) -> [UInt8] {
        do throws(PluginCallError.Reason) { return try runtime.snapshot() } catch { throw PluginCallError(error, plugin: name) }
    }

    /// After an action the plugin refused (or whose request the host refused), for a machine
    /// that journals or a runtime that rebuilds from snapshots: the plugin may have changed its
    /// state first (the contract forbids it for a refusal, allows it before a bad request), and
    /// the actions after it build on that state. A restart replays the journal, a rebuild the
    /// successful actions, and neither holds the refused one: so the state as it is now is
    /// snapshotted (and journaled), and a restart or a rebuild starts from it.
    private func keepStateAfterRefusal(of action: PluginAction) {
        let journals = decisions.journals ? journal : nil
        guard journals != nil || runtime.rebuildsFromSnapshots else { return }
        do throws(PluginCallError.Reason) {
            let bytes = try runtime.snapshot()
            if let journals { journalSnapshot(bytes, into: journals) }
        } catch {
            HostErrorLines.report("error: plugin \(journalName): the snapshot after the refused '\(PluginLimits.echo("\(action)"))' failed: \(error); "
                                 + "a restart or a rebuild may bring back the state from before it")
        }
    }

    /// The plugin's description of the state.
    public func describe() throws(PluginCallError) -> String {
        do throws(PluginCallError.Reason) { return try runtime.describe() } catch { throw PluginCallError(error, plugin: name) }
    }

    /// The names of the plugin's diagram nodes active in the state (its `active` function,
    /// ABI version 2), at most `ActiveNodes.maxCount`; `nil` when the plugin names none
    /// (`PluginManifest.namesActiveNodes`). The diagram itself is
    /// `plugin.manifest.diagram` (`PluginManifest.diagram`).
    public func activeNodes() throws(PluginCallError) -> [String]? {
        do throws(PluginCallError.Reason) { return try runtime.activeNodes() } catch { throw PluginCallError(error, plugin: name) }
    }

    /// The state as a transition shows it — its description and its active nodes, asked one
    /// right after the other in one turn of the machine — for a state reached otherwise: after
    /// ``recover()``, ``restore(_:)`` or a reload, or before the first action.
    public func describedState() -> PluginDescribedState {
        PluginDescribedState(
            description: Result { () throws(PluginCallError) in try describe() },
            activeNodes: activeNodesResult()
        )
    }

    /// ``activeNodes()`` as a transition carries it: `nil` when the plugin names none.
    private func activeNodesResult() -> Result<[String], PluginCallError>? {
        do throws(PluginCallError.Reason) {
            return try runtime.activeNodes().map { .success($0) }
        } catch {
            return .failure(PluginCallError(error, plugin: name))
        }
    }

    /// Replaces the state with one read from `snapshot`; the plugin may refuse it.
    public func restore(_ snapshot: [UInt8]) throws(PluginCallError) {
        do throws(PluginCallError.Reason) { try runtime.restore(snapshot) } catch { throw PluginCallError(error, plugin: name) }
    }

    // MARK: Reloading

    /// Swaps in a new load of the plugin, carrying the state over with snapshot / restore.
    ///
    /// Happens between two actions, on the machine's actor. Effects still running keep
    /// running; the actions they send are checked again against the new vocabulary. If the
    /// new plugin has another name, cannot create a state or refuses the snapshot, the
    /// machine keeps the old one, unchanged.
    public func reload(with newPlugin: Plugin) throws(PluginLoadError) {
        guard newPlugin.name == name else {
            throw PluginLoadError(.renamed(from: name, to: newPlugin.name), at: newPlugin.path)
        }
        let (log, budget) = (self.log, effectBudget)
        try swapRuntime(from: newPlugin.path) { () throws(PluginLoadError) in
            try PluginRuntimes.make(plugin: newPlugin, log: log, effectBudget: budget)
        }
    }

    /// Loads the plugin file at `path` again — in this process or in a new worker, as the
    /// machine runs it — and swaps it in with the state carried over; see ``reload(with:)``.
    public func reload(fromFile path: String) throws(PluginLoadError) {
        let (isolation, loadOptions, log, budget) = (self.isolation, self.loadOptions, self.log, effectBudget)
        try swapRuntime(from: path) { () throws(PluginLoadError) in
            try PluginRuntimes.make(path: path, isolation: isolation, loadOptions: loadOptions, log: log, effectBudget: budget)
        }
    }

    /// Snapshots the current runtime, restores the snapshot into the one `make` returns, and
    /// swaps it in; on any failure the current one goes on.
    private func swapRuntime(from path: String, _ make: () throws(PluginLoadError) -> any PluginRuntime) throws(PluginLoadError) {
        let snapshot: [UInt8]
        do throws(PluginCallError.Reason) { snapshot = try runtime.snapshot() } catch { throw PluginLoadError(.stateNotCarriedOver(error), at: path) }
        let replacement = try make()
        guard replacement.plugin.name == name else {
            throw PluginLoadError(.renamed(from: name, to: replacement.plugin.name), at: path)
        }
        // The actor's executor was chosen for the first runtime. A shared library may replace a
        // module on its sandbox thread; a module may not run on the pool.
        guard replacement.callsBlock == runtime.callsBlock else {
            throw PluginLoadError(.manifest(.invalid("the plugin cannot move between a worker process and this process on a reload")), at: path)
        }
        if replacement.callsRunLong, case .pool = executor {
            throw PluginLoadError(.manifest(.invalid("a .wasm module cannot replace a shared library loaded in this process on a reload "
                                                     + "(its calls must not run on the concurrency pool); restart the host to load it")), at: path)
        }
        do throws(PluginCallError.Reason) { try replacement.restore(snapshot) } catch { throw PluginLoadError(.stateNotCarriedOver(error), at: path) }
        runtime = replacement
        attach(to: replacement)
        pluginVersion = replacement.plugin.manifest.version
        currentPlugin.withLock { $0 = replacement.plugin }
        // The journal's next replay starts from a state the new version restored.
        if let journal {
            do throws(PluginCallError.Reason) {
                journalSnapshot(try replacement.snapshot(), into: journal)
            } catch {
                HostErrorLines.report("error: plugin \(journalName): the journal's snapshot after the reload failed: \(error); "
                                     + "a restart replays the actions since the last one into the new version")
            }
        }
    }

    // MARK: Effects

    /// Waits until no effect (delayed or repeating action) is running or waiting: every one
    /// started by ``send(_:)-(PluginAction)``, and every one those started in turn, has completed,
    /// and given its place in ``effectBudget`` back. A repeating action completes only when it is
    /// cancelled. Returns early when the waiting task is cancelled.
    public func waitUntilIdle() async {
        // An effect leaves the runtime as its work ends, and gives its place back as its task
        // lets go of it, just after.
        while effects.runningEffectCount > 0 || effectBudget.count > 0, !Task.isCancelled {
            await effects.waitUntilIdle()
            await effectBudget.waitUntilEmpty()
        }
    }

    /// How many effects (delayed and repeating actions) are running or waiting.
    public var runningEffectCount: Int { effects.runningEffectCount }

    /// The number of the last successful transition (0 before the first): after ``recover()``,
    /// the journal's number of the last action it brought back.
    public var sequence: UInt64 { decisions.sequence }

    /// The sequence ``recover()`` brought the machine to: its transitions replayed, before any
    /// timer it armed again fired (one that came due meanwhile fires at once, after it returns).
    public internal(set) var recoveredSequence: UInt64 = 0

    /// The delayed and repeating actions ``recover()`` armed again from the journal, each with
    /// what was left until it next fires when it was armed.
    public internal(set) var recoveredTimers: [(request: PluginEffectRequest, firesIn: Duration)] = []

    /// Closes the machine: cancels every delayed and repeating action running or waiting (a
    /// cancelled timer sends nothing more, and ``runningEffectCount`` is 0 when it returns),
    /// and starts no effect again.
    ///
    /// For a machine being let go — a deleted or passivated instance — whose timers must not
    /// outlive it: without it they are cancelled only when the last reference to the machine
    /// goes. Call it last: an action sent afterwards is still performed, but the effects it
    /// requests never start. Its plugin's state (and worker process, if any) is freed with
    /// the machine. Closing twice does nothing more.
    ///
    /// ```swift
    /// try await machine.send("start", [.int(1000)])
    /// await machine.close()
    /// #expect(await machine.runningEffectCount == 0)
    /// ```
    public func close() {
        effects.shutDown()
    }

    /// Frees what the plugin's state holds now rather than when the last reference to the
    /// machine goes — a `.wasm` instance's memory, which counts against the host's total
    /// (``WasmMemoryBudget``) — for a machine let go for good, after ``close()``: every call
    /// after it fails.
    public func releaseState() {
        runtime.release()
    }
}

extension PluginMachine {
    /// The async layer's failures that no caller sees. A next-action loop it cuts off was cut
    /// off and reported by the machine first (``PluginLimits/maxFeedbackDepth`` and
    /// ``PluginLimits/maxFeedbackSteps`` are below the layer's limits): the layer only drops
    /// the rest of the chain the machine dropped already, so it is not reported twice.
    @Sendable static func reportEffectFailure(_ failure: EffectFailure) {
        if case .feedbackLoopCutOff = failure { return }
        EffectFailure.writeToStandardError(failure)
    }
}

extension PluginEffectRequest {
    /// Whether it is a repeating action.
    var isRepeating: Bool {
        if case .repeating = self { true } else { false }
    }

    /// The origin of the actions this request sends.
    var origin: PluginTransition.Origin {
        switch self {
        case .next: .next
        case let .delayed(_, _, options): .delayed(id: options.id)
        case let .repeating(_, _, options): .repeating(id: options.id)
        case .cancel: .input
        }
    }
}

/// The transitions of one send: the first apart, so that a send without feedback allocates
/// nothing for them.
struct Transitions {
    private(set) var first: PluginTransition?
    private(set) var rest: [PluginTransition] = []

    mutating func append(_ transition: PluginTransition) {
        if first == nil { first = transition } else { rest.append(transition) }
    }

    func forEach(_ body: (PluginTransition) -> Void) {
        guard let first else { return }
        body(first)
        for transition in rest { body(transition) }
    }
}

/// Where a ``PluginMachine``'s jobs run.
enum MachineExecutor: Sendable {
    /// On a thread of its own: the runtime's calls block.
    case thread(ThreadExecutor)
    /// On one of its plugin's ``SandboxThreads``, shared with other machines of the plugin:
    /// the runtime's calls can run long.
    case sandbox(ThreadExecutor)
    /// On the concurrency pool, serialised like any actor's: the executor of an actor that
    /// does nothing else.
    case pool(PoolExecutorDonor)

    /// Where a machine over `runtime` runs. Without a thread to be had, on the pool: slower to
    /// recover from a hang, never wrong.
    init(for runtime: any PluginRuntime) {
        if runtime.callsBlock, let thread = try? ThreadExecutor() {
            self = .thread(thread)
        } else if runtime.callsRunLong, let thread = SandboxThreads.executor(for: runtime.plugin.name) {
            self = .sandbox(thread)
        } else {
            self = .pool(PoolExecutorDonor())
        }
    }
}

/// An actor whose only use is its default executor, which a ``PluginMachine`` on the
/// concurrency pool runs on (an actor with a custom executor cannot fall back to its own).
actor PoolExecutorDonor {}
