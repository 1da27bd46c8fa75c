// Key-path and case-path forms of the core's closure-based composition.

extension MealyReducer {
    /// Lifts the reducer to a larger state through a writable key path; the part is modified in
    /// place.
    @inlinable
    public func contramap<GlobalState>(
        state keyPath: WritableKeyPath<GlobalState, State> & Sendable
    ) -> MealyReducer<Action, GlobalState, Environment, Output> {
        contramap(state: StateLens(get: { $0[keyPath: keyPath] }, modify: { whole, body in body(&whole[keyPath: keyPath]) }))
    }
}

extension MealyReducer where Output: ReducerOutput {
    /// Lifts the reducer to an optional field of a larger state; it does nothing while the
    /// field is `nil`.
    @inlinable
    public func contramap<GlobalState>(
        state keyPath: WritableKeyPath<GlobalState, State?> & Sendable
    ) -> MealyReducer<Action, GlobalState, Environment, Output> {
        optional().contramap(state: keyPath)
    }

    /// Lifts the reducer to one case of an enum state (`\.playing` on a `@CasePathable` enum);
    /// in other cases it does nothing.
    @inlinable
    public func contramap<GlobalState: CasePathable & SendableMetatype>(
        state casePath: CaseKeyPath<GlobalState, State> & Sendable
    ) -> MealyReducer<Action, GlobalState, Environment, Output> {
        contramap(state: StatePrism(extract: { $0[case: casePath] }, embed: { casePath($0) }))
    }

    /// Lifts the reducer to one case of an enum state through an `AnyCasePath`
    /// (`/State.playing`); in other cases it does nothing.
    @inlinable
    public func contramap<GlobalState>(
        state casePath: AnyCasePath<GlobalState, State>
    ) -> MealyReducer<Action, GlobalState, Environment, Output> {
        contramap(state: StatePrism(extract: { casePath.extract(from: $0) }, embed: { casePath.embed($0) }))
    }
}

extension MealyReducer where Output == Effect<Action> {
    /// Lifts the reducer to a global action through a case path (`\.counter` on a
    /// `@CasePathable` enum): other actions are ignored, and the actions its effects produce
    /// are embedded back into the global action.
    @inlinable
    public func contramap<GlobalAction: CasePathable & Sendable>(
        action casePath: CaseKeyPath<GlobalAction, Action> & Sendable
    ) -> Reducer<GlobalAction, State, Environment> {
        contramap(action: { $0[case: casePath] }, embed: { casePath($0) })
    }

    /// Lifts the reducer to a global action through an `AnyCasePath` (`/Action.counter`):
    /// other actions are ignored, and the actions its effects produce are embedded back.
    @inlinable
    public func contramap<GlobalAction: Sendable>(
        action casePath: AnyCasePath<GlobalAction, Action>
    ) -> Reducer<GlobalAction, State, Environment> {
        contramap(action: { casePath.extract(from: $0) }, embed: { casePath.embed($0) })
    }

    /// Lifts the reducer to a global action through an extract / embed pair: `extract` returns
    /// this reducer's action or `nil`, `embed` turns the actions its effects produce back into
    /// global actions.
    @inlinable
    public func contramap<GlobalAction: Sendable>(
        action extract: @escaping @Sendable (GlobalAction) -> Action?,
        embed: @escaping @Sendable (Action) -> GlobalAction
    ) -> Reducer<GlobalAction, State, Environment> {
        .init { globalAction, state, environment in
            guard let action = extract(globalAction) else { return .empty }
            return self.run(action, &state, environment).map(embed)
        }
    }
}
