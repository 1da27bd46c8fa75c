import ActomatonPluginContract
import Actomaton
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

/// The action type of a plugin's ``Actomaton``: a plugin action to perform, or host work that
/// must run on the machine's actor (snapshots, reloads).
public struct PluginMachineAction: Sendable {
    enum Kind: Sendable {
        /// A user's action without a reply: one reference, so the machine copies it cheaply.
        case send(PluginAction)
        /// An action with where it came from, a reply box for the sender, and how many
        /// `next_action` requests deep it is.
        case perform(PluginAction, PluginTransition.Origin, ReplyBox<Result<[PluginEffectRequest], PluginCallError>>?, depth: Int)
        case access(@Sendable (PluginSlot) -> Void)
    }

    let kind: Kind

    /// Performs `action`, sent by the user.
    public static func perform(_ action: PluginAction) -> PluginMachineAction {
        PluginMachineAction(kind: .send(action))
    }
}

/// The state of a plugin's ``Actomaton``: the plugin state lives in the plugin's memory; this
/// holds the instance that owns it.
public struct PluginMachineState: Sendable {
    let slot: PluginSlot
}

/// Holds a machine's current ``PluginInstance`` (a reload replaces it) and the count of the
/// `next_action` chain in progress.
///
/// Touched only by the machine's reducer, so only on its actor. The contents sit behind a
/// pointer rather than in `var`s, so reading them on every action pays no dynamic
/// exclusivity check.
final class PluginSlot: @unchecked Sendable {
    private struct Contents {
        var backend: PluginBackend
        /// Actions run by `next_action` requests since the last action that was not one.
        var feedbackSteps = 0
        /// Whether the chain in progress was cut off (its other next actions are dropped).
        var feedbackCut = false
    }

    private let cell: UnsafeMutablePointer<Contents>

    init(_ backend: PluginBackend) {
        cell = .allocate(capacity: 1)
        cell.initialize(to: Contents(backend: backend))
    }

    deinit {
        cell.deinitialize(count: 1)
        cell.deallocate()
    }

    /// Where the plugin state lives now.
    var backend: PluginBackend {
        get { cell.pointee.backend }
        set { cell.pointee.backend = newValue }
    }

    /// Counts an action of `origin` at `depth` against the feedback limits; the reason to
    /// refuse it, or `nil` to run it. Only the first action past a limit is reported: the
    /// rest of its chain is dropped silently (`.some(nil)`).
    func admit(origin: PluginTransition.Origin, depth: Int, action: PluginAction) -> PluginCallError.Reason?? {
        guard origin == .next else {
            cell.pointee.feedbackSteps = 0
            cell.pointee.feedbackCut = false
            return nil
        }
        if cell.pointee.feedbackCut { return .some(nil) }
        cell.pointee.feedbackSteps += 1
        let limit: String
        if depth > PluginLimits.maxFeedbackDepth {
            limit = "\(PluginLimits.maxFeedbackDepth) levels"
        } else if cell.pointee.feedbackSteps > PluginLimits.maxFeedbackSteps {
            limit = "\(PluginLimits.maxFeedbackSteps) actions"
        } else {
            return nil
        }
        cell.pointee.feedbackCut = true
        return .feedbackLimitReached(action: action.description, limit: limit)
    }
}

/// A value handed from the machine's actor back to the task that sent an action.
final class ReplyBox<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)

    func set(_ newValue: Value) { value.withLock { $0 = newValue } }
    func take() -> Value? { value.withLock { $0.take() } }
}

/// A plugin running on an ``Actomaton`` with the ``EffectQueueManager``: each action goes
/// through the plugin's prepared libffi call, and the effects it requests become real
/// `Effect`s (IDs, queues, cancellation, timers sleeping on the machine's clock).
///
/// ```swift
/// let machine = try PluginMachine(plugin: plugin, clock: clock)
/// _ = try await machine.send("add", [.int(5)])
/// #expect(await machine.describe() == #"{"count":5}"#)
/// ```
public final class PluginMachine: @unchecked Sendable {
    /// Called after every transition, on the machine's actor: keep it short.
    public typealias Observer = @Sendable (PluginTransition) -> Void

    /// The machine. Send ``PluginMachineAction/perform(_:)`` to it directly for the fastest
    /// path (no reply).
    public let actomaton: Actomaton<PluginMachineAction, PluginMachineState>
    /// The plugin's name; a reload must keep it.
    public let name: String
    private let currentPlugin: Mutex<Plugin>
    private let log: (@Sendable (String) -> Void)?
    /// How reloads load a replaced file.
    private let isolation: PluginIsolation
    private let loadOptions: Plugin.LoadOptions
    /// The tasks of the effects user sends started, feedback included, for ``waitUntilIdle()``.
    private let effectTasks = Mutex<[Task<Void, Error>]>([])
    /// The effects running or waiting, against the machine's limit.
    public let effectBudget: EffectBudget

