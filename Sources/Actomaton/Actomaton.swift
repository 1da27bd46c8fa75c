/// An actor-isolated state machine whose reducer returns `Effect`s, run as Swift Concurrency
/// tasks by an `EffectQueueManager`.
///
/// ```swift
/// let actomaton = Actomaton<Action, State>(state: State(), reducer: reducer)
/// await actomaton.send(.increment)
/// await actomaton.state.count // 1
/// ```
///
/// The reducer is any `MealyReducerProtocol` whose output is `Effect<Action>`: a ``Reducer``
/// (a closure, with the composition operators), or a struct whose `reduce` the actor calls
/// statically dispatched, with no closure in between.
///
/// Effect IDs and queues are scoped to one `Actomaton`. Running effects hold it weakly: when
/// the last reference to it goes, every effect still running is cancelled. Failures no caller
/// sees (an effect's thrown error, a feedback loop cut off) go to its `onFailure` handler;
/// see `EffectFailure`.
public actor Actomaton<Action: Sendable, State: Sendable> {
    /// The machine, behind what the actor does with it; see ``ErasedMachine``.
    @usableFromInline
    let machine: ErasedMachine<Action, State>
    @usableFromInline
    let effects: EffectQueueManager<Action>
    /// The subscribers of ``states``, by number; empty (and never allocated) while nobody
    /// observes the machine, so a send then costs one emptiness check. See
    /// `Actomaton+States.swift`.
    @usableFromInline
    var stateObservers: [UInt64: AsyncStream<StateUpdate<State>>.Continuation] = [:]
    /// The number of the last state handed to the subscribers of ``states``; counts only while
    /// there are subscribers.
    @usableFromInline
    var stateGeneration: UInt64 = 0
    /// The number the next subscriber of ``states`` gets.
    var nextStateObserverID: UInt64 = 0

    /// Wraps a machine made in the caller's module; the public initializers make it.
    @usableFromInline
    init(machine: ErasedMachine<Action, State>, effects: EffectQueueManager<Action>) {
        self.machine = machine
        self.effects = effects
        effects.connect(to: self)
    }

    /// Creates a machine in `state` running `reducer`, with `environment` handed to every
    /// reducer call.
    ///
    /// `reducer` is any `MealyReducerProtocol` whose output is `Effect<Action>`. A struct
    /// reducer is called statically dispatched, specialised in your module; a ``Reducer``
    /// through its closure.
    ///
    /// ```swift
    /// struct Counter: MealyReducerProtocol {
    ///     func reduce(_ action: CounterAction, into count: inout Int, environment: Void) -> Effect<CounterAction> {
    ///         count += 1
    ///         return .empty
    ///     }
    /// }
    /// let actomaton = Actomaton(state: 0, reducer: Counter())
    /// ```
    ///
    /// - Parameters:
    ///   - state: The state the machine starts in.
    ///   - reducer: The transition function; its output is the `Effect` to run.
    ///   - environment: The dependencies handed to every reducer call.
    ///   - clock: What effects sleep on (`context.clock`) and what queue delays are measured
    ///     with. Tests pass a test clock.
    ///   - onFailure: Receives the failures no caller sees; by default each is a line on
    ///     standard error. See `EffectFailure` for routing them to a swift-log `Logger`.
    @_alwaysEmitIntoClient
    public init<R: MealyReducerProtocol & Sendable>(
        state: State,
        reducer: R,
        environment: R.Environment,
        clock: some Clock<Duration> = ContinuousClock(),
        onFailure: @escaping @Sendable (EffectFailure) -> Void = EffectFailure.writeToStandardError
    ) where R.Action == Action, R.State == State, R.Output == Effect<Action>, R.Environment: Sendable {
        let effects = EffectQueueManager<Action>(clock: clock, onFailure: onFailure)
        self.init(
            machine: ErasedMachine(MealyMachine(state: state, reducer: reducer, environment: environment, effectManager: effects)),
            effects: effects
        )
    }

    /// Creates a machine in `state` running `reducer`, which needs no environment.
    ///
    /// - Parameters:
    ///   - state: The state the machine starts in.
    ///   - reducer: The transition function; its output is the `Effect` to run.
    ///   - clock: What effects sleep on (`context.clock`) and what queue delays are measured
    ///     with. Tests pass a test clock.
    ///   - onFailure: Receives the failures no caller sees; see `EffectFailure`.
    @_alwaysEmitIntoClient
    public init<R: MealyReducerProtocol & Sendable>(
        state: State,
        reducer: R,
        clock: some Clock<Duration> = ContinuousClock(),
        onFailure: @escaping @Sendable (EffectFailure) -> Void = EffectFailure.writeToStandardError
    ) where R.Action == Action, R.State == State, R.Output == Effect<Action>, R.Environment == Void {
        self.init(state: state, reducer: reducer, environment: (), clock: clock, onFailure: onFailure)
    }

    /// Creates a machine in `state` running a ``Reducer``, with `environment` handed to every
    /// reducer call.
    ///
    /// - Parameters:
    ///   - state: The state the machine starts in.
    ///   - reducer: The transition function; its output is the `Effect` to run.
    ///   - environment: The dependencies handed to every reducer call.
    ///   - clock: What effects sleep on (`context.clock`) and what queue delays are measured
    ///     with. Tests pass a test clock.
    ///   - onFailure: Receives the failures no caller sees; see `EffectFailure`.
    @_alwaysEmitIntoClient
    public init<Environment: Sendable>(
        state: State,
        reducer: Reducer<Action, State, Environment>,
        environment: Environment,
        clock: some Clock<Duration> = ContinuousClock(),
        onFailure: @escaping @Sendable (EffectFailure) -> Void = EffectFailure.writeToStandardError
    ) {
        let effects = EffectQueueManager<Action>(clock: clock, onFailure: onFailure)
        self.init(
            machine: ErasedMachine(MealyMachine(state: state, reducer: reducer, environment: environment, effectManager: effects)),
            effects: effects
        )
    }

    /// Creates a machine in `state` running a ``Reducer`` that needs no environment.
    ///
    /// - Parameters:
    ///   - state: The state the machine starts in.
    ///   - reducer: The transition function; its output is the `Effect` to run.
    ///   - clock: What effects sleep on (`context.clock`) and what queue delays are measured
    ///     with. Tests pass a test clock.
    ///   - onFailure: Receives the failures no caller sees; see `EffectFailure`.
    @_alwaysEmitIntoClient
    public init(
        state: State,
        reducer: Reducer<Action, State, Void>,
        clock: some Clock<Duration> = ContinuousClock(),
        onFailure: @escaping @Sendable (EffectFailure) -> Void = EffectFailure.writeToStandardError
    ) {
        self.init(state: state, reducer: reducer, environment: (), clock: clock, onFailure: onFailure)
    }

    deinit {
        effects.shutDown()
        for observer in stateObservers.values { observer.finish() }
    }

    /// How many effects are running or waiting in a queue.
    public var runningEffectCount: Int { effects.runningEffectCount }
}

