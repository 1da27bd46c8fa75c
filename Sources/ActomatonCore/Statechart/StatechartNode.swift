/// Whether a history state resumes only its parent's last active child, or every descendant.
public enum StatechartHistoryDepth: Sendable {
    /// The parent's last active child, which then enters its own initial states.
    case shallow
    /// Every state that was active below the parent when it last exited.
    case deep
}

/// The kind of a state in a statechart.
public enum StatechartNodeKind: Sendable, Equatable {
    /// A state with no children.
    case atomic
    /// A state with children, exactly one of which is active while it is.
    case compound
    /// A state whose children (regions) are all active while it is.
    case parallel
    /// A final state: entering it raises its parent's done event.
    case final
    /// A pseudo-state that, as a transition target, resumes its parent's last active
    /// children; it is never active itself.
    case history(StatechartHistoryDepth)
}

/// One state of a statechart's definition, with its children and transitions: the tree a
/// ``Statechart`` is built from.
///
/// ```swift
/// .compound(.door, initial: .closed, children: [
///     .atomic(.closed, transitions: [.on(.open, to: .open)]),
///     .atomic(.open, onEntry: [.chime], transitions: [.on(.close, to: .closed)]),
/// ])
/// ```
///
/// Children and transitions are kept in document order: the order they are written in, which
/// decides priority.
public struct StatechartNode<StateID: StatechartStateID, Event: Sendable, Output> {
    /// The state's name.
    public var id: StateID
    /// What kind of state it is.
    public var kind: StatechartNodeKind
    /// For a compound state, the descendants entered by default (SCXML's `initial`: one, or one
    /// per region of a parallel descendant); empty means the first child. For a history state,
    /// the states entered when there is no history yet; empty means the parent's default.
    ///
    /// A compound state's targets may name one of its history states: the state then resumes
    /// what it remembers, and enters the history state's default the first time.
    public var initialTargets: [StateID]
    /// What the default entry does: for a compound state, the content of its initial transition
    /// (SCXML's `<initial><transition>…</transition></initial>`), run when the state is entered
    /// by default, after its own entry content and before its children are entered; for a
    /// history state, the content of its default transition, run when the default is taken.
    public var initialActions: [StatechartAction<StateID, Event, Output>]
    /// What the state emits when entered.
    public var onEntry: [Output]
    /// What the state emits when exited.
    public var onExit: [Output]
    /// The internal events the state raises when entered (SCXML's `<raise>` in `<onentry>`),
    /// queued after its entry outputs and before the done event a final state raises.
    public var raiseOnEntry: [Event]
    /// The internal events the state raises when exited (SCXML's `<raise>` in `<onexit>`).
    public var raiseOnExit: [Event]
    /// What the state does when entered, after its entry outputs and raised events, in order
    /// (SCXML's `<onentry>` content: `<assign>`, `<send>`, `<raise>`, `<if>`).
    public var entryActions: [StatechartAction<StateID, Event, Output>]
    /// What the state does when exited, after its exit outputs and raised events, in order.
    public var exitActions: [StatechartAction<StateID, Event, Output>]
    /// For a final state, the event its parent's done event is; for a parallel state, the
    /// event its own done event is (when every region is done): computed from the state as it
    /// is when the event is generated — the final state just entered, its entry content run —
    /// so it can carry data from the context (SCXML's `<donedata>`).
    ///
    /// With it, the done event is an event of the chart's type: it waits in the internal queue
    /// like a raised event (not counted against ``Statechart/raisedEventLimit``), and every
    /// transition whose trigger matches it — an exact event, a predicate, a catch-all — can take
    /// it, as can ``StatechartTransition/onDone(_:to:kind:when:outputs:raise:actions:)`` for the
    /// state it completes. Actions see it as their event. Without it (`nil`), only `onDone`
    /// transitions see the done event.
    public var doneEvent: (@Sendable (StatechartState<StateID>) -> Event)?
    /// The transitions leaving this state, in priority order.
    public var transitions: [StatechartTransition<StateID, Event, Output>]
    /// The children, in document order.
    public var children: [StatechartNode]