    /// Creates a state of `plugin` and a machine for it.
    ///
    /// - Parameters:
    ///   - clock: What delayed and repeating actions sleep on; tests pass a test clock.
    ///   - observer: Told about every transition, with the state's description when
    ///     `describesState` is `true`.
    ///   - log: Where the plugin's `host->log` lines go (standard error by default).
    ///   - maxEffects: How many delayed and repeating actions the machine may have running or
    ///     waiting; a request past it fails its action.
    public convenience init(
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
    public convenience init(
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
        actomaton = Actomaton(
            state: PluginMachineState(slot: PluginSlot(backend)),
            reducer: Self.reducer(clock: clock, describesState: describesState, observer: observer, budget: budget),
            clock: clock
        )
    }

    /// The worker process's ID when the plugin runs isolated and its worker is up.
    public var workerProcessID: Int32? {
        get async {
            await access { slot in
                if case let .worker(instance, _) = slot.backend { return instance.workerProcessID }
                return nil
            }
        }
    }

    /// The loaded plugin the machine runs now.
    public var plugin: Plugin { currentPlugin.withLock { $0 } }

    /// Performs `action` and returns the effects it requested, or throws why it failed.
    @discardableResult
    public func send(_ action: PluginAction) async throws(PluginCallError) -> [PluginEffectRequest] {
        let reply = ReplyBox<Result<[PluginEffectRequest], PluginCallError>>()
        if let task = await actomaton.send(PluginMachineAction(kind: .perform(action, .input, reply, depth: 0)), tracksFeedbacks: true) {
            effectTasks.withLock { $0.append(task) }
        }
        return try reply.take()!.get()
    }

    /// Checks `name` and `arguments` against the plugin's vocabulary, then performs the action.
    @discardableResult
    public func send(_ name: String, _ arguments: [PluginValue] = []) async throws(PluginCallError) -> [PluginEffectRequest] {
        try await send(try plugin.action(name, arguments))
    }

    /// The plugin's snapshot of the state.
    public func snapshot() async throws(PluginCallError) -> [UInt8] {
        let name = self.name
        return try await access { slot in
            Result { () throws(PluginCallError) in
                do throws(PluginCallError.Reason) { return try slot.backend.snapshot() } catch { throw PluginCallError(error, plugin: name) }
            }
        }.get()
    }

    /// The plugin's description of the state.
    public func describe() async throws(PluginCallError) -> String {
        let name = self.name
        return try await access { slot in
            Result { () throws(PluginCallError) in
                do throws(PluginCallError.Reason) { return try slot.backend.describe() } catch { throw PluginCallError(error, plugin: name) }
            }
        }.get()
    }

    /// Replaces the state with one read from `snapshot`; the plugin may refuse it.
    public func restore(_ snapshot: [UInt8]) async throws(PluginCallError) {
        let name = self.name
        try await access { slot in
            Result { () throws(PluginCallError) in
                do throws(PluginCallError.Reason) { try slot.backend.restore(snapshot) } catch { throw PluginCallError(error, plugin: name) }
            }
        }.get()
    }

    /// Swaps in a new load of the plugin, carrying the state over with snapshot / restore.
    ///
    /// Happens between two actions, on the machine's actor. Effects still running keep
    /// running; the actions they send are checked again against the new vocabulary. If the
    /// new plugin has another name, cannot create a state or refuses the snapshot, the
    /// machine keeps the old one, unchanged.
    public func reload(with newPlugin: Plugin) async throws(PluginLoadError) {
        guard newPlugin.name == name else {
            throw PluginLoadError(.renamed(from: name, to: newPlugin.name), at: newPlugin.path)
        }
        let log = self.log
        let budget = effectBudget
        try await swapBackend(from: newPlugin.path) { () throws(PluginLoadError) in
            .inProcess(try PluginInstance(plugin: newPlugin, log: log, effectBudget: budget))
        }
        currentPlugin.withLock { $0 = newPlugin }
    }

    /// Loads the plugin file at `path` again — in this process or in a new worker, as the
    /// machine runs it — and swaps it in with the state carried over; see ``reload(with:)``.
    public func reload(fromFile path: String) async throws(PluginLoadError) {
        switch isolation {
        case .none:
            try await reload(with: Plugin.load(path: path, options: loadOptions))
        case let .process(options):
            let instance = try IsolatedInstance.start(path: path, loadOptions: loadOptions, options: options, log: log ?? { _ in })
            guard instance.plugin.name == name else {
                throw PluginLoadError(.renamed(from: name, to: instance.plugin.name), at: path)
            }
            let budget = effectBudget
            try await swapBackend(from: path) { () throws(PluginLoadError) in .worker(instance, budget) }
            currentPlugin.withLock { $0 = instance.plugin }
        }
    }

    /// Snapshots the current backend, restores the snapshot into the one `make` returns, and
    /// swaps it in; on any failure the current one goes on.
    private func swapBackend(from path: String, _ make: @escaping @Sendable () throws(PluginLoadError) -> PluginBackend) async throws(PluginLoadError) {
        try await access { slot in
            Result { () throws(PluginLoadError) in
                let snapshot: [UInt8]
                do throws(PluginCallError.Reason) { snapshot = try slot.backend.snapshot() } catch { throw PluginLoadError(.stateNotCarriedOver(error), at: path) }
                let replacement = try make()
                do throws(PluginCallError.Reason) { try replacement.restore(snapshot) } catch { throw PluginLoadError(.stateNotCarriedOver(error), at: path) }
                slot.backend = replacement
            }
        }.get()
    }

    /// Waits until every effect started by ``send(_:)``, and every effect those started in
    /// turn, has completed. A repeating action completes only when it is cancelled.
    public func waitUntilIdle() async {
        while true {
            let tasks = effectTasks.withLock { tasks in
                defer { tasks = [] }
                return tasks
            }
            if tasks.isEmpty { return }
            for task in tasks { _ = try? await task.value }
        }
    }

    /// How many effects (delayed and repeating actions) are running or waiting.
    public var runningEffectCount: Int {
        get async { await actomaton.runningEffectCount }
    }

    /// Runs `body` with the slot on the machine's actor and returns its result.
    private func access<T: Sendable>(_ body: @escaping @Sendable (PluginSlot) -> T) async -> T {
        let reply = ReplyBox<T>()
        await actomaton.send(PluginMachineAction(kind: .access { reply.set(body($0)) }))
        return reply.take()!
    }

    // MARK: The reducer

    static func reducer<C: Clock<Duration>>(
        clock: C, describesState: Bool, observer: Observer?, budget: EffectBudget
    ) -> Reducer<PluginMachineAction, PluginMachineState, Void> {
        /// The effects a plugin requested, as one `Effect` whose actions come back to this machine.
        @Sendable func effect(of requests: [PluginEffectRequest], depth: Int) -> Effect<PluginMachineAction> {
            Effect.combine(requests.map { request in
                request.effect(clock: clock, budget: budget) { action, request in
                    // A next action goes one level deeper; a timed one starts a new chain.
                    if case .next = request { return PluginMachineAction(kind: .perform(action, .next, nil, depth: depth + 1)) }
                    return PluginMachineAction(kind: .perform(action, request.origin, nil, depth: 0))
                }
            })
        }

        /// Tells the observer about a transition, with the state when it asked.
        @Sendable func report(_ instance: PluginBackend, _ action: PluginAction, _ origin: PluginTransition.Origin,
                              _ outcome: Result<[PluginEffectRequest], PluginCallError>) {
            guard let observer else { return }
            let state: Result<String, PluginCallError>? = describesState
                ? Result { () throws(PluginCallError) in
                    do throws(PluginCallError.Reason) { return try instance.describe() } catch { throw PluginCallError(error, plugin: instance.plugin.name) }
                }
                : nil
            observer(PluginTransition(plugin: instance.plugin.name, action: action, origin: origin, outcome: outcome, state: state))
        }

        return Reducer<PluginMachineAction, PluginMachineState, Void> { action, state, _ in
            switch action.kind {
            case let .access(body):
                body(state.slot)
                return .empty
            case let .send(action):
                let instance = state.slot.backend
                _ = state.slot.admit(origin: .input, depth: 0, action: action)
                let outcome = instance.perform(action).mapError { PluginCallError($0, plugin: instance.plugin.name) }
                report(instance, action, .input, outcome)
                guard case let .success(requests) = outcome, !requests.isEmpty else { return .empty }
                return effect(of: requests, depth: 0)
            case let .perform(action, origin, reply, depth):
                let instance = state.slot.backend
                let outcome: Result<[PluginEffectRequest], PluginCallError>
                switch state.slot.admit(origin: origin, depth: depth, action: action) {
                case nil:
                    outcome = instance.perform(action).mapError { PluginCallError($0, plugin: instance.plugin.name) }
                case let .some(refusal?):
                    outcome = .failure(PluginCallError(refusal, plugin: instance.plugin.name))
                case .some(nil):
                    return .empty // the rest of a chain already cut off and reported
                }
                reply?.set(outcome)
                report(instance, action, origin, outcome)
                guard case let .success(requests) = outcome, !requests.isEmpty else { return .empty }
                return effect(of: requests, depth: depth)
            }
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