// `send` and `state` are emitted into the caller's module, where they are specialised for its
// Action and State: a call to a generic actor's method is not specialised across modules, and
// unspecialised it spends most of its time looking up generic metadata (0.8 µs against 0.05 µs).
extension Actomaton {
    /// The current state.
    @_alwaysEmitIntoClient
    public var state: State { machine.state() }

    /// Runs `action` through the reducer and starts the effects it returns, with the effects'
    /// tasks at the default priority and not tracking feedbacks.
    ///
    /// The same as ``send(_:priority:tracksFeedbacks:)`` with its defaults, as an overload of
    /// its own: a default argument is computed by the caller, outside the actor, so a loop of
    /// sends through the other form hops off the actor and back for every one (with four tasks
    /// sending to one machine, 1.4x the time of a send in the `contended-send` benchmark, and
    /// 3–4x in a harness with the machine in a global).
    ///
    /// - Parameter action: The action to run.
    /// - Returns: A task that completes when every effect `action` started has completed, and
    ///   that cancels them when cancelled; `nil` when `action` started no effect. It throws
    ///   `CancellationError` if any of those effects was cancelled.
    @_alwaysEmitIntoClient
    @discardableResult
    public func send(_ action: Action) -> Task<Void, Error>? {
        let task = machine.send(action, .init())
        if !stateObservers.isEmpty { publishState() }
        return task
    }