    /// Creates a node of any kind.
    public init(
        id: StateID,
        kind: StatechartNodeKind,
        initial: StateID? = nil,
        onEntry: [Output] = [],
        onExit: [Output] = [],
        raiseOnEntry: [Event] = [],
        raiseOnExit: [Event] = [],
        entryActions: [StatechartAction<StateID, Event, Output>] = [],
        exitActions: [StatechartAction<StateID, Event, Output>] = [],
        transitions: [StatechartTransition<StateID, Event, Output>] = [],
        children: [StatechartNode] = []
    ) {
        self.init(
            id: id, kind: kind, initialTargets: initial.map { [$0] } ?? [], onEntry: onEntry, onExit: onExit,
            raiseOnEntry: raiseOnEntry, raiseOnExit: raiseOnExit, entryActions: entryActions, exitActions: exitActions,
            transitions: transitions, children: children)
    }

    /// Creates a node of any kind, with several initial targets and the content of its initial
    /// (or, for a history state, default) transition.
    public init(
        id: StateID,
        kind: StatechartNodeKind,
        initialTargets: [StateID],
        initialActions: [StatechartAction<StateID, Event, Output>] = [],
        onEntry: [Output] = [],
        onExit: [Output] = [],
        raiseOnEntry: [Event] = [],
        raiseOnExit: [Event] = [],
        entryActions: [StatechartAction<StateID, Event, Output>] = [],
        exitActions: [StatechartAction<StateID, Event, Output>] = [],
        transitions: [StatechartTransition<StateID, Event, Output>] = [],
        children: [StatechartNode] = []
    ) {
        self.id = id
        self.kind = kind
        self.initialTargets = initialTargets
        self.initialActions = initialActions
        self.onEntry = onEntry
        self.onExit = onExit
        self.raiseOnEntry = raiseOnEntry
        self.raiseOnExit = raiseOnExit
        self.entryActions = entryActions
        self.exitActions = exitActions
        self.doneEvent = nil
        self.transitions = transitions
        self.children = children
    }

    /// The first of ``initialTargets``: for a compound state, the descendant entered by
    /// default (`nil`: the first child); for a history state, the state entered when there is
    /// no history yet (`nil`: the parent's default). Setting it replaces every target.
    public var initial: StateID? {
        get { initialTargets.first }
        set { initialTargets = newValue.map { [$0] } ?? [] }
    }

    /// A state with no children.
    public static func atomic(
        _ id: StateID,
        onEntry: [Output] = [],
        onExit: [Output] = [],
        raiseOnEntry: [Event] = [],
        raiseOnExit: [Event] = [],
        entryActions: [StatechartAction<StateID, Event, Output>] = [],
        exitActions: [StatechartAction<StateID, Event, Output>] = [],
        transitions: [StatechartTransition<StateID, Event, Output>] = []
    ) -> Self {
        Self(id: id, kind: .atomic, onEntry: onEntry, onExit: onExit, raiseOnEntry: raiseOnEntry, raiseOnExit: raiseOnExit,
             entryActions: entryActions, exitActions: exitActions, transitions: transitions)
    }

    /// A state with children, one active at a time; `initial` (a descendant) is entered by
    /// default, or the first child when it is `nil`.
    public static func compound(
        _ id: StateID,
        initial: StateID? = nil,
        initialActions: [StatechartAction<StateID, Event, Output>] = [],
        onEntry: [Output] = [],
        onExit: [Output] = [],
        raiseOnEntry: [Event] = [],
        raiseOnExit: [Event] = [],
        entryActions: [StatechartAction<StateID, Event, Output>] = [],
        exitActions: [StatechartAction<StateID, Event, Output>] = [],
        transitions: [StatechartTransition<StateID, Event, Output>] = [],
        children: [StatechartNode]
    ) -> Self {
        Self(id: id, kind: .compound, initialTargets: initial.map { [$0] } ?? [], initialActions: initialActions, onEntry: onEntry,
             onExit: onExit, raiseOnEntry: raiseOnEntry, raiseOnExit: raiseOnExit, entryActions: entryActions,
             exitActions: exitActions, transitions: transitions, children: children)
    }

