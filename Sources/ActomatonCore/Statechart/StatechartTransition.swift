/// What makes a ``StatechartTransition`` fire.
public enum StatechartTrigger<StateID: StatechartStateID, Event: Sendable>: Sendable {
    /// An event that `pattern` matches: one exact event, or every event a predicate accepts.
    case event(TransitionPattern<Event>)
    /// The done event of a compound or parallel state: raised when a compound state enters a
    /// final child, or when a final state is entered in a region of a parallel state and every
    /// region is then in a final state (not when a nested parallel region finishes last: the
    /// chart's rules, ``Statechart``, as SCXML has them). When the
    /// done event is an event of the chart's type (``StatechartNode/doneEvent``), event
    /// triggers that match it can take it too.
    case done(StateID)
    /// No event: the transition is taken as soon as its guard holds, after each step
    /// (SCXML's eventless transition).
    case always
}

/// Whether a transition leaves its source state.
public enum StatechartTransitionKind: Sendable {
    /// The transition exits its source and enters its targets, running exit and entry actions,
    /// even when a target is the source itself or inside it.
    case external
    /// When the source is a compound state and every target is inside it, the source stays
    /// active: only the states inside it are exited and entered. Otherwise — a parallel or
    /// atomic source, or a target outside the source or the source itself — it behaves as
    /// ``external`` (SCXML's rule).
    case `internal`
}

/// A transition of a statechart state: its trigger, an optional guard, its targets, and the
/// outputs it emits when taken.
///
/// Write transitions with the static functions:
///
/// ```swift
/// .on(.jump, to: .jumping, outputs: [.playJumpSound])
/// .on(where: { if case .move(let speed) = $0 { speed > 5 } else { false } }, to: .running)
/// .on(.tick, outputs: [.animate])               // no target: stays put, no exit or entry
/// .onDone(.attack, to: .idle)                   // when .attack reaches a final state
/// .always(to: .falling, when: { !$0.isIn(.ground) })
/// .on(.land, to: .idle, raise: [.landed])       // queues `.landed` as an internal event
/// .on(.fire, when: { $0.context.rounds > 0 }, actions: [.assign { $0.rounds -= 1 }])
/// ```
///
/// A guard (`when:`) reads the whole ``StatechartState``: the configuration
/// (``StatechartState/isIn(_:)``) and the context (``StatechartState/context``).
public struct StatechartTransition<StateID: StatechartStateID, Event: Sendable, Output> {
    /// What fires the transition.
    public var trigger: StatechartTrigger<StateID, Event>
    /// The states the transition enters; empty for a targetless transition, which only emits
    /// its outputs.
    public var targets: [StateID]
    /// External or internal.
    public var kind: StatechartTransitionKind
    /// A condition on the state before the transition, or `nil` for none.
    public var condition: (@Sendable (StatechartState<StateID>) -> Bool)?
    /// Whether ``condition`` may read the context: `true` unless
    /// ``guardReadsConfigurationOnly()`` said otherwise.
    public var conditionReadsContext = true
    /// What the transition emits, after the exit actions and before the entry actions.
    public var outputs: [Output]
    /// The internal events the transition raises (SCXML's `<raise>`), in order: they are queued
    /// behind the events already waiting and taken, one microstep each, before the step ends.
    public var raise: [Event]
    /// What the transition does after its outputs and raised events, in order: update the
    /// context, emit outputs computed from it, raise events, choose by guards.
    public var actions: [StatechartAction<StateID, Event, Output>]
    /// How diagrams and reports name the trigger, or `nil` for the event's own name (which a
    /// predicate trigger does not have).
    public var label: String?

    /// Creates a transition.
    public init(
        trigger: StatechartTrigger<StateID, Event>,
        targets: [StateID],
        kind: StatechartTransitionKind = .external,
        condition: (@Sendable (StatechartState<StateID>) -> Bool)? = nil,
        outputs: [Output] = [],
        raise: [Event] = [],
        actions: [StatechartAction<StateID, Event, Output>] = [],
        label: String? = nil
    ) {
        self.trigger = trigger
        self.targets = targets
        self.kind = kind
        self.condition = condition
        self.outputs = outputs
        self.raise = raise
        self.actions = actions
        self.label = label
    }

    /// A transition on exactly `event`.
    public static func on(
        _ event: Event,
        to target: StateID? = nil,
        kind: StatechartTransitionKind = .external,
        when condition: (@Sendable (StatechartState<StateID>) -> Bool)? = nil,
        outputs: [Output] = [],
        raise: [Event] = [],
        actions: [StatechartAction<StateID, Event, Output>] = []
    ) -> Self where Event: Equatable {
        Self(trigger: .event(TransitionPattern(event)), targets: target.map { [$0] } ?? [],
             kind: kind, condition: condition, outputs: outputs, raise: raise, actions: actions)
    }

    /// A transition on every event `predicate` accepts: for events that carry values. `label`
    /// names the trigger in diagrams and reports.
    public static func on(
        where predicate: @escaping @Sendable (Event) -> Bool,
        label: String? = nil,
        to target: StateID? = nil,
        kind: StatechartTransitionKind = .external,
        when condition: (@Sendable (StatechartState<StateID>) -> Bool)? = nil,
        outputs: [Output] = [],
        raise: [Event] = [],
        actions: [StatechartAction<StateID, Event, Output>] = []
    ) -> Self {
        Self(trigger: .event(TransitionPattern(where: predicate)), targets: target.map { [$0] } ?? [],
             kind: kind, condition: condition, outputs: outputs, raise: raise, actions: actions, label: label)
    }

