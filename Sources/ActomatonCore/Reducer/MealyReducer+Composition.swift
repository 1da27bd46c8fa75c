// Composition: run several reducers in order, and lift a local reducer into a global one.
//
// Operators that may skip the reducer (an action or a state case that is not its own) need an
// output that means "nothing": they come in two forms, for `ReducerOutput` outputs and for `Void`.
//
// Which operators need what output:
// - `combine`, `contramap(action:)`, `contramap(state:)` with a `StatePrism`, and `optional()`:
//   the output is `Void` or conforms to `ReducerOutput` (`[Action]`, `Feedback`, `Effect`,
//   `PluginEffect`). Any other output (an optional, a `TransitionReply`, your own type) must be
//   turned into one with `map(output:)` first.
// - `contramap(state:)` with a `StateLens`, `contramap(environment:)` and `map(output:)`: any output.

extension MealyReducer where Output: ReducerOutput {
    /// Runs `reducers` in order on the same action and state, combining their outputs in order.
    ///
    /// Needs an output that conforms to ``ReducerOutput`` (or `Void`, with its own overload);
    /// `map(output:)` a reducer with another output into one first.
    @inlinable
    public static func combine(_ reducers: MealyReducer...) -> MealyReducer {
        combine(reducers)
    }

    /// Runs `reducers` in order on the same action and state, combining their outputs in order.
    @inlinable
    public static func combine(_ reducers: [MealyReducer]) -> MealyReducer {
        MealyReducer { action, state, environment in
            var output = Output.empty
            for reducer in reducers {
                output = output + reducer.run(action, &state, environment)
            }
            return output
        }
    }

    /// Lifts the reducer to a global action: `extract` returns this reducer's action, or `nil`
    /// for actions that are not for it (then it returns ``ReducerOutput/empty`` and leaves the
    /// state alone).
    ///
    /// Needs an output that conforms to ``ReducerOutput`` (or `Void`, with its own overload),
    /// because a skipped action must return something that means "nothing". A reducer whose
    /// output is an optional or a ``TransitionReply`` must be `map(output:)`ed into such an
    /// output first, or the compiler reports that the generic parameter cannot be inferred:
    ///
    /// ```swift
    /// let doorReducer = doorTable.reducer
    ///     .map(output: { reply in reply.output.map { [$0] } ?? [] }) // [String] is a ReducerOutput
    ///     .contramap(action: { (action: AppAction) in
    ///         if case let .door(input) = action { input } else { nil }
    ///     })
    /// ```
    @inlinable
    public func contramap<GlobalAction>(
        action extract: @escaping @Sendable (GlobalAction) -> Action?
    ) -> MealyReducer<GlobalAction, State, Environment, Output> {
        .init { globalAction, state, environment in
            guard let action = extract(globalAction) else { return .empty }
            return self.run(action, &state, environment)
        }
    }

    /// Lifts the reducer to a state that is in this reducer's case only some of the time;
    /// in other cases it returns ``ReducerOutput/empty`` and leaves the state alone.
    @inlinable
    public func contramap<GlobalState>(
        state prism: StatePrism<GlobalState, State>
    ) -> MealyReducer<Action, GlobalState, Environment, Output> {
        .init { action, globalState, environment in
            guard var state = prism.extract(globalState) else { return .empty }
            let output = self.run(action, &state, environment)
            globalState = prism.embed(state)
            return output
        }
    }

    /// Lifts the reducer to an optional state; it does nothing while the state is `nil`.
    @inlinable
    public func optional() -> MealyReducer<Action, State?, Environment, Output> {
        contramap(state: .some)
    }
}

extension MealyReducer where Output == Void {
    /// Runs `reducers` in order on the same action and state.
    @inlinable
    public static func combine(_ reducers: MealyReducer...) -> MealyReducer {
        combine(reducers)
    }

    /// Runs `reducers` in order on the same action and state.
    @inlinable
    public static func combine(_ reducers: [MealyReducer]) -> MealyReducer {
        MealyReducer { action, state, environment in
            for reducer in reducers {
                reducer.run(action, &state, environment)
            }
        }
    }

    /// Lifts the reducer to a global action: `extract` returns this reducer's action, or `nil`
    /// for actions that are not for it (then the state is left alone).
    @inlinable
    public func contramap<GlobalAction>(
        action extract: @escaping @Sendable (GlobalAction) -> Action?
    ) -> MealyReducer<GlobalAction, State, Environment, Void> {
        .init { globalAction, state, environment in
            guard let action = extract(globalAction) else { return }
            self.run(action, &state, environment)
        }
    }

    /// Lifts the reducer to a state that is in this reducer's case only some of the time;
    /// in other cases the state is left alone.
    @inlinable
    public func contramap<GlobalState>(
        state prism: StatePrism<GlobalState, State>
    ) -> MealyReducer<Action, GlobalState, Environment, Void> {
        .init { action, globalState, environment in
            guard var state = prism.extract(globalState) else { return }
            self.run(action, &state, environment)
            globalState = prism.embed(state)
        }
    }

    /// Lifts the reducer to an optional state; it does nothing while the state is `nil`.
    @inlinable
    public func optional() -> MealyReducer<Action, State?, Environment, Void> {
        contramap(state: .some)
    }
}

extension MealyReducer {
    /// Lifts the reducer to a larger state through a lens; the part is modified in place.
    @inlinable
    public func contramap<GlobalState>(
        state lens: StateLens<GlobalState, State>
    ) -> MealyReducer<Action, GlobalState, Environment, Output> {
        .init { action, globalState, environment in
            var output: Output?
            lens.modify(&globalState) { state in
                output = self.run(action, &state, environment)
            }
            guard let output else {
                fatalError("StateLens.modify must call its body exactly once")
            }
            return output
        }
    }

    /// Lifts the reducer to a larger environment: `toLocal` picks this reducer's dependencies.
    @inlinable
    public func contramap<GlobalEnvironment>(
        environment toLocal: @escaping @Sendable (GlobalEnvironment) -> Environment
    ) -> MealyReducer<Action, State, GlobalEnvironment, Output> {
        .init { action, state, globalEnvironment in
            self.run(action, &state, toLocal(globalEnvironment))
        }
    }

    /// Transforms every output, e.g. to adapt a reducer to another effect manager.
    @inlinable
    public func map<NewOutput>(
        output transform: @escaping @Sendable (Output) -> NewOutput
    ) -> MealyReducer<Action, State, Environment, NewOutput> {
        .init { action, state, environment in
            transform(self.run(action, &state, environment))
        }
    }
}