    /// A state with children, one active at a time, whose default entry enters several
    /// descendants at once — one per region of a parallel descendant (SCXML's
    /// `initial="a b"`) — and runs `initialActions` (the initial transition's content).
    public static func compound(
        _ id: StateID,
        initialAll targets: [StateID],
        initialActions: [StatechartAction<StateID, Event, Output>] = [],
        onEntry: [Output] = [],
        onExit: [Output] = [],
        raiseOnEntry: [Event] = [],
        raiseOnExit: [Event] = [],
        entryActions: [StatechartAction<StateID, Event, Output>] = [],
        exitActions: [StatechartAction<StateID, Event, Output>] = [],
        transitions: [StatechartTransition<StateID, Event, Output>] = [],
        children: [StatechartNode]
    ) -> Self {
        Self(id: id, kind: .compound, initialTargets: targets, initialActions: initialActions, onEntry: onEntry,
             onExit: onExit, raiseOnEntry: raiseOnEntry, raiseOnExit: raiseOnExit, entryActions: entryActions,
             exitActions: exitActions, transitions: transitions, children: children)
    }

    /// A state whose children (regions) are all active at once.
    ///
    /// `doneEvent`, when given, makes its done event an event of the chart's type
    /// (``doneEvent``).
    public static func parallel(
        _ id: StateID,
        onEntry: [Output] = [],
        onExit: [Output] = [],
        raiseOnEntry: [Event] = [],
        raiseOnExit: [Event] = [],
        entryActions: [StatechartAction<StateID, Event, Output>] = [],
        exitActions: [StatechartAction<StateID, Event, Output>] = [],
        doneEvent: (@Sendable (StatechartState<StateID>) -> Event)? = nil,
        transitions: [StatechartTransition<StateID, Event, Output>] = [],
        children: [StatechartNode]
    ) -> Self {
        var node = Self(
            id: id, kind: .parallel, onEntry: onEntry, onExit: onExit, raiseOnEntry: raiseOnEntry, raiseOnExit: raiseOnExit,
            entryActions: entryActions, exitActions: exitActions, transitions: transitions, children: children)
        node.doneEvent = doneEvent
        return node
    }

    /// A final state: entering it raises its parent's done event. A final state at the top of
    /// the chart finishes the chart: it takes no more events.
    ///
    /// `doneEvent`, when given, is the event its parent's done event is, computed from the
    /// state as the final state is entered: a done event with data (``doneEvent``). A final
    /// state at the top has no parent, so it takes none.
    public static func final(
        _ id: StateID,
        onEntry: [Output] = [],
        onExit: [Output] = [],
        raiseOnEntry: [Event] = [],
        raiseOnExit: [Event] = [],
        entryActions: [StatechartAction<StateID, Event, Output>] = [],
        exitActions: [StatechartAction<StateID, Event, Output>] = [],
        doneEvent: (@Sendable (StatechartState<StateID>) -> Event)? = nil
    ) -> Self {
        var node = Self(
            id: id, kind: .final, onEntry: onEntry, onExit: onExit, raiseOnEntry: raiseOnEntry, raiseOnExit: raiseOnExit,
            entryActions: entryActions, exitActions: exitActions)
        node.doneEvent = doneEvent
        return node
    }

    /// A history pseudo-state: a transition to it resumes its parent's last active children
    /// (``StatechartHistoryDepth/shallow``) or descendants (``StatechartHistoryDepth/deep``),
    /// or enters `default` (the parent's default when `nil`) the first time.
    ///
    /// `defaultActions` is the content of the default transition (SCXML's `<history>` with a
    /// `<transition>` inside): it runs only when the default is taken, after the entry content
    /// of the history state's parent.
    public static func history(
        _ id: StateID,
        _ depth: StatechartHistoryDepth = .shallow,
        default target: StateID? = nil,
        defaultActions: [StatechartAction<StateID, Event, Output>] = []
    ) -> Self {
        Self(id: id, kind: .history(depth), initialTargets: target.map { [$0] } ?? [], initialActions: defaultActions)
    }
}

extension StatechartNode: Sendable where Output: Sendable {}
