import Actomaton
import Observation

/// A machine for a user interface: an `Actomaton` whose state the main actor reads
/// and observes, and to which a view sends actions.
///
/// `Store` is `Observable`: a view (SwiftUI on Apple platforms, or any code that uses
/// `withObservationTracking`) that reads `store.state`, or a field of it through the store
/// (`store.count`), is told when what it read changes, and only then:
///
/// - reading ``state`` tracks the whole state;
/// - reading a field through the store (`store.count`, by dynamic member lookup) tracks that
///   field: a change elsewhere in the state does not notify the reader;
/// - an action that leaves an `Equatable` state equal notifies nobody.
///
/// The conformance is the one the `@Observable` macro writes — an `ObservationRegistrar` that
/// is told of each access and change — written out by hand, because the macro tracks stored
/// properties only, and the store also tracks each field of its state read through it.
///
/// ```swift
/// let store = Store<Action, State, Void>(state: State(), reducer: reducer)
/// try await store.send(.increment).value
/// #expect(store.state.count == 1)
/// #expect(store.count == 1)
/// ```
///
/// The machine runs on its actor; the store keeps a copy of its state on the main actor, updated
/// after each transition through `Actomaton.states`. ``send(_:priority:tracksFeedbacks:)``
/// returns at once; actions sent from the main actor reach the machine in the order sent.
///
/// Scope a store for a child view with ``map(state:)->Store<Action,SubState,Environment>`` and
/// ``contramap(action:)-(CaseKeyPath<Action,SubAction>Sendable)``: the child sees its slice and sends
/// through the parent. Releasing the last store of a machine releases the machine, which
/// cancels its running effects (see `Actomaton`); releasing a child store cancels nothing.
@MainActor
@dynamicMemberLookup
public class Store<Action: Sendable, State: Sendable, Environment: Sendable>: Observable {
    /// The environment the store's reducer was given, for views that need a dependency too.
    public let environment: Environment

    /// The state, as the store last heard from its machine.
    private var currentState: State
    private let registrar = ObservationRegistrar()
    /// Sends an action to the machine, or to the parent store.
    let sendAction: @MainActor (Action, TaskPriority?, Bool) -> Task<Void, Error>
    /// What keeps this store's source alive: the root's runtime, or the parent store.
    private let source: AnyObject
    /// The fields read through the store, each with what tells whether it changed.
    private var fields: [AnyKeyPath: Field] = [:]
    /// The child stores, held weakly; each takes its slice of a new state.
    private var children: [Child] = []

    /// Creates a store in `state` running `reducer`, with `environment` handed to every reducer
    /// call; it starts its `Actomaton`.
    ///
    /// - Parameters:
    ///   - state: The state the machine starts in.
    ///   - reducer: The transition function.
    ///   - environment: The dependencies handed to every reducer call, also ``environment``.
    ///   - clock: What effects sleep on; tests pass a test clock (`ManualClock`).
    ///   - onFailure: Receives the failures no caller sees; see `EffectFailure`.
    public convenience init(
        state: State,
        reducer: Reducer<Action, State, Environment>,
        environment: Environment,
        clock: some Clock<Duration> = ContinuousClock(),
        onFailure: @escaping @Sendable (EffectFailure) -> Void = EffectFailure.writeToStandardError
    ) {
        let actomaton = Actomaton<Action, State>(
            state: state, reducer: reducer, environment: environment, clock: clock, onFailure: onFailure
        )
        self.init(actomaton: actomaton, state: state, environment: environment)
    }

    /// Creates a store in `state` running `reducer`, which needs no environment.
    ///
    /// - Parameters:
    ///   - state: The state the machine starts in.
    ///   - reducer: The transition function.
    ///   - clock: What effects sleep on; tests pass a test clock (`ManualClock`).
    ///   - onFailure: Receives the failures no caller sees; see `EffectFailure`.
    public convenience init(
        state: State,
        reducer: Reducer<Action, State, Void>,
        clock: some Clock<Duration> = ContinuousClock(),
        onFailure: @escaping @Sendable (EffectFailure) -> Void = EffectFailure.writeToStandardError
    ) where Environment == Void {
        self.init(state: state, reducer: reducer, environment: (), clock: clock, onFailure: onFailure)
    }

    /// Creates a store on a machine made elsewhere, whose state is `state` now.
    ///
    /// The store reads the machine's state when it starts, and after each transition; `state`
    /// only stands in until then. Other code may keep sending to the machine: the store sees
    /// what it does.
    ///
    /// - Parameters:
    ///   - actomaton: The machine; the store holds it.
    ///   - state: The machine's state, for the store to show until it has read the machine's.
    ///   - environment: What ``environment`` returns.
    public init(actomaton: Actomaton<Action, State>, state: State, environment: Environment) {
        let runtime = StoreRuntime(actomaton: actomaton)
        self.environment = environment
        self.currentState = state
        self.source = runtime
        self.sendAction = { [weak runtime] action, priority, tracksFeedbacks in
            guard let runtime else { return Task { throw CancellationError() } }
            return runtime.send(action, priority: priority, tracksFeedbacks: tracksFeedbacks)
        }
        runtime.start { [weak self] state in self?.apply(state) }
    }

    /// A store that reads its state from `source` (a parent store) and sends through `send`.
    init(
        state: State,
        environment: Environment,
        source: AnyObject,
        send: @escaping @MainActor (Action, TaskPriority?, Bool) -> Task<Void, Error>
    ) {
        self.currentState = state
        self.environment = environment
        self.source = source
        self.sendAction = send
    }

