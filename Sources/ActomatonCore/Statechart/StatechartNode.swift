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
    /// For a compound state, the descendant entered by default; `nil` means the first child.
    /// For a history state, the state entered when there is no history yet; `nil` means the
    /// parent's default.
    public var initial: StateID?
    /// What the state emits when entered.
    public var onEntry: [Output]
    /// What the state emits when exited.
    public var onExit: [Output]
    /// The internal events the state raises when entered (SCXML's `<raise>` in `<onentry>`),
    /// queued after its entry outputs and before the done event a final state raises.
    public var raiseOnEntry: [Event]
    /// The internal events the state raises when exited (SCXML's `<raise>` in `<onexit>`).
    public var raiseOnExit: [Event]
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
        transitions: [StatechartTransition<StateID, Event, Output>] = [],
        children: [StatechartNode] = []
    ) {
        self.id = id
        self.kind = kind
        self.initial = initial
        self.onEntry = onEntry
        self.onExit = onExit
        self.raiseOnEntry = raiseOnEntry
        self.raiseOnExit = raiseOnExit
        self.transitions = transitions
        self.children = children
    }

    /// A state with no children.
    public static func atomic(
        _ id: StateID,
        onEntry: [Output] = [],
        onExit: [Output] = [],
        raiseOnEntry: [Event] = [],
        raiseOnExit: [Event] = [],
        transitions: [StatechartTransition<StateID, Event, Output>] = []
    ) -> Self {
        Self(id: id, kind: .atomic, onEntry: onEntry, onExit: onExit, raiseOnEntry: raiseOnEntry, raiseOnExit: raiseOnExit,
             transitions: transitions)
    }

    /// A state with children, one active at a time; `initial` (a descendant) is entered by
    /// default, or the first child when it is `nil`.
    public static func compound(
        _ id: StateID,
        initial: StateID? = nil,
        onEntry: [Output] = [],
        onExit: [Output] = [],
        raiseOnEntry: [Event] = [],
        raiseOnExit: [Event] = [],
        transitions: [StatechartTransition<StateID, Event, Output>] = [],
        children: [StatechartNode]
    ) -> Self {
        Self(id: id, kind: .compound, initial: initial, onEntry: onEntry, onExit: onExit, raiseOnEntry: raiseOnEntry,
             raiseOnExit: raiseOnExit, transitions: transitions, children: children)
    }

    /// A state whose children (regions) are all active at once.
    public static func parallel(
        _ id: StateID,
        onEntry: [Output] = [],
        onExit: [Output] = [],
        raiseOnEntry: [Event] = [],
        raiseOnExit: [Event] = [],
        transitions: [StatechartTransition<StateID, Event, Output>] = [],
        children: [StatechartNode]
    ) -> Self {
        Self(id: id, kind: .parallel, onEntry: onEntry, onExit: onExit, raiseOnEntry: raiseOnEntry, raiseOnExit: raiseOnExit,
             transitions: transitions, children: children)
    }

    /// A final state: entering it raises its parent's done event. A final state at the top of
    /// the chart finishes the chart: it takes no more events.
    public static func final(
        _ id: StateID,
        onEntry: [Output] = [],
        onExit: [Output] = [],
        raiseOnEntry: [Event] = [],
        raiseOnExit: [Event] = []
    ) -> Self {
        Self(id: id, kind: .final, onEntry: onEntry, onExit: onExit, raiseOnEntry: raiseOnEntry, raiseOnExit: raiseOnExit)
    }

    /// A history pseudo-state: a transition to it resumes its parent's last active children
    /// (``StatechartHistoryDepth/shallow``) or descendants (``StatechartHistoryDepth/deep``),
    /// or enters `default` (the parent's default when `nil`) the first time.
    public static func history(_ id: StateID, _ depth: StatechartHistoryDepth = .shallow, default target: StateID? = nil) -> Self {
        Self(id: id, kind: .history(depth), initial: target)
    }
}

extension StatechartNode: Sendable where Output: Sendable {}
