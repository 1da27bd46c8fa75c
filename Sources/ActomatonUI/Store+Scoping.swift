import Actomaton

// Child stores: a slice of the state, through key paths and case paths as `Actomaton` composes
// reducers; actions embedded into the parent's; the environment mapped.

extension Store {
    /// A store of the field `keyPath` of the state, for a child view: its state is that field,
    /// kept up to date from this store; it sends through this store.
    ///
    /// - Parameter keyPath: The field.
    /// - Returns: A store whose state is the field.
    public func map<SubState: Sendable>(
        state keyPath: WritableKeyPath<State, SubState> & Sendable
    ) -> Store<Action, SubState, Environment> {
        derived(state: { $0[keyPath: keyPath] }, environment: environment, send: sendAction)
    }

    /// A store of one case of an enum state (`\.loggedIn` on a `@CasePathable` enum), for a
    /// child view: its state is the case's value, or `nil` while the state is in another case.
    ///
    /// Upstream calls this `caseMap(state:)`; combine it with ``optionalize()`` to get a store
    /// of the case's value itself.
    ///
    /// - Parameter casePath: The case.
    /// - Returns: A store whose state is the case's value, or `nil`.
    public func map<SubState: Sendable>(
        state casePath: CaseKeyPath<State, SubState> & Sendable
    ) -> Store<Action, SubState?, Environment> where State: CasePathable {
        derived(state: { $0[case: casePath] }, environment: environment, send: sendAction)
    }

    /// A store that takes a child's actions and sends them embedded into this store's
    /// (`\.counter` on a `@CasePathable` action enum).
    ///
    /// - Parameter casePath: The case of this store's action that carries the child's.
    /// - Returns: A store of the child's actions, with this store's state.
    public func contramap<SubAction: Sendable>(
        action casePath: CaseKeyPath<Action, SubAction> & Sendable
    ) -> Store<SubAction, State, Environment> where Action: CasePathable {
        contramap(action: { casePath($0) })
    }

    /// A store that takes other actions and sends them turned into this store's by `embed`.
    ///
    /// - Parameter embed: Turns an action of the new store into one of this store's.
    /// - Returns: A store of the new actions, with this store's state.
    public func contramap<SubAction: Sendable>(
        action embed: @escaping @Sendable (SubAction) -> Action
    ) -> Store<SubAction, State, Environment> {
        let send = sendAction
        return derived(state: { $0 }, environment: environment) { action, priority, tracksFeedbacks in
            send(embed(action), priority, tracksFeedbacks)
        }
    }

    /// A child store for a field of the state and a case of the action at once: `map(state:)`
    /// then `contramap(action:)`.
    ///
    /// - Parameters:
    ///   - keyPath: The field of the state.
    ///   - casePath: The case of the action that carries the child's.
    /// - Returns: The child's store.
    public func scope<SubState: Sendable, SubAction: Sendable>(
        state keyPath: WritableKeyPath<State, SubState> & Sendable,
        action casePath: CaseKeyPath<Action, SubAction> & Sendable
    ) -> Store<SubAction, SubState, Environment> where Action: CasePathable {
        map(state: keyPath).contramap(action: casePath)
    }

    /// A store with another environment, for a view that needs only part of it.
    ///
    /// - Parameter transform: Makes the new environment from this store's.
    /// - Returns: A store with the new environment, this store's state and actions.
    public func map<SubEnvironment: Sendable>(
        environment transform: (Environment) -> SubEnvironment
    ) -> Store<Action, State, SubEnvironment> {
        derived(state: { $0 }, environment: transform(environment), send: sendAction)
    }

    /// This store without its environment, for a view that needs none.
    public var noEnvironment: Store<Action, State, Void> {
        map(environment: { _ in () })
    }

    /// A store of the wrapped state while it is not `nil`; `nil` now if it is.
    ///
    /// The store keeps the last non-`nil` value while the state is `nil` (a view on its way out
    /// still has something to show).
    ///
    /// - Returns: A store of the wrapped state, or `nil`.
    public func optionalize<Wrapped: Sendable>() -> Store<Action, Wrapped, Environment>? where State == Wrapped? {
        guard let initial = currentStateForChildren else { return nil }
        let child = Store<Action, Wrapped, Environment>(
            state: initial, environment: environment, source: self, send: sendAction
        )
        addChild(child) { [weak child] state, parentIsUnchanged in
            guard let state else { return }
            child?.apply(state, parentIsUnchanged: parentIsUnchanged)
        }
        return child
    }

    /// A store whose state is `get` of this store's, kept up to date, sending through `send`.
    private func derived<SubAction: Sendable, SubState: Sendable, SubEnvironment: Sendable>(
        state get: @escaping (State) -> SubState,
        environment: SubEnvironment,
        send: @escaping @MainActor (SubAction, TaskPriority?, Bool) -> Task<Void, Error>
    ) -> Store<SubAction, SubState, SubEnvironment> {
        let child = Store<SubAction, SubState, SubEnvironment>(
            state: get(currentStateForChildren), environment: environment, source: self, send: send
        )
        addChild(child) { [weak child] state, parentIsUnchanged in
            child?.apply(get(state), parentIsUnchanged: parentIsUnchanged)
        }
        return child
    }
}