    /// The state: reading it tracks the whole of it (see the type's overview).
    public var state: State {
        registrar.access(self, keyPath: \.state)
        return currentState
    }

    /// A field of the state, read through the store (`store.count`): reading it tracks this
    /// field only.
    ///
    /// - Parameter keyPath: The field.
    public subscript<Value>(dynamicMember keyPath: KeyPath<State, Value>) -> Value {
        field(keyPath).access(registrar, self)
        return currentState[keyPath: keyPath]
    }

    /// Sends `action` to the machine.
    ///
    /// The returned task is the machine's own send task, awaited: it completes when every effect
    /// `action` started has completed (with `tracksFeedbacks`, also those of the actions they
    /// sent back), cancels them when cancelled, and throws `CancellationError` if any was
    /// cancelled. Unlike the actor's `send`, it is never `nil`: a store sends from the main
    /// actor without waiting, so it cannot know yet whether `action` starts an effect.
    ///
    /// When the task completes, ``state`` includes every transition the machine made before.
    ///
    /// - Parameters:
    ///   - action: The action.
    ///   - priority: The priority of the effects' tasks.
    ///   - tracksFeedbacks: When `true`, the task also waits for the effects of the actions those
    ///     effects send back, transitively.
    /// - Returns: The task of `action`'s effects.
    @discardableResult
    public func send(
        _ action: Action,
        priority: TaskPriority? = nil,
        tracksFeedbacks: Bool = false
    ) -> Task<Void, Error> {
        sendAction(action, priority, tracksFeedbacks)
    }

    /// The state, read without tracking: what a new child store starts from.
    var currentStateForChildren: State { currentState }

    /// Takes a new state: notifies the readers of what changed, then the children.
    ///
    /// The new state is always taken, even when it is equal (`==`) to the last: an `==` may
    /// leave fields out, and the store shows the machine's state, not the first of its equals.
    /// Readers of the whole state are told only when it is not equal; readers of a field, when
    /// the field is not. A value that is not `Equatable` counts as changed, unless
    /// `parentIsUnchanged` (the parent's state was equal to its last).
    func apply(_ newState: State, parentIsUnchanged: Bool = false) {
        let oldState = currentState
        let stateChanged = areEqual(oldState, newState).map { !$0 } ?? !parentIsUnchanged
        let changed = fields.values.filter { $0.hasChanged(oldState, newState, parentIsUnchanged) }
        if stateChanged { registrar.willSet(self, keyPath: \.state) }
        for field in changed { field.willSet(registrar, self) }
        currentState = newState
        for field in changed { field.didSet(registrar, self) }
        if stateChanged { registrar.didSet(self, keyPath: \.state) }

        children.removeAll { $0.isReleased }
        for child in children { child.apply(newState, !stateChanged) }
    }

    /// Registers a child store, which takes its slice of each new state.
    func addChild(_ child: AnyObject, apply: @escaping @MainActor (State, Bool) -> Void) {
        children.removeAll { $0.isReleased }
        children.append(Child(store: child, apply: apply))
    }

    /// The tracking of a field, made when the field is first read.
    private func field<Value>(_ keyPath: KeyPath<State, Value>) -> Field {
        if let field = fields[keyPath] { return field }
        let field = Field(
            keyPath: (\Store.currentState).appending(path: keyPath),
            hasChanged: { old, new, parentIsUnchanged in
                areEqual(old[keyPath: keyPath], new[keyPath: keyPath]).map { !$0 } ?? !parentIsUnchanged
            }
        )
        fields[keyPath] = field
        return field
    }

    /// A field read through the store: its key path from the store, for the registrar, and
    /// whether it differs between two states.
    private struct Field {
        let hasChanged: (State, State, Bool) -> Bool
        private let accessBody: (ObservationRegistrar, Store) -> Void
        private let willSetBody: (ObservationRegistrar, Store) -> Void
        private let didSetBody: (ObservationRegistrar, Store) -> Void

        init<Value>(keyPath: KeyPath<Store, Value>, hasChanged: @escaping (State, State, Bool) -> Bool) {
            self.hasChanged = hasChanged
            accessBody = { registrar, store in registrar.access(store, keyPath: keyPath) }
            willSetBody = { registrar, store in registrar.willSet(store, keyPath: keyPath) }
            didSetBody = { registrar, store in registrar.didSet(store, keyPath: keyPath) }
        }

        func access(_ registrar: ObservationRegistrar, _ store: Store) { accessBody(registrar, store) }
        func willSet(_ registrar: ObservationRegistrar, _ store: Store) { willSetBody(registrar, store) }
        func didSet(_ registrar: ObservationRegistrar, _ store: Store) { didSetBody(registrar, store) }
    }

    /// A child store, held weakly.
    private struct Child {
        weak var store: AnyObject?
        let apply: @MainActor (State, Bool) -> Void
        var isReleased: Bool { store == nil }
    }
}

/// Whether two values are equal: `nil` when their type is not `Equatable`.
func areEqual<Value>(_ lhs: Value, _ rhs: Value) -> Bool? {
    guard let lhs = lhs as? any Equatable else { return nil }
    return lhs.isEqual(to: rhs)
}

extension Equatable {
    fileprivate func isEqual(to other: Any) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}
