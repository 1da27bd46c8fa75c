/// Why a ``Statechart`` could not be built from its definition.
///
/// A start that does not settle (eventless transitions or raised events that loop) is not
/// one: the chart is built, and ``Statechart/initialStatus`` says where its start stopped.
public enum StatechartError<StateID: StatechartStateID>: Error, Equatable {
    /// A state's raw value is outside `0..<128` (``StatechartStateSet/capacity``).
    case rawValueOutOfRange(Int)
    /// A state appears twice in the definition.
    case duplicateState(StateID)
    /// A transition, an `initial` or a history default names a state that is not in the chart.
    case unknownState(StateID)
    /// A compound or parallel state has no child that is a state (history states do not count).
    case noChildren(StateID)
    /// A compound state's `initial` is neither one of its descendants nor one of its own
    /// history states (another state's history state is not).
    case initialNotDescendant(state: StateID, initial: StateID)
    /// The chart's `initial` names a history state: the chart starts in states.
    case historyAsChartInitial(StateID)
    /// A history state's default is not a state inside the history state's parent (a history
    /// state is not one).
    case historyDefaultNotDescendant(history: StateID, target: StateID)
    /// A history state is at the top of the chart, where it has no parent to remember.
    case historyAtTopLevel(StateID)
    /// A transition's targets cannot all be active at once (two of them are in the same
    /// compound state, or one is inside another).
    case conflictingTargets(source: StateID, targets: [StateID])
    /// A chart's or a compound state's initial states cannot all be active at once (two of
    /// them are in the same compound state, or one is inside another).
    case conflictingInitials([StateID])
    /// A history state is its parent's initial state but has no default of its own, for the
    /// first time, when there is nothing to resume.
    case historyWithoutDefault(StateID)
    /// A `done` trigger names a state that is neither compound nor parallel, so it never
    /// raises a done event.
    case doneOfStateWithoutChildren(StateID)
    /// An atomic or final state was given children, or a final or history state transitions;
    /// or a state that is neither compound nor history was given initial targets or actions,
    /// or a history state entry or exit actions; or a state other than a final one inside a
    /// compound state or a parallel one was given a done event.
    case misplacedContent(StateID)
    /// The microstep limit is outside `1...10_000`.
    case microstepLimitOutOfRange(Int)
    /// The raised-event limit is outside `1...1_000`.
    case raisedEventLimitOutOfRange(Int)
    /// The chart has no state.
    case empty
    /// A final state is a child of a parallel state (SCXML allows one only at the top or in
    /// a compound state): a region that is one final state would make its parallel state
    /// done at once, whatever its other regions.
    case finalInParallel(StateID)
    /// The chart has more transitions than ``Statechart/transitionLimit``.
    case tooManyTransitions(Int)
}

extension StatechartError: CustomStringConvertible {
    /// One line naming the problem and the states involved.
    public var description: String {
        switch self {
        case let .rawValueOutOfRange(raw):
            "state raw value \(raw) is outside 0..<\(StatechartStateSet.capacity); a chart holds at most \(StatechartStateSet.capacity) states"
        case let .duplicateState(state):
            "state \(Self.name(state)) appears twice in the chart"
        case let .unknownState(state):
            "state \(Self.name(state)) is named by a transition or an initial but is not in the chart"
        case let .noChildren(state):
            "compound or parallel state \(Self.name(state)) has no child state"
        case let .initialNotDescendant(state, initial):
            "the initial state \(Self.name(initial)) of \(Self.name(state)) is neither inside it nor one of its own history states"
        case let .historyAsChartInitial(state):
            "the chart's initial state \(Self.name(state)) is a history state; the chart starts in states, not history states"
        case let .historyDefaultNotDescendant(history, target):
            "the default \(Self.name(target)) of history state \(Self.name(history)) is not a state inside its parent (a history state is not)"
        case let .historyAtTopLevel(state):
            "history state \(Self.name(state)) is at the top of the chart; it must be inside a compound or parallel state"
        case let .conflictingTargets(source, targets):
            "a transition of \(Self.name(source)) targets states that cannot be active together: \(targets.map { Self.name($0) }.joined(separator: ", "))"
        case let .conflictingInitials(states):
            "initial states that cannot be active together: \(states.map { Self.name($0) }.joined(separator: ", "))"
        case let .historyWithoutDefault(state):
            "history state \(Self.name(state)) is its parent's initial state, so it needs a default of its own"
        case let .doneOfStateWithoutChildren(state):
            "a done transition waits for \(Self.name(state)), which has no children and so is never done"
        case let .misplacedContent(state):
            "state \(Self.name(state)) has content its kind cannot have: children (atomic, final, history), transitions (final, history), initial targets or actions (all but compound and history), entry or exit content (history) or a done event (all but parallel and final below the top)"
        case let .microstepLimitOutOfRange(limit):
            "microstep limit \(limit) is outside 1...10000"
        case let .raisedEventLimitOutOfRange(limit):
            "raised-event limit \(limit) is outside 1...1000"
        case .empty:
            "the chart has no state"
        case let .finalInParallel(state):
            "final state \(Self.name(state)) is a child of a parallel state; put it in a compound state (a region) of its own"
        case let .tooManyTransitions(count):
            "the chart has \(count) transitions; a chart holds at most \(Statechart<StateID, Never, Never>.transitionLimit)"
        }
    }

    static func name(_ state: StateID) -> String {
        #if hasFeature(Embedded)
        "#\(state.rawValue)"
        #else
        String(describing: state)
        #endif
    }
}
