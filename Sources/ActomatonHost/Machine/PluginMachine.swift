import ActomatonPluginContract
import ActomatonCore
import ActomatonEffect
import Synchronization

/// One transition of a plugin's machine, as observers and the CLI see it.
public struct PluginTransition: Sendable {
    /// Where the action came from.
    public enum Origin: Sendable, Hashable {
        /// Sent by the host's user (an input line, an API call).
        case input
        /// Fed back by the previous action (`host->next_action`).
        case next
        /// Sent by a delayed action effect, with its effect ID if any.
        case delayed(id: String?)
        /// Sent by a repeating action effect, with its effect ID if any.
        case repeating(id: String?)
    }

    /// The plugin's name.
    public var plugin: String
    /// The action.
    public var action: PluginAction
    /// Where it came from.
    public var origin: Origin
    /// The effects it requested, or why it failed.
    public var outcome: Result<[PluginEffectRequest], PluginCallError>
    /// The plugin's description of the state after the transition, or why it could not be
    /// had; `nil` when the observer did not ask for it.
    public var state: Result<String, PluginCallError>?
}

/// An action ``PluginMachine/submit(_:)`` performed: the effects it requested, and a way to
/// wait for its acknowledgement.
public struct PluginSubmission: Sendable {
    /// The effects the action requested.
    public let effects: [PluginEffectRequest]
    let action: String
    let plugin: String
    let journal: PluginJournal?
    let ticket: UInt64

    /// Returns once the action counts as acknowledged (``JournalSyncPolicy``; at once without
    /// a journal), and once every action submitted before it to the same journal does; throws
    /// ``PluginCallError/Reason/notAcknowledged(action:journal:)`` if it never will be.
    public func acknowledged() async throws(PluginCallError) {
        guard let journal else { return }
        do {
            try await journal.waitUntilAcknowledged(ticket)
        } catch {
            throw PluginCallError(.notAcknowledged(action: action, journal: error), plugin: plugin)
        }
    }
}

/// An action of a ``PluginMachine``'s own machine: a plugin action, where it came from, and
/// how many `next_action` requests deep it is. The machine's effects send these back.
public struct PluginMachineAction: Sendable {
    let action: PluginAction
    let origin: PluginTransition.Origin
    let depth: Int
    /// The journaled timer that sent it, if any.
    var timer: FiredTimer? = nil
    /// Effects to start without performing `action` (timers armed again from the journal).
    var arming: Effect<PluginMachineAction>? = nil
}

/// The reducer of a ``PluginMachine``'s own machine: a core `MealyReducer` whose output is an
/// effect (what the `Actomaton` module calls a `Reducer`, without depending on that module).
typealias PluginMachineReducer = MealyReducer<PluginMachineAction, PluginMachineState, Void, Effect<PluginMachineAction>>

/// A journaled timer whose action is being delivered.
struct FiredTimer: Sendable {
    let key: Int64
    let repeating: Bool
}

/// The state of a ``PluginMachine``'s machine: the plugin state lives in the plugin's memory
/// (or its worker's); this holds where, the `next_action` chain in progress, and the outcome
/// of the last action a user sent, for its sender.
struct PluginMachineState: Sendable {
    /// Where the plugin state lives now; a reload replaces it.
    var backend: PluginBackend
    /// Actions run by `next_action` requests since the last action that was not one.
    var feedbackSteps = 0
    /// Whether the chain in progress was cut off (its other next actions are dropped).
    var feedbackCut = false
    /// What the last action sent by ``PluginMachine/send(_:)`` did, until its sender takes it.
    var inputOutcome: Result<[PluginEffectRequest], PluginCallError>?
    /// The journal's ticket of the last record this machine appended.
    var lastTicket: UInt64?
    /// Journaled actions since the last snapshot.
    var actionsSinceSnapshot = 0

    /// The plugin's name and version, read once per load rather than once per action.
    private(set) var pluginName: String
    private(set) var pluginVersion: String

    init(backend: PluginBackend) {
        self.backend = backend
        pluginName = backend.plugin.name
        pluginVersion = backend.plugin.manifest.version
    }

    /// Swaps in a reloaded backend.
    mutating func replaceBackend(with replacement: PluginBackend) {
        backend = replacement
        pluginVersion = replacement.plugin.manifest.version
    }

