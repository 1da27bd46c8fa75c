import ActomatonPluginContract
import Actomaton
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

/// An action of a ``PluginMachine``'s own machine: a plugin action, where it came from, and
/// how many `next_action` requests deep it is. The machine's effects send these back.
public struct PluginMachineAction: Sendable {
    let action: PluginAction
    let origin: PluginTransition.Origin
    let depth: Int
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

    init(backend: PluginBackend) {
        self.backend = backend
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

/// A plugin running on a `MealyMachine` with the ``EffectQueueManager``, on an actor of its
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

    private var machine: MealyMachine<Reducer<PluginMachineAction, PluginMachineState, Void>, EffectQueueManager<PluginMachineAction>>
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

    /// Creates a state of `plugin` and a machine for it.
    ///
    /// - Parameters:
    ///   - clock: What delayed and repeating actions sleep on; tests pass a test clock.
    ///   - observer: Told about every transition, with the state's description when
    ///     `describesState` is `true`.
    ///   - log: Where the plugin's `host->log` lines go (standard error by default).
    ///   - maxEffects: How many delayed and repeating actions the machine may have running or
    ///     waiting; a request past it fails its action.
    public init(
        plugin: Plugin,
        clock: some Clock<Duration> = ContinuousClock(),
        describesState: Bool = false,
        observer: Observer? = nil,
        log: (@Sendable (String) -> Void)? = nil,
        maxEffects: Int = PluginLimits.defaultMaxEffects
    ) throws(PluginLoadError) {
        let budget = EffectBudget(limit: maxEffects)
        let instance = try PluginInstance(plugin: plugin, log: log, effectBudget: budget)
        self.init(backend: .inProcess(instance), budget: budget, isolation: .none, loadOptions: .init(), clock: clock,
                  describesState: describesState, observer: observer, log: log)
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
        maxEffects: Int = PluginLimits.defaultMaxEffects
    ) throws(PluginLoadError) {
        let budget = EffectBudget(limit: maxEffects)
        let name = Mutex("plugin")
        let sink = log ?? { line in printToStandardError("[\(name.withLock { $0 })] \(line)") }
        let instance = try IsolatedInstance.start(path: path, loadOptions: loadOptions, options: workerOptions, log: sink)
        name.withLock { $0 = instance.plugin.name }
        self.init(backend: .worker(instance, budget), budget: budget, isolation: .process(workerOptions), loadOptions: loadOptions,
                  clock: clock, describesState: describesState, observer: observer, log: sink)
    }

    private init(
        backend: PluginBackend, budget: EffectBudget, isolation: PluginIsolation, loadOptions: Plugin.LoadOptions,
        clock: some Clock<Duration>, describesState: Bool, observer: Observer?, log: (@Sendable (String) -> Void)?
    ) {
        name = backend.plugin.name
        currentPlugin = Mutex(backend.plugin)
        self.log = log
        self.isolation = isolation
        self.loadOptions = loadOptions
        effectBudget = budget
        let effects = EffectQueueManager<PluginMachineAction>(clock: clock)
        self.effects = effects
        machine = MealyMachine(
            state: PluginMachineState(backend: backend),
            reducer: Self.reducer(clock: clock, describesState: describesState, observer: observer, budget: budget),
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
    @discardableResult
    public func send(_ action: PluginAction) throws(PluginCallError) -> [PluginEffectRequest] {
        machine.effectManager.sendOptions = .init(tracksFeedbacks: true)
        if let task = machine.send(PluginMachineAction(action: action, origin: .input, depth: 0)) {
            effectTasks.append(task)
        }
        guard let outcome = machine.state.inputOutcome.take() else { return [] }
        return try outcome.get()
    }

    /// Checks `name` and `arguments` against the plugin's vocabulary, then performs the action.
    @discardableResult
    public func send(_ name: String, _ arguments: [PluginValue] = []) throws(PluginCallError) -> [PluginEffectRequest] {
        try send(try plugin.action(name, arguments))
    }

    /// Sends an action one of the machine's effects produced (``EffectQueueHost``).
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
            .inProcess(try PluginInstance(plugin: newPlugin, log: log, effectBudget: budget))
        }
        currentPlugin.withLock { $0 = newPlugin }
    }

    /// Loads the plugin file at `path` again — in this process or in a new worker, as the
    /// machine runs it — and swaps it in with the state carried over; see ``reload(with:)``.
    public func reload(fromFile path: String) throws(PluginLoadError) {
        switch isolation {
        case .none:
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
        machine.state.backend = replacement
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
        clock: C, describesState: Bool, observer: Observer?, budget: EffectBudget
    ) -> Reducer<PluginMachineAction, PluginMachineState, Void> {
        /// The effects a plugin requested, as one `Effect` whose actions come back to this machine.
        @Sendable func effect(of requests: [PluginEffectRequest], depth: Int) -> Effect<PluginMachineAction> {
            Effect.combine(requests.map { request in
                request.effect(clock: clock, budget: budget) { action, request in
                    // A next action goes one level deeper; a timed one starts a new chain.
                    if case .next = request { return PluginMachineAction(action: action, origin: .next, depth: depth + 1) }
                    return PluginMachineAction(action: action, origin: request.origin, depth: 0)
                }
            })
        }

        return Reducer<PluginMachineAction, PluginMachineState, Void> { input, state, _ in
            let backend = state.backend
            let plugin = backend.plugin.name
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
            if let observer {
                let described: Result<String, PluginCallError>? = describesState
                    ? Result { () throws(PluginCallError) in
                        do throws(PluginCallError.Reason) { return try backend.describe() } catch { throw PluginCallError(error, plugin: plugin) }
                    }
                    : nil
                observer(PluginTransition(plugin: plugin, action: input.action, origin: input.origin, outcome: outcome, state: described))
            }
            guard case let .success(requests) = outcome, !requests.isEmpty else { return .empty }
            return effect(of: requests, depth: input.depth)
        }
    }
}

extension PluginEffectRequest {
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