    /// A transition on exactly `event` to several targets at once, one per region of a
    /// parallel state.
    public static func on(
        _ event: Event,
        toAll targets: [StateID],
        kind: StatechartTransitionKind = .external,
        when condition: (@Sendable (StatechartState<StateID>) -> Bool)? = nil,
        outputs: [Output] = [],
        raise: [Event] = [],
        actions: [StatechartAction<StateID, Event, Output>] = []
    ) -> Self where Event: Equatable {
        Self(trigger: .event(TransitionPattern(event)), targets: targets, kind: kind, condition: condition, outputs: outputs, raise: raise, actions: actions)
    }

    /// A transition on the done event of `state`: when the compound `state` enters a final
    /// child, or every region of the parallel `state` is in a final state.
    public static func onDone(
        _ state: StateID,
        to target: StateID? = nil,
        kind: StatechartTransitionKind = .external,
        when condition: (@Sendable (StatechartState<StateID>) -> Bool)? = nil,
        outputs: [Output] = [],
        raise: [Event] = [],
        actions: [StatechartAction<StateID, Event, Output>] = []
    ) -> Self {
        Self(trigger: .done(state), targets: target.map { [$0] } ?? [], kind: kind, condition: condition, outputs: outputs, raise: raise, actions: actions)
    }

    /// An eventless transition: taken whenever its source is active and `condition` holds, at
    /// the end of each step.
    public static func always(
        to target: StateID? = nil,
        kind: StatechartTransitionKind = .external,
        when condition: (@Sendable (StatechartState<StateID>) -> Bool)? = nil,
        outputs: [Output] = [],
        raise: [Event] = [],
        actions: [StatechartAction<StateID, Event, Output>] = []
    ) -> Self {
        Self(trigger: .always, targets: target.map { [$0] } ?? [], kind: kind, condition: condition, outputs: outputs, raise: raise, actions: actions)
    }

    /// A transition on any event `predicate` accepts, to several targets at once, one per
    /// region of a parallel state.
    public static func on(
        where predicate: @escaping @Sendable (Event) -> Bool,
        label: String? = nil,
        toAll targets: [StateID],
        kind: StatechartTransitionKind = .external,
        when condition: (@Sendable (StatechartState<StateID>) -> Bool)? = nil,
        outputs: [Output] = [],
        raise: [Event] = [],
        actions: [StatechartAction<StateID, Event, Output>] = []
    ) -> Self {
        Self(trigger: .event(TransitionPattern(where: predicate)), targets: targets, kind: kind, condition: condition, outputs: outputs,
             raise: raise, actions: actions, label: label)
    }

    /// A transition on the done event of `state`, to several targets at once, one per region
    /// of a parallel state.
    public static func onDone(
        _ state: StateID,
        toAll targets: [StateID],
        kind: StatechartTransitionKind = .external,
        when condition: (@Sendable (StatechartState<StateID>) -> Bool)? = nil,
        outputs: [Output] = [],
        raise: [Event] = [],
        actions: [StatechartAction<StateID, Event, Output>] = []
    ) -> Self {
        Self(trigger: .done(state), targets: targets, kind: kind, condition: condition, outputs: outputs, raise: raise, actions: actions)
    }

    /// An eventless transition to several targets at once, one per region of a parallel state.
    public static func always(
        toAll targets: [StateID],
        kind: StatechartTransitionKind = .external,
        when condition: (@Sendable (StatechartState<StateID>) -> Bool)? = nil,
        outputs: [Output] = [],
        raise: [Event] = [],
        actions: [StatechartAction<StateID, Event, Output>] = []
    ) -> Self {
        Self(trigger: .always, targets: targets, kind: kind, condition: condition, outputs: outputs, raise: raise, actions: actions)
    }
}

extension StatechartTransition: Sendable where Output: Sendable {}

extension StatechartTransition {
    /// A transition's condition, held in a struct so a built chart can keep them in an array
    /// and call them without a reabstraction thunk.
    @usableFromInline
    struct Condition: Sendable {
        @usableFromInline let holds: @Sendable (StatechartState<StateID>) -> Bool

        @usableFromInline
        init(holds: @escaping @Sendable (StatechartState<StateID>) -> Bool) {
            self.holds = holds
        }
    }

    /// The transition, saying that its guard reads only the configuration (`isIn(_:)`), never
    /// the context: a chart compiled with its context at run time
    /// (``Statechart/compiledEvaluatingContext(events:stateLimit:pathLimit:classifiedBy:)``)
    /// then answers it while compiling, and no event tests it at run time.
    ///
    /// ```swift
    /// .on(.fire, when: { !$0.isIn(.stunned) }, outputs: [.click]).guardReadsConfigurationOnly()
    /// ```
    ///
    /// The compiler cannot check the claim: a guard so marked that reads the context is asked
    /// with the context the chart started with. The interpreted chart and
    /// ``Statechart/compiled(events:stateLimit:classifiedBy:)`` ignore the mark.
    public func guardReadsConfigurationOnly() -> Self {
        var transition = self
        transition.conditionReadsContext = false
        return transition
    }
}