    /// Runs `action` through the reducer and starts the effects it returns.
    ///
    /// - Parameters:
    ///   - action: The action to run.
    ///   - priority: The priority of the effects' tasks.
    ///   - tracksFeedbacks: When `true`, the returned task also waits for the effects of the
    ///     actions those effects send back, and theirs, transitively, and cancelling it cancels
    ///     them too. It changes nothing else: a sequence does not wait for the effects of one
    ///     action before sending the next, and an effect cancelled by its ID or a queue policy
    ///     leaves the effects its actions started running.
    /// - Returns: A task that completes when every effect `action` started has completed, and
    ///   that cancels them when cancelled; `nil` when `action` started no effect. It throws
    ///   `CancellationError` if any of those effects was cancelled (by this task, an effect ID
    ///   or a queue policy).
    @_alwaysEmitIntoClient
    @discardableResult
    public func send(
        _ action: Action,
        priority: TaskPriority? = nil,
        tracksFeedbacks: Bool = false
    ) -> Task<Void, Error>? {
        let task = machine.send(action, .init(priority: priority, tracksFeedbacks: tracksFeedbacks))
        if !stateObservers.isEmpty { publishState() }
        return task
    }
}

extension Actomaton: EffectQueueHost {
    /// Sends an action produced by one of this machine's effects; returns `nil`, since nothing
    /// awaits its effects' task.
    public func send(effectAction action: Action, tracksFeedbacks: Bool) -> Task<Void, Error>? {
        _ = machine.send(action, .init(tracksFeedbacks: tracksFeedbacks, returnsTask: false))
        if !stateObservers.isEmpty { publishState() }
        return nil
    }
}

/// An `Actomaton`'s machine, whatever its reducer's type, behind the two things the actor does
/// with it: send an action, read the state.
///
/// The actor's type names only `Action` and `State`, so it cannot hold a
/// `MealyMachine<SomeReducer, …>` directly. Its initializers, emitted into the caller's module
/// where the reducer's type is known, make these two closures there: `send` runs the machine
/// specialised for that reducer, so a struct reducer is inlined into it, with no closure box
/// around the reducer. The machine lives in a ``MachineBox`` the closures share; only the
/// actor calls them.
@usableFromInline
struct ErasedMachine<Action: Sendable, State> {
    /// Sets the options of the next send, then sends the action through the machine.
    @usableFromInline
    let send: (Action, EffectQueueManager<Action>.SendOptions) -> Task<Void, Error>?
    /// The machine's state.
    @usableFromInline
    let state: () -> State

    /// Wraps `machine`; emitted into the caller's module, where `R` is known.
    @_alwaysEmitIntoClient
    init<R: MealyReducerProtocol>(_ machine: MealyMachine<R, EffectQueueManager<Action>>)
    where R.Action == Action, R.State == State, R.Output == Effect<Action> {
        let box = MachineBox(machine)
        send = { action, options in
            box.machine.effectManager.sendOptions = options
            return box.machine.send(action)
        }
        state = { box.machine.state }
    }
}

/// Holds an `Actomaton`'s machine for ``ErasedMachine``'s closures.
@usableFromInline
final class MachineBox<R: MealyReducerProtocol> where R.Action: Sendable, R.Output == Effect<R.Action> {
    /// The machine; only the actor's closures touch it, on the actor.
    @usableFromInline
    var machine: MealyMachine<R, EffectQueueManager<R.Action>>

    /// Holds `machine`.
    @inlinable
    init(_ machine: MealyMachine<R, EffectQueueManager<R.Action>>) {
        self.machine = machine
    }
}
