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
    /// The effects it requested, or why it was refused (then the state is unchanged).
    public var outcome: Result<[PluginEffectRequest], PluginError>
    /// The plugin's description of the state after the transition, when the observer asked.
    public var state: String?
}

/// The action type of a plugin's ``Actomaton``: a plugin action to perform, or host work that
/// must run on the machine's actor (snapshots, reloads).
public struct PluginMachineAction: Sendable {
    enum Kind: Sendable {
        /// A user's action without a reply: one reference, so the machine copies it cheaply.
        case send(PluginAction)
        case perform(PluginAction, PluginTransition.Origin, ReplyBox<Result<[PluginEffectRequest], PluginError>>?)
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

/// Holds a machine's current ``PluginInstance``; a reload replaces it.
///
/// Touched only by the machine's reducer, so only on its actor. The instance sits behind a
/// pointer rather than in a `var`, so reading it on every action pays no dynamic
/// exclusivity check.
final class PluginSlot: @unchecked Sendable {
    private let cell: UnsafeMutablePointer<PluginInstance>

    init(_ instance: PluginInstance) {
        cell = .allocate(capacity: 1)
        cell.initialize(to: instance)
    }

    deinit {
        cell.deinitialize(count: 1)
        cell.deallocate()
    }

    /// The current instance.
    var instance: PluginInstance {
        get { cell.pointee }
        set { cell.pointee = newValue }
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
public final class PluginMachine: Sendable {
    /// Called after every transition, on the machine's actor: keep it short.
    public typealias Observer = @Sendable (PluginTransition) -> Void

    /// The machine. Send ``PluginMachineAction/perform(_:)`` to it directly for the fastest
    /// path (no reply).
    public let actomaton: Actomaton<PluginMachineAction, PluginMachineState>
    /// The plugin's name; a reload must keep it.
    public let name: String
    private let currentPlugin: Mutex<Plugin>
    private let log: (@Sendable (String) -> Void)?
    /// The tasks of the effects user sends started, feedback included, for ``waitUntilIdle()``.
    private let effectTasks = Mutex<[Task<Void, Error>]>([])

    /// Creates a state of `plugin` and a machine for it.
    ///
    /// - Parameters:
    ///   - clock: What delayed and repeating actions sleep on; tests pass a test clock.
    ///   - observer: Told about every transition, with the state's description when
    ///     `describesState` is `true`.
    ///   - log: Where the plugin's `host->log` lines go (standard error by default).
    public init(
        plugin: Plugin,
        clock: some Clock<Duration> = ContinuousClock(),
        describesState: Bool = false,
        observer: Observer? = nil,
        log: (@Sendable (String) -> Void)? = nil
    ) throws(PluginError) {
        let instance = try PluginInstance(plugin: plugin, log: log)
        name = plugin.name
        currentPlugin = Mutex(plugin)
        self.log = log
        actomaton = Actomaton(
            state: PluginMachineState(slot: PluginSlot(instance)),
            reducer: Self.reducer(clock: clock, describesState: describesState, observer: observer),
            clock: clock
        )
    }

    /// The loaded plugin the machine runs now.
    public var plugin: Plugin { currentPlugin.withLock { $0 } }

    /// Performs `action` and returns the effects it requested, or throws why it was refused
    /// (the state is then unchanged).
    @discardableResult
    public func send(_ action: PluginAction) async throws(PluginError) -> [PluginEffectRequest] {
        let reply = ReplyBox<Result<[PluginEffectRequest], PluginError>>()
        if let task = await actomaton.send(PluginMachineAction(kind: .perform(action, .input, reply)), tracksFeedbacks: true) {
            effectTasks.withLock { $0.append(task) }
        }
        return try reply.take()!.get()
    }

    /// Checks `name` and `arguments` against the plugin's vocabulary, then performs the action.
    @discardableResult
    public func send(_ name: String, _ arguments: [PluginValue] = []) async throws(PluginError) -> [PluginEffectRequest] {
        try await send(try plugin.action(name, arguments))
    }

    /// The plugin's snapshot of the state.
    public func snapshot() async -> [UInt8] {
        await access { $0.instance.snapshot() }
    }

    /// The plugin's description of the state.
    public func describe() async -> String {
        await access { $0.instance.describe() }
    }

    /// Replaces the state with one read from `snapshot`; unchanged if the plugin refuses it.
    public func restore(_ snapshot: [UInt8]) async throws(PluginError) {
        try await access { slot in Result { () throws(PluginError) in try slot.instance.restore(snapshot) } }.get()
    }

    /// Swaps in a new load of the plugin, carrying the state over with snapshot / restore.
    ///
    /// Happens between two actions, on the machine's actor. Effects still running keep
    /// running; the actions they send are checked again against the new vocabulary. If the
    /// new plugin has another name, cannot create a state or refuses the snapshot, the
    /// machine keeps the old one, unchanged.
    public func reload(with newPlugin: Plugin) async throws(PluginError) {
        guard newPlugin.name == name else {
            throw PluginError(.invalidManifest("the new version is named '\(newPlugin.name)', not '\(name)'"), at: newPlugin.path)
        }
        let log = self.log
        try await access { slot in
            Result { () throws(PluginError) in
                let snapshot = slot.instance.snapshot()
                let replacement = try PluginInstance(plugin: newPlugin, log: log)
                try replacement.restore(snapshot)
                slot.instance = replacement
            }
        }.get()
        currentPlugin.withLock { $0 = newPlugin }
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
        clock: C, describesState: Bool, observer: Observer?
    ) -> Reducer<PluginMachineAction, PluginMachineState, Void> {
        /// The effects a plugin requested, as one `Effect` whose actions come back to this machine.
        @Sendable func effect(of requests: [PluginEffectRequest]) -> Effect<PluginMachineAction> {
            Effect.combine(requests.map { request in
                request.effect(clock: clock) { action, request in
                    PluginMachineAction(kind: .perform(action, request.origin, nil))
                }
            })
        }

        return Reducer<PluginMachineAction, PluginMachineState, Void> { action, state, _ in
            switch action.kind {
            case let .access(body):
                body(state.slot)
                return .empty
            case let .send(action):
                let instance = state.slot.instance
                switch instance.perform(action) {
                case let .success(requests):
                    if let observer {
                        observer(PluginTransition(plugin: instance.plugin.name, action: action, origin: .input, outcome: .success(requests),
                                                  state: describesState ? instance.describe() : nil))
                    }
                    if requests.isEmpty { return .empty }
                    return effect(of: requests)
                case let .failure(reason):
                    if let observer {
                        let error = PluginError(reason, at: "plugin \(instance.plugin.name)")
                        observer(PluginTransition(plugin: instance.plugin.name, action: action, origin: .input, outcome: .failure(error),
                                                  state: describesState ? instance.describe() : nil))
                    }
                    return .empty
                }
            case let .perform(action, origin, reply):
                let instance = state.slot.instance
                let outcome = instance.perform(action).mapError { PluginError($0, at: "plugin \(instance.plugin.name)") }
                reply?.set(outcome)
                if let observer {
                    observer(PluginTransition(plugin: instance.plugin.name, action: action, origin: origin, outcome: outcome,
                                              state: describesState ? instance.describe() : nil))
                }
                guard case let .success(requests) = outcome, !requests.isEmpty else { return .empty }
                return effect(of: requests)
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
