/// A state machine: holds a state, runs a reducer on each action, and hands the reducer's
/// output to an effect manager.
///
/// The machine is generic over both its reducer and its effect manager, so `send` is
/// statically dispatched: with a struct reducer and ``NoOpEffectManager`` it compiles to the
/// same code as a hand-written `switch`.
///
/// ```swift
/// var machine = MealyMachine(state: 0, reducer: counter)
/// machine.send(.increment)
/// machine.state // 1
/// ```
public struct MealyMachine<Reducer: MealyReducerProtocol, Manager: EffectManager>
where Manager.Action == Reducer.Action, Manager.Output == Reducer.Output {
    /// The current state. Setting it replaces the state without running the reducer, e.g. to
    /// restore a snapshot.
    public var state: Reducer.State
    /// The transition function.
    public let reducer: Reducer
    /// The dependencies handed to every reducer call.
    public let environment: Reducer.Environment
    /// What the reducer's output is handed to.
    public var effectManager: Manager

    /// Creates a machine in `state`.
    @inlinable
    public init(
        state: Reducer.State,
        reducer: Reducer,
        environment: Reducer.Environment,
        effectManager: Manager
    ) {
        self.state = state
        self.reducer = reducer
        self.environment = environment
        self.effectManager = effectManager
    }

    /// Runs `action` and every action the effect manager feeds back, then returns the
    /// manager's result: nothing for ``NoOpEffectManager``, a ``FeedbackResult`` for
    /// ``ActionEffectManager``, the output for ``ReplyEffectManager``.
    @inlinable
    @discardableResult
    public mutating func send(_ action: Reducer.Action) -> Manager.SendResult {
        var action = action
        while true {
            let output = reducer.reduce(action, into: &state, environment: environment)
            guard let next = effectManager.handle(output) else { break }
            action = next
        }
        return effectManager.finishSend()
    }
}

extension MealyMachine where Reducer.Environment == Void {
    /// Creates a machine whose reducer needs no environment.
    @inlinable
    public init(state: Reducer.State, reducer: Reducer, effectManager: Manager) {
        self.init(state: state, reducer: reducer, environment: (), effectManager: effectManager)
    }
}

extension MealyMachine where Manager == NoOpEffectManager<Reducer.Action> {
    /// Creates a machine for a pure reducer (output `Void`).
    @inlinable
    public init(state: Reducer.State, reducer: Reducer, environment: Reducer.Environment) {
        self.init(state: state, reducer: reducer, environment: environment, effectManager: NoOpEffectManager())
    }
}

extension MealyMachine where Manager == NoOpEffectManager<Reducer.Action>, Reducer.Environment == Void {
    /// Creates a machine for a pure reducer (output `Void`) that needs no environment.
    @inlinable
    public init(state: Reducer.State, reducer: Reducer) {
        self.init(state: state, reducer: reducer, environment: (), effectManager: NoOpEffectManager())
    }
}

extension MealyMachine: Sendable
where Reducer: Sendable, Reducer.State: Sendable, Reducer.Environment: Sendable, Manager: Sendable {}