    /// Counts an action of `origin` at `depth` against the feedback limits; the reason to
    /// refuse it, or `nil` to run it. Only the first action past a limit is reported: the
    /// rest of its chain is dropped silently (`.some(nil)`).
    mutating func admit(origin: PluginTransition.Origin, depth: Int, action: PluginAction) -> PluginCallError.Reason?? {
        guard origin == .next else {
            feedbackSteps = 0
            feedbackCut = false
            return nil
        }
        if feedbackCut { return .some(nil) }
        feedbackSteps += 1
        let limit: String
        if depth > PluginLimits.maxFeedbackDepth {
            limit = "\(PluginLimits.maxFeedbackDepth) levels"
        } else if feedbackSteps > PluginLimits.maxFeedbackSteps {
            limit = "\(PluginLimits.maxFeedbackSteps) actions"
        } else {
            return nil
        }
        feedbackCut = true
        return .feedbackLimitReached(action: action.description, limit: limit)
    }
}

/// A plugin running on a `MealyMachine` with the `EffectQueueManager`, on an actor of its
/// own: each action goes through the plugin's prepared libffi call (or to its worker), and the
/// effects it requests become real `Effect`s (IDs, queues, cancellation, timers sleeping on
/// the machine's clock).
///
/// ```swift
/// let machine = try PluginMachine(plugin: plugin, clock: clock)
/// _ = try await machine.send("add", [.int(5)])
/// #expect(try await machine.describe() == #"{"count":5}"#)
/// ```
public actor PluginMachine: EffectQueueHost {
    /// Called after every transition, on the machine's actor: keep it short.
    public typealias Observer = @Sendable (PluginTransition) -> Void

    private var machine: MealyMachine<PluginMachineReducer, EffectQueueManager<PluginMachineAction>>
    private let effects: EffectQueueManager<PluginMachineAction>
    /// The plugin's name; a reload must keep it.
    public nonisolated let name: String
    private nonisolated let currentPlugin: Mutex<Plugin>
    private let log: (@Sendable (String) -> Void)?
    /// How reloads load a replaced file.
    private let isolation: PluginIsolation
    private let loadOptions: Plugin.LoadOptions
    /// The tasks of the effects user sends started, feedback included, for ``waitUntilIdle()``.
    private var effectTasks: [Task<Void, Error>] = []
    /// The effects running or waiting, against the machine's limit.
    public nonisolated let effectBudget: EffectBudget
    /// Where accepted actions, snapshots and timers are journaled, if anywhere.
    public nonisolated let journal: PluginJournal?
    private let clock: any Clock<Duration>

    /// Creates a state of `plugin` and a machine for it.
    ///
    /// - Parameters:
    ///   - plugin: The loaded plugin.
    ///   - clock: What delayed and repeating actions sleep on; tests pass a test clock.
    ///   - describesState: Whether transitions handed to `observer` carry the state's description.
    ///   - observer: Told about every transition, with the state's description when
    ///     `describesState` is `true`.
    ///   - log: Where the plugin's `host->log` lines go (standard error by default).
    ///   - maxEffects: How many delayed and repeating actions the machine may have running or
    ///     waiting; a request past it fails its action.
    ///   - journal: Where accepted actions, snapshots and timers are journaled; none when `nil`.
    public init(
        plugin: Plugin,
        clock: some Clock<Duration> = ContinuousClock(),
        describesState: Bool = false,
        observer: Observer? = nil,
        log: (@Sendable (String) -> Void)? = nil,
        maxEffects: Int = PluginLimits.defaultMaxEffects,
        journal: PluginJournal? = nil
    ) throws(PluginLoadError) {
        let budget = EffectBudget(limit: maxEffects)
        let backend = try PluginBackend.local(plugin, log: log, budget: budget)
        self.init(backend: backend, budget: budget, isolation: .none, loadOptions: .init(), clock: clock,
                  describesState: describesState, observer: observer, log: log, journal: journal)
    }

    /// Starts a worker process that loads the plugin at `path`, and a machine for its state;
    /// see ``PluginIsolation/process(_:)``.
    public init(
        isolatedPluginAt path: String,
        loadOptions: Plugin.LoadOptions = .init(),
        workerOptions: WorkerOptions,
        clock: some Clock<Duration> = ContinuousClock(),
        describesState: Bool = false,
        observer: Observer? = nil,
        log: (@Sendable (String) -> Void)? = nil,
        maxEffects: Int = PluginLimits.defaultMaxEffects,
        journal: PluginJournal? = nil
    ) throws(PluginLoadError) {
        let budget = EffectBudget(limit: maxEffects)
        if PluginFile.isWasm(path) {
            // A .wasm module needs no worker: it runs in the sandbox, in this process.
            let plugin = try Plugin.load(path: path, options: loadOptions)
            self.init(backend: try .local(plugin, log: log, budget: budget), budget: budget, isolation: .process(workerOptions),
                      loadOptions: loadOptions, clock: clock, describesState: describesState, observer: observer, log: log, journal: journal)
            return
        }
        let name = Mutex("plugin")
        let sink = log ?? { line in printToStandardError("[\(name.withLock { $0 })] \(line)") }
        let instance = try IsolatedInstance.start(path: path, loadOptions: loadOptions, options: workerOptions, log: sink)
        name.withLock { $0 = instance.plugin.name }
        self.init(backend: .worker(instance, budget), budget: budget, isolation: .process(workerOptions), loadOptions: loadOptions,
                  clock: clock, describesState: describesState, observer: observer, log: sink, journal: journal)
    }

    private init(
        backend: PluginBackend, budget: EffectBudget, isolation: PluginIsolation, loadOptions: Plugin.LoadOptions,
        clock: some Clock<Duration>, describesState: Bool, observer: Observer?, log: (@Sendable (String) -> Void)?,
        journal: PluginJournal?
    ) {
        name = backend.plugin.name
        self.journal = journal
        self.clock = clock
        currentPlugin = Mutex(backend.plugin)
        self.log = log
        self.isolation = isolation
        self.loadOptions = loadOptions
        effectBudget = budget
        let effects = EffectQueueManager<PluginMachineAction>(clock: clock, onFailure: Self.reportEffectFailure)
        self.effects = effects
        machine = MealyMachine(
            state: PluginMachineState(backend: backend),
            reducer: Self.reducer(clock: clock, describesState: describesState, observer: observer, budget: budget, journal: journal),
            effectManager: effects
        )
        effects.connect(to: self)
    }

    deinit {
        effects.shutDown()
    }

    /// The worker process's ID when the plugin runs isolated and its worker is up.
    public var workerProcessID: Int32? {
        if case let .worker(instance, _) = machine.state.backend { return instance.workerProcessID }
        return nil
    }

    /// The loaded plugin the machine runs now.
    public nonisolated var plugin: Plugin { currentPlugin.withLock { $0 } }

    /// Performs `action` and returns the effects it requested, or throws why it failed.
    /// With a journal, returns once the action is acknowledged (``JournalSyncPolicy``), and
    /// throws ``PluginCallError/Reason/notAcknowledged(action:journal:)`` if it never will be.
    @discardableResult
    public func send(_ action: PluginAction) async throws(PluginCallError) -> [PluginEffectRequest] {
        let submission = try submit(action)
        try await submission.acknowledged()
        return submission.effects
    }

    /// Performs `action` and returns at once, without waiting for its acknowledgement: the
    /// effects it requested, and ``PluginSubmission/acknowledged()`` to wait for it. Throws why
    /// it failed (a failed action is not journaled). A caller that sends a stream of actions
    /// submits them one after another and waits for the last: the journal commits many at a
    /// time (``JournalSyncPolicy``), and acknowledges them in order.
    public func submit(_ action: PluginAction) throws(PluginCallError) -> PluginSubmission {
        machine.effectManager.sendOptions = .init(tracksFeedbacks: true)
        if let task = machine.send(PluginMachineAction(action: action, origin: .input, depth: 0)) {
            effectTasks.append(task)
        }
        let outcome = machine.state.inputOutcome.take()
        let ticket = machine.state.lastTicket.take()
        let effects = try outcome?.get() ?? []
        return PluginSubmission(effects: effects, action: action.description, plugin: name, journal: ticket == nil ? nil : journal, ticket: ticket ?? 0)
    }

    /// Checks `name` and `arguments` against the plugin's vocabulary, then performs the action.
    @discardableResult
    public func send(_ name: String, _ arguments: [PluginValue] = []) async throws(PluginCallError) -> [PluginEffectRequest] {
        try await send(try plugin.action(name, arguments))
    }

    /// Sends an action one of the machine's effects produced (`EffectQueueHost`).
    public func send(effectAction action: PluginMachineAction, tracksFeedbacks: Bool) -> Task<Void, Error>? {
        machine.effectManager.sendOptions = .init(tracksFeedbacks: tracksFeedbacks)
        return machine.send(action)
    }

    /// The plugin's snapshot of the state.
    public func snapshot() throws(PluginCallError) -> [UInt8] {
        do throws(PluginCallError.Reason) { return try machine.state.backend.snapshot() } catch { throw PluginCallError(error, plugin: name) }
    }

    /// The plugin's description of the state.
    public func describe() throws(PluginCallError) -> String {
        do throws(PluginCallError.Reason) { return try machine.state.backend.describe() } catch { throw PluginCallError(error, plugin: name) }
    }

    /// Replaces the state with one read from `snapshot`; the plugin may refuse it.
    public func restore(_ snapshot: [UInt8]) throws(PluginCallError) {
        do throws(PluginCallError.Reason) { try machine.state.backend.restore(snapshot) } catch { throw PluginCallError(error, plugin: name) }
    }

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
        try swapBackend(from: newPlugin.path) { () throws(PluginLoadError) in
            try PluginBackend.local(newPlugin, log: log, budget: budget)
        }
        currentPlugin.withLock { $0 = newPlugin }
    }

    /// Loads the plugin file at `path` again — in this process or in a new worker, as the
    /// machine runs it — and swaps it in with the state carried over; see ``reload(with:)``.
    public func reload(fromFile path: String) throws(PluginLoadError) {
        switch isolation {
        case .none:
            try reload(with: Plugin.load(path: path, options: loadOptions))
        case .process where PluginFile.isWasm(path):
            // A .wasm module needs no worker: it runs in the sandbox.
            try reload(with: Plugin.load(path: path, options: loadOptions))
        case let .process(options):
            let instance = try IsolatedInstance.start(path: path, loadOptions: loadOptions, options: options, log: log ?? { _ in })
            guard instance.plugin.name == name else {
                throw PluginLoadError(.renamed(from: name, to: instance.plugin.name), at: path)
            }
            let budget = effectBudget
            try swapBackend(from: path) { () throws(PluginLoadError) in .worker(instance, budget) }
            currentPlugin.withLock { $0 = instance.plugin }
        }
    }

    /// Snapshots the current backend, restores the snapshot into the one `make` returns, and
    /// swaps it in; on any failure the current one goes on.
    private func swapBackend(from path: String, _ make: () throws(PluginLoadError) -> PluginBackend) throws(PluginLoadError) {
        let snapshot: [UInt8]
        do throws(PluginCallError.Reason) { snapshot = try machine.state.backend.snapshot() } catch { throw PluginLoadError(.stateNotCarriedOver(error), at: path) }
        let replacement = try make()
        do throws(PluginCallError.Reason) { try replacement.restore(snapshot) } catch { throw PluginLoadError(.stateNotCarriedOver(error), at: path) }
        machine.state.replaceBackend(with: replacement)
        // The journal's next replay starts from a state the new version restored.
        if let journal, let bytes = try? replacement.snapshot() {
            machine.state.lastTicket = journal.append(.snapshot(plugin: name, version: replacement.plugin.manifest.version, bytes: bytes))
            machine.state.actionsSinceSnapshot = 0
        }
    }

    /// Waits until every effect started by ``send(_:)``, and every effect those started in
    /// turn, has completed. A repeating action completes only when it is cancelled.
    public func waitUntilIdle() async {
        while !effectTasks.isEmpty {
            let tasks = effectTasks
            effectTasks = []
            for task in tasks { _ = try? await task.value }
        }
    }

    /// How many effects (delayed and repeating actions) are running or waiting.
    public var runningEffectCount: Int { effects.runningEffectCount }

    // MARK: The reducer

    static func reducer<C: Clock<Duration>>(
        clock: C, describesState: Bool, observer: Observer?, budget: EffectBudget, journal: PluginJournal?
    ) -> PluginMachineReducer {
        return PluginMachineReducer { input, state, _ in
            if let arming = input.arming { return arming }
            let backend = state.backend
            let plugin = state.pluginName
            let outcome: Result<[PluginEffectRequest], PluginCallError>
            switch state.admit(origin: input.origin, depth: input.depth, action: input.action) {
            case nil:
                outcome = backend.perform(input.action).mapError { PluginCallError($0, plugin: plugin) }
            case let .some(refusal?):
                outcome = .failure(PluginCallError(refusal, plugin: plugin))
            case .some(nil):
                return .empty // the rest of a chain already cut off and reported
            }
            if input.origin == .input { state.inputOutcome = outcome }
            var report: (@Sendable () -> Void)?
            if let observer {
                let described: Result<String, PluginCallError>? = describesState
                    ? Result { () throws(PluginCallError) in
                        do throws(PluginCallError.Reason) { return try backend.describe() } catch { throw PluginCallError(error, plugin: plugin) }
                    }
                    : nil
                let transition = PluginTransition(plugin: plugin, action: input.action, origin: input.origin, outcome: outcome, state: described)
                report = { observer(transition) }
            }
            guard case let .success(requests) = outcome else {
                report?()
                return .empty
            }
            var keys: [Int64?] = Array(repeating: nil, count: requests.count)
            if let journal {
                // Journaled before it is acknowledged: the transition is reported then.
                let now = wallClockMilliseconds()
                var timers: [JournaledTimer] = []
                var cancelled: [String] = []
                for (index, request) in requests.enumerated() {
                    switch request {
                    case let .delayed(action, delay, options), let .repeating(action, delay, options):
                        let key = journal.makeTimerKey()
                        keys[index] = key
                        var interval: Int64?
                        if case .repeating = request { interval = delay.milliseconds }
                        timers.append(JournaledTimer(key: key, plugin: plugin, action: action.name, arguments: action.arguments,
                                                     due: now + delay.milliseconds, interval: interval, options: options))
                    case let .cancel(id):
                        cancelled.append(id)
                    case .next:
                        break
                    }
                }
                state.lastTicket = journal.append(.action(
                    plugin: plugin, version: state.pluginVersion, name: input.action.name, arguments: input.action.arguments,
                    firedTimer: input.timer.map { ($0.key, $0.repeating) }, timers: timers, cancelledIDs: cancelled
                ), acknowledge: report)
                state.actionsSinceSnapshot += 1
                if state.actionsSinceSnapshot >= journal.options.snapshotInterval, let bytes = try? backend.snapshot() {
                    state.lastTicket = journal.append(.snapshot(plugin: plugin, version: state.pluginVersion, bytes: bytes))
                    state.actionsSinceSnapshot = 0
                }
            } else {
                report?()
            }
            guard !requests.isEmpty else { return .empty }
            let timerKeys = keys
            return Effect.combine(requests.enumerated().map { index, request in
                let key = timerKeys[index]
                return request.effect(clock: clock, budget: budget, timer: key.map { JournalTimerToken(journal: journal!, key: $0) }) { action, request in
                    // A next action goes one level deeper; a timed one starts a new chain.
                    if case .next = request { return PluginMachineAction(action: action, origin: .next, depth: input.depth + 1) }
                    return PluginMachineAction(action: action, origin: request.origin, depth: 0,
                                               timer: key.map { FiredTimer(key: $0, repeating: request.isRepeating) })
                }
            })
        }
    }

    // MARK: The journal

    /// Brings the state back from the journal: the newest snapshot the plugin accepts, then
    /// the actions journaled after it (effects suppressed: they already happened), then the
    /// pending delayed and repeating actions, armed again with the time they have left (one
    /// that came due while the host was down fires at once). Returns a line for each thing
    /// that could not be brought back — past the first three journaled actions that cannot be
    /// replayed, one line counts the rest; nothing is skipped silently.
    public func recover() throws(PluginJournalError) -> [String] {
        guard let journal else { return [] }
        let recovery = try journal.recovery(for: name)
        if recovery.isEmpty { return [] }
        var problems: [String] = []
        let backend = machine.state.backend
        var base: Int64?
        for snapshot in recovery.snapshots {
            do throws(PluginCallError.Reason) {
                try backend.restore(snapshot.bytes)
                base = snapshot.sequence
                break
            } catch {
                problems.append("\(name): the journal's snapshot after action #\(snapshot.sequence) (version \(snapshot.version)) was refused: \(error)")
            }
        }
        var actions = recovery.actions
        if let base, base != recovery.snapshots.first?.sequence {
            actions = try journal.journaledActions(of: name, after: base)
        } else if base == nil, recovery.startsAtTheBeginning, !recovery.snapshots.isEmpty {
            actions = try journal.journaledActions(of: name)
        } else if base == nil, !recovery.startsAtTheBeginning {
            problems.append("\(name): no snapshot could be restored and the journal before it was pruned: starting from a new state, "
                            + "\(actions.count) journaled actions not replayed")
            actions = []
        }
        var unreplayed = 0
        var lastUnreplayed: Int64 = 0
        for journaled in actions {
            do throws(PluginCallError) {
                let action = try plugin.action(journaled.action, journaled.arguments)
                if case let .failure(reason) = backend.perform(action) { throw PluginCallError(reason, plugin: name) }
            } catch {
                // The first few each get a line; the rest, one line in all.
                if unreplayed < Self.replayProblemsShown {
                    problems.append("\(name): journaled action #\(journaled.sequence) '\(Self.shortened(journaled.text))' "
                                    + "(version \(journaled.version)) cannot be replayed: \(Self.shortened(error.reason.description))")
                }
                unreplayed += 1
                lastUnreplayed = journaled.sequence
            }
        }
        if unreplayed > Self.replayProblemsShown {
            problems.append("\(name): \(unreplayed - Self.replayProblemsShown) more journaled actions, up to #\(lastUnreplayed), cannot be "
                            + "replayed either (\(unreplayed) of \(actions.count) in all); `actomaton-host journal` lists them")
        }
        machine.state.actionsSinceSnapshot = actions.count
        let now = wallClockMilliseconds()
        var effects: [Effect<PluginMachineAction>] = []
        var armedAction: PluginAction?
        for timer in recovery.timers {
            let action: PluginAction
            do throws(PluginCallError) {
                action = try plugin.action(timer.action, timer.arguments)
            } catch {
                problems.append("\(name): a journaled timer for '\(timer.action)' cannot be armed again: \(error.reason)")
                journal.append(.timerEnded(key: timer.key))
                continue
            }
            armedAction = action
            let remaining = Duration.milliseconds(max(0, timer.due - now))
            let request: PluginEffectRequest = timer.interval.map { .repeating(action, every: .milliseconds($0), timer.options) }
                ?? .delayed(action, after: remaining, timer.options)
            let fired = FiredTimer(key: timer.key, repeating: timer.interval != nil)
            effects.append(request.effect(clock: clock, budget: effectBudget, timer: JournalTimerToken(journal: journal, key: timer.key),
                                          firstTickAfter: remaining) { action, request in
                PluginMachineAction(action: action, origin: request.origin, depth: 0, timer: fired)
            })
        }
        if let armedAction {
            machine.effectManager.sendOptions = .init(tracksFeedbacks: true)
            // `action` is not performed: the reducer only starts `arming`.
            let arming = PluginMachineAction(action: armedAction, origin: .input, depth: 0, arming: Effect.combine(effects))
            if let task = machine.send(arming) { effectTasks.append(task) }
        }
        return problems
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

    /// How many journaled actions that cannot be replayed ``recover()`` reports one by one.
    static let replayProblemsShown = 3

    /// `text`, cut after 200 bytes (whole characters) with a note: a report line stays short.
    static func shortened(_ text: String) -> String {
        let limit = 200
        guard text.utf8.count > limit else { return text }
        var end = text.startIndex
        var kept = 0
        for index in text.indices {
            let size = text.utf8.distance(from: index, to: text.index(after: index))
            if kept + size > limit { break }
            kept += size
            end = text.index(after: index)
        }
        return "\(text[..<end]) … (\(text.utf8.count - kept) more bytes)"
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
