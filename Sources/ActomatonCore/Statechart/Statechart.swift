/// A statechart: nested (compound) and orthogonal (parallel) states, entry and exit actions,
/// guarded transitions, shallow and deep history, final states with done events — run with
/// the semantics of the W3C SCXML recommendation, and compiled into a ``MealyReducer`` so it
/// runs wherever a reducer runs.
///
/// ```swift
/// enum Light: Int, StatechartStateID { case on, bright, dim, off }
/// enum Switch: Equatable { case toggle, brighter, dimmer }
///
/// let chart = try Statechart<Light, Switch, String>(states: [
///     .compound(.on, onEntry: ["lamp on"], onExit: ["lamp off"],
///               transitions: [.on(.toggle, to: .off)], children: [
///         .atomic(.bright, transitions: [.on(.dimmer, to: .dim)]),
///         .atomic(.dim, transitions: [.on(.brighter, to: .bright)]),
///     ]),
///     .atomic(.off, transitions: [.on(.toggle, to: .on)]),
/// ])
/// var state = chart.initialState           // on, bright
/// chart.send(.dimmer, to: &state)          // on, dim
/// chart.send(.toggle, to: &state).outputs  // ["lamp off"]
/// ```
///
/// ## The rules
///
/// Every step follows SCXML's algorithm (section 3.13 and appendix D of the recommendation),
/// with states in place of its data model:
///
/// - **Document order** is the order states and transitions are written in: a parent before its
///   children, children in order.
/// - **Selecting transitions.** For each active atomic state, in document order, the chart looks
///   at the state's transitions, then its parent's, and so on outwards, and takes the first
///   whose trigger matches and whose condition holds: inner states win over outer ones, and
///   earlier transitions over later ones.
/// - **Conflicts.** Two selected transitions conflict when the states they would exit overlap
///   (two regions of one parallel state both leaving it). The one whose source is inside the
///   other's source wins; otherwise the one selected first wins. What is left is the optimal
///   enabled transition set, taken together as one microstep.
/// - **A microstep** exits the states to exit from the innermost outwards (reverse document
///   order), recording history first; then emits the transitions' outputs in selection order;
///   then enters the states to enter from the outermost inwards (document order), entering a
///   compound state's initial child and every region of a parallel state.
/// - **The domain** of a transition is the innermost compound state that contains its source and
///   its targets; the states exited are the active states inside the domain. An
///   ``StatechartTransitionKind/internal`` transition whose source is compound and whose
///   targets are all inside it has the source as its domain, so the source is not exited (a
///   parallel source is, as in SCXML). A transition without targets
///   exits and enters nothing.
/// - **Done events.** Entering a final state raises the done event of its parent; when that
///   parent is a region of a parallel state and every region is then in a final state, the
///   parallel state's done event follows. As in SCXML, only that parallel state's: a parallel
///   state that is itself a region of another finishing last raises no done event for the outer
///   one (the outer one's follows when one of its other regions finishes last). A final state at the top finishes the chart: later
///   events are answered with ``StatechartStatus/finished``. A final or parallel state given a
///   ``StatechartNode/doneEvent`` makes that done event an event of the chart's type, computed
///   as it is generated, which every matching trigger can take.
/// - **Content.** At each exit, transition and entry, the chart emits the fixed outputs, queues
///   the raised events, then runs the ``StatechartAction``s in order: they update the context
///   (``StatechartState/context``), emit outputs computed from it, raise events and choose by
///   guards. A compound state entered by default runs its initial transition's actions after
///   its own entry content, and a history state whose default is taken runs its default's
///   actions after its parent's.
/// - **The internal queue.** Raised events (``StatechartTransition/raise``,
///   ``StatechartNode/raiseOnEntry``, ``StatechartNode/raiseOnExit``) and done events wait in
///   one first-in-first-out queue, in the order they were generated: within a microstep, exit
///   content (innermost first), then the transitions' content, then entry content (outermost
///   first), where a final state's done event follows its own entry content.
/// - **Run to completion.** After the event's microstep, the chart takes eventless transitions
///   (``StatechartTransition/always(to:kind:when:outputs:raise:actions:)``) while any is enabled; when
///   none is, it takes the next event of the internal queue (dropping one that enables
///   nothing), one microstep at a time, until both are exhausted: SCXML's macrostep. A step
///   that needs more than ``microstepLimit`` microsteps stops there, in a legal configuration,
///   and says so with ``StatechartStatus/stoppedAtMicrostepLimit``; one that raises an event
///   while ``raisedEventLimit`` raised events are already waiting, or a done event while two
///   per final state are (eventless transitions looping through final states), finishes that
///   microstep and stops with ``StatechartStatus/stoppedAtRaisedEventLimit``.
/// - **History.** When a compound or parallel state exits, it remembers its active children. A
///   transition to its shallow history state re-enters the remembered child (which then enters
///   its own initial states); a deep history state re-enters every remembered descendant. With
///   nothing remembered yet, the history state's default is entered.
///
/// Where it departs from SCXML, on purpose or for its 32-byte state:
///
/// - Each state remembers its own children as of its own last exit, and deep history follows
///   those memories down. This is SCXML's deep history, except when the history state is
///   targeted from inside its parent while the parent is still active and a state below it
///   has exited since the parent last did: then the newer memory of that inner state wins.
/// - A top-level final state stays active, and the exit actions of the states still active are
///   not run.
/// - After ``StatechartStatus/stoppedAtMicrostepLimit`` or
///   ``StatechartStatus/stoppedAtRaisedEventLimit``, events still in the internal queue are
///   dropped, and the next event starts with its own selection. SCXML's queue has no limit.
///
/// ## Cost
///
/// Building a chart allocates its tables. Sending an event allocates nothing in the chart
/// unless ``allocatesPerEvent`` says so: the state is two 128-bit sets, and the step's scratch
/// space (the internal queue included: room for ``raisedEventLimit`` raised events and two
/// done events per final state, fixed when the chart is built) is on the stack as long as each
/// of its three buffers fits in the 1 KiB that the standard library keeps there. Outputs go to
/// a sink the caller chooses (``send(_:to:outputs:trace:)``).
public struct Statechart<StateID: StatechartStateID, Event: Sendable, Output> {
    /// The state the chart starts in: its initial states entered, and the eventless
    /// transitions and internal events they lead to taken. ``start(into:outputs:trace:)``
    /// makes it again, with your sink and trace.
    public private(set) var initialState: StatechartState<StateID>
    /// The outputs emitted while entering ``initialState``: the initial states' entry actions,
    /// and those of the transitions taken as it settled.
    public var initialOutputs: [Output] { content.initialOutputs }
    /// How the chart's start ended: ``StatechartStatus/transitioned`` when it settled, or
    /// ``StatechartStatus/stoppedAtMicrostepLimit`` or
    /// ``StatechartStatus/stoppedAtRaisedEventLimit`` when its eventless transitions or raised
    /// events stopped at a limit; ``initialState`` is then legal, where the start stopped.
    public private(set) var initialStatus: StatechartStatus = .transitioned
    /// The context the chart starts with, before its start runs any action:
    /// ``initialState``'s context is this one as the start's actions left it.
    public let initialContext: StateID.Context
    /// The most microsteps one event may cause, its own included.
    public let microstepLimit: Int
    /// The most raised events that may wait in the internal queue at once, done events not
    /// counted (those are bounded by two per final state): the size of the queue a step keeps.
    public let raisedEventLimit: Int
    /// The most transitions a chart may have (its tables number them in 16 bits); past it,
    /// building throws ``StatechartError/tooManyTransitions(_:)``.
    public static var transitionLimit: Int { Int(Int16.max) }
    /// Every transition, with its source, in document order; ``StatechartTrace`` reports
    /// transitions by their index here.
    public var transitions: [StatechartEdge<StateID, Event, Output>] { content.edges }

    @usableFromInline let nodes: [CompiledNode]
    @usableFromInline private(set) var transitionTable: [CompiledTransition] = []
    /// Event predicates and conditions, each in a struct: a closure stored straight in an
    /// array would be called through a reabstraction thunk.
    @usableFromInline let eventMatchers: [TransitionPattern<Event>]
    @usableFromInline let conditions: [StatechartTransition<StateID, Event, Output>.Condition]
    @usableFromInline let candidates: [Int]
    /// For each transition whose entries do not depend on history, the states it enters.
    @usableFromInline private(set) var staticEntrySets: [StatechartStateSet] = []
    @usableFromInline let candidateRanges: [Range<Int>]
    @usableFromInline let outputTable: [Output]
    /// Every event the chart raises, and the ranges of it raised on entry and exit (by raw
    /// value) and by each transition.
    @usableFromInline let raiseTable: [Event]
    @usableFromInline let entryRaises: [Range<Int>]
    @usableFromInline let exitRaises: [Range<Int>]
    @usableFromInline let transitionRaises: [Range<Int>]
    /// The tables of actions, default entries and done events of the chart's type, behind one
    /// reference: a step that copies the chart copies one pointer for them, and a chart without
    /// them never reads them.
    @usableFromInline let content: StatechartContentTables<StateID, Event, Output>
    /// Whether any state or transition has actions.
    @usableFromInline let hasActions: Bool
    /// Whether an initial or history-default transition has actions, so entries track which
    /// states are entered by default.
    @usableFromInline let hasInitialActions: Bool
    /// Whether a state has a done event of the chart's type.
    @usableFromInline let hasDoneEvents: Bool
    /// Whether anything raises events: transitions, entries, exits or actions.
    @usableFromInline let raisesEvents: Bool
    /// Raw value → document position, and back.
    @usableFromInline let documentRank: [UInt8]
    @usableFromInline let documentOrder: [UInt8]
    /// Whether raw values already follow document order, so no reordering is needed.
    @usableFromInline let rawValuesInDocumentOrder: Bool
    @usableFromInline let allStates: StatechartStateSet
    @usableFromInline let atomicStates: StatechartStateSet
    @usableFromInline let finalStates: StatechartStateSet
    @usableFromInline let topLevelFinalStates: StatechartStateSet

    /// Builds a chart that carries `context` from its top-level states; `initial` is entered at
    /// start (the first state when `nil`).
    ///
    /// - Parameters:
    ///   - initial: The top-level state (or a deeper one, with its ancestors) entered at start;
    ///     the first top-level state when `nil`.
    ///   - context: The chart's extended state as it starts, before the start's actions run.
    ///   - microstepLimit: The most microsteps one event may cause (1 to 10,000; 100 by
    ///     default). It stops charts whose eventless transitions or raised events loop.
    ///   - raisedEventLimit: The most raised events that may wait in the internal queue at
    ///     once (1 to 1,000; 32 by default). A step keeps room for them on the stack, so keep
    ///     it small when events are large.
    ///   - states: The top-level states, in document order.
    /// - Throws: ``StatechartError`` naming the first problem in the definition. A start that
    ///   stops at a limit is not an error: ``initialStatus`` says so.
    public init(
        initial: StateID? = nil,
        context: StateID.Context,
        microstepLimit: Int = 100,
        raisedEventLimit: Int = 32,
        states: [StatechartNode<StateID, Event, Output>]
    ) throws(StatechartError<StateID>) {
        try self.init(
            initial: initial.map { [$0] } ?? [], context: context, microstepLimit: microstepLimit,
            raisedEventLimit: raisedEventLimit, states: states)
    }

    /// Builds a chart that carries `context` and starts in several states at once, one per
    /// region of a parallel state (SCXML's `<scxml initial="a b">`).
    ///
    /// - Parameters:
    ///   - initial: The states entered at start, with their ancestors and the other regions'
    ///     defaults; the first top-level state when empty.
    ///   - context: The chart's extended state as it starts, before the start's actions run.
    ///   - microstepLimit: The most microsteps one event may cause (1 to 10,000).
    ///   - raisedEventLimit: The most raised events that may wait in the internal queue at
    ///     once (1 to 1,000).
    ///   - states: The top-level states, in document order.
    /// - Throws: ``StatechartError`` naming the first problem in the definition.
    public init(
        initial: [StateID],
        context: StateID.Context,
        microstepLimit: Int = 100,
        raisedEventLimit: Int = 32,
        states: [StatechartNode<StateID, Event, Output>]
    ) throws(StatechartError<StateID>) {
        guard (1...10_000).contains(microstepLimit) else { throw .microstepLimitOutOfRange(microstepLimit) }
        guard (1...1_000).contains(raisedEventLimit) else { throw .raisedEventLimitOutOfRange(raisedEventLimit) }
        guard !states.isEmpty else { throw .empty }
        var builder = StatechartBuilder<StateID, Event, Output>()
        try builder.add(states, parent: -1)
        try builder.resolve(initial: initial)
        self.initialContext = context
        self.initialState = StatechartState(context: context)
        self.microstepLimit = microstepLimit
        self.raisedEventLimit = raisedEventLimit
        self.raiseTable = builder.raises
        self.entryRaises = builder.entryRaises
        self.exitRaises = builder.exitRaises
        self.transitionRaises = builder.transitionRaises
        let content = StatechartContentTables(builder)
        self.content = content
        self.hasActions = !builder.actions.isEmpty
        self.hasInitialActions = !builder.initialActions.allSatisfy { $0.isEmpty }
        self.hasDoneEvents = !builder.doneEvents.isEmpty
        self.raisesEvents = !builder.raises.isEmpty || builder.actions.contains { $0.raisesEvents }
        self.nodes = builder.nodes
        self.eventMatchers = builder.eventMatchers
        self.conditions = builder.conditions
        self.candidates = builder.candidates
        self.candidateRanges = builder.candidateRanges
        self.outputTable = builder.outputs
        self.documentRank = builder.documentRank
        self.documentOrder = builder.documentOrder
        self.rawValuesInDocumentOrder = builder.documentOrder.enumerated().allSatisfy { Int($0.element) == $0.offset }
            && builder.documentOrder.count == builder.nodes.count
        self.allStates = builder.allStates
        self.atomicStates = builder.atomicStates
        self.finalStates = builder.finalStates
        self.topLevelFinalStates = builder.topLevelFinalStates
        // What a transition enters, when it does not depend on history, is worked out once here.
        var table = builder.transitions
        var entrySets: [StatechartStateSet] = []
        var defaultEntries: [StatechartStateSet] = []
        for index in table.indices {
            var entering = StatechartStateSet()
            var defaults = StatechartStateSet()
            let transition = table[index]
            if !transition.targetsHistory && !transition.targets.isEmpty {
                for target in transition.targets {
                    addDescendants(target, to: &entering, defaults: &defaults, history: StatechartStateSet())
                }
                for target in transition.targets {
                    addAncestors(
                        of: target, below: transition.staticDomain, to: &entering, defaults: &defaults,
                        history: StatechartStateSet())
                }
            }
            if entering.intersects(builder.historyInitials) { table[index].targetsHistory = true }
            entrySets.append(entering)
            defaultEntries.append(defaults)
        }
        self.transitionTable = table
        self.staticEntrySets = entrySets
        content.staticDefaultEntries = hasInitialActions ? defaultEntries : []
        var state = initialState
        var outputs: [Output] = []
        var trace = StatechartNoTrace()
        self.initialStatus = start(into: &state, outputs: &outputs, trace: &trace)
        self.initialState = state
        content.initialOutputs = outputs
    }

    /// The active child of the compound state `parent`, or `nil` when `parent` is not active
    /// (or not compound).
    @inlinable
    public func activeChild(of parent: StateID, in state: StatechartState<StateID>) -> StateID? {
        let index = parent.rawValue
        guard index >= 0, index < nodes.count, nodes[index].kind == .compound else { return nil }
        return nodes[index].children.intersection(state.active).first.flatMap { StateID(rawValue: $0) }
    }

    /// The active atomic and final states, in document order: the leaves of the active
    /// configuration.
    public func activeLeaves(in state: StatechartState<StateID>) -> [StateID] {
        inDocumentOrder(state.active.intersection(atomicStates)).compactMap { StateID(rawValue: $0) }
    }

    /// Whether the chart has entered a final state at its top level, after which it takes no
    /// more events.
    @inlinable
    public func isFinished(_ state: StatechartState<StateID>) -> Bool {
        state.active.intersects(topLevelFinalStates)
    }

    /// The raw values of `set`, in document order.
    @usableFromInline
    func inDocumentOrder(_ set: StatechartStateSet) -> [Int] {
        var ordered: [Int] = []
        forEach(inDocumentOrder: set) { ordered.append($0) }
        return ordered
    }
}

extension Statechart where StateID.Context == StatechartNoContext {
    /// Builds a chart without context from its top-level states; `initial` is entered at start
    /// (the first state when `nil`).
    ///
    /// - Parameters:
    ///   - initial: The top-level state (or a deeper one, with its ancestors) entered at start;
    ///     the first top-level state when `nil`.
    ///   - microstepLimit: The most microsteps one event may cause (1 to 10,000; 100 by
    ///     default). It stops charts whose eventless transitions or raised events loop.
    ///   - raisedEventLimit: The most raised events that may wait in the internal queue at
    ///     once (1 to 1,000; 32 by default). A step keeps room for them on the stack, so keep
    ///     it small when events are large.
    ///   - states: The top-level states, in document order.
    /// - Throws: ``StatechartError`` naming the first problem in the definition. A start that
    ///   stops at a limit is not an error: ``initialStatus`` says so.
    public init(
        initial: StateID? = nil,
        microstepLimit: Int = 100,
        raisedEventLimit: Int = 32,
        states: [StatechartNode<StateID, Event, Output>]
    ) throws(StatechartError<StateID>) {
        try self.init(
            initial: initial.map { [$0] } ?? [], context: StatechartNoContext(), microstepLimit: microstepLimit,
            raisedEventLimit: raisedEventLimit, states: states)
    }

    /// Builds a chart without context that starts in several states at once, one per region of
    /// a parallel state (SCXML's `<scxml initial="a b">`).
    ///
    /// - Parameters:
    ///   - initial: The states entered at start, with their ancestors and the other regions'
    ///     defaults; the first top-level state when empty.
    ///   - microstepLimit: The most microsteps one event may cause (1 to 10,000).
    ///   - raisedEventLimit: The most raised events that may wait in the internal queue at
    ///     once (1 to 1,000).
    ///   - states: The top-level states, in document order.
    /// - Throws: ``StatechartError`` naming the first problem in the definition.
    public init(
        initial: [StateID],
        microstepLimit: Int = 100,
        raisedEventLimit: Int = 32,
        states: [StatechartNode<StateID, Event, Output>]
    ) throws(StatechartError<StateID>) {
        try self.init(
            initial: initial, context: StatechartNoContext(), microstepLimit: microstepLimit,
            raisedEventLimit: raisedEventLimit, states: states)
    }
}

extension Statechart: Sendable where Output: Sendable {}

/// A transition of a built ``Statechart`` with the state it leaves: what diagrams, coverage
/// reports and generated tests name.
public struct StatechartEdge<StateID: StatechartStateID, Event: Sendable, Output> {
    /// Its position in ``Statechart/transitions``.
    public let index: Int
    /// The state whose transition it is.
    public let source: StateID
    /// The transition as defined.
    public let transition: StatechartTransition<StateID, Event, Output>
}

extension StatechartEdge: Sendable where Output: Sendable {}

/// What one event did to a statechart.
///
/// The raw values are the codes a ``CompiledStatechart``'s table stores.
public enum StatechartStatus: UInt8, Sendable, Equatable {
    /// At least one transition was taken.
    case transitioned
    /// No transition was enabled for the event; nothing changed and nothing was emitted.
    case ignored
    /// The chart had already finished (a top-level final state is active); nothing changed.
    case finished
    /// The step reached ``Statechart/microstepLimit`` and stopped there: the state is legal,
    /// but eventless transitions or queued (done or raised) events were left untaken.
    case stoppedAtMicrostepLimit
    /// A ``CompiledStatechart`` could not take the event: its classifier put it in a class the
    /// chart was not compiled with, or the state's index is not a row of its table (a state of
    /// a larger compiled chart). Nothing changed and nothing was emitted. A ``Statechart`` never
    /// answers this.
    case rejected
    /// An event was raised while ``Statechart/raisedEventLimit`` raised events were already
    /// waiting in the internal queue, or a done event while two per final state were: the step
    /// finished that microstep and stopped there, in a legal state, dropping that event and
    /// those still queued.
    case stoppedAtRaisedEventLimit
}

/// Told of every transition a statechart takes: for coverage and generated tests.
///
/// ``StatechartNoTrace`` is the one that does nothing, for the hot path.
public protocol StatechartTrace {
    /// The transition at `index` in ``Statechart/transitions`` was taken.
    mutating func took(transition index: Int)
    /// The state with raw value `index` was entered (it may be left again in the same step,
    /// as a final state whose done event moves on is).
    ///
    /// It is called where the state's entry content runs: the state and its ancestors are
    /// active, the states it enters after it (its descendants, later regions) not yet.
    mutating func entered(state index: Int)
    /// The state with raw value `index` was exited.
    ///
    /// It is called where the state's exit content runs, in SCXML's exit order (innermost
    /// first, regions in reverse document order), before the transitions are reported with
    /// ``took(transition:)``: the states below it have exited, it is still active. A trace that
    /// follows ``entered(state:)`` and this one knows the configuration at every exit and entry,
    /// so content that depends on it (SCXML's `<if cond="In(…)">` in `<onexit>` or
    /// `<onentry>`) can be rebuilt outside the chart.
    mutating func exited(state index: Int)
}

extension StatechartTrace {
    /// Does nothing: a trace that only counts transitions need not implement it.
    @inlinable
    public mutating func entered(state index: Int) {}

    /// Does nothing: a trace that only counts transitions need not implement it.
    @inlinable
    public mutating func exited(state index: Int) {}
}

/// The trace that records nothing.
public struct StatechartNoTrace: StatechartTrace, Sendable {
    /// Creates the trace.
    @inlinable
    public init() {}

    /// Does nothing.
    @inlinable
    public mutating func took(transition index: Int) {}
}

extension Array: OutputSink {
    /// Appends `output`: an array collects a statechart's outputs in order.
    @inlinable
    public mutating func receive(_ output: Element) {
        append(output)
    }
}

extension Statechart {
    /// Whether `state` is one this chart can be in: for a state that comes from outside (a
    /// snapshot, a file), check it before running it.
    ///
    /// A legal configuration holds exactly one top-level state; with every active state its
    /// parent; with every active compound state exactly one child, and with every active
    /// parallel state all of them; and no history state. History remembers at most one child
    /// of each compound state, and nothing else.
    public func isValid(_ state: StatechartState<StateID>) -> Bool {
        let active = state.active
        guard active.isSubset(of: allStates) else { return false }
        var topLevel = 0
        for index in active {
            let node = nodes[index]
            if node.isHistory { return false }
            if node.parent < 0 { topLevel += 1 } else if !active.contains(node.parent) { return false }
            let children = node.children.intersection(active).count
            switch node.kind {
            case .compound where children != 1: return false
            case .parallel where children != node.children.count: return false
            default: break
            }
        }
        guard topLevel == 1 else { return false }
        guard state.history.isSubset(of: allStates) else { return false }
        for index in state.history {
            let parent = nodes[index].parent
            guard parent >= 0, !nodes[index].isHistory else { return false }
            if nodes[parent].kind == .compound && nodes[parent].children.intersection(state.history).count != 1 { return false }
        }
        return true
    }
}

/// The tables of a ``Statechart`` that a step of a chart without actions, default-entry
/// content, several initial targets or done events of its own type never reads — those, and
/// what only callers read — kept behind one reference so a step that copies the chart copies
/// one pointer for them.
///
/// It is filled while the chart is built and never changed after.
@usableFromInline
final class StatechartContentTables<StateID: StatechartStateID, Event: Sendable, Output> {
    /// Every action of the chart, and the ranges of it run on entry, exit and default entry
    /// (by raw value) and by each transition.
    @usableFromInline let actions: [StatechartAction<StateID, Event, Output>]
    /// By condition, whether its transition says it reads only the configuration
    /// (``StatechartTransition/guardReadsConfigurationOnly()``): read only by the compiler, so
    /// kept out of the conditions a step calls.
    let conditionsReadingOnlyTheConfiguration: [Bool]
    @usableFromInline let entryActions: [Range<Int>]
    @usableFromInline let exitActions: [Range<Int>]
    @usableFromInline let initialActions: [Range<Int>]
    @usableFromInline let transitionActions: [Range<Int>]
    /// By raw value, the default entry of the states with several initial targets or a history
    /// one (empty when none has).
    @usableFromInline let initialTargetSets: [StatechartStateSet]
    /// For each transition whose entries do not depend on history, the compound states it
    /// enters by default: those whose initial transition's actions run. Empty when no state
    /// has initial actions.
    @usableFromInline var staticDefaultEntries: [StatechartStateSet] = []
    /// The done events of the chart's type (``StatechartNode/doneEvent``), and by raw value the
    /// index of each state's in it (-1 for none); both empty when no state has one.
    @usableFromInline let doneEventMakers: [StatechartDoneEventMaker<StateID, Event>]
    @usableFromInline let doneEventIndices: [Int16]
    /// The states the chart starts in, by raw value.
    @usableFromInline let rootInitials: StatechartStateSet
    /// ``Statechart/transitions``, and ``Statechart/initialOutputs`` once the start has run:
    /// read by diagrams, reports and callers, never by a step.
    let edges: [StatechartEdge<StateID, Event, Output>]
    var initialOutputs: [Output] = []

    init(_ builder: StatechartBuilder<StateID, Event, Output>) {
        var serial: Int32 = 0
        actions = builder.actions.map { $0.numbered(from: &serial) }
        conditionsReadingOnlyTheConfiguration = builder.conditionsReadingOnlyTheConfiguration
        entryActions = builder.entryActions
        exitActions = builder.exitActions
        initialActions = builder.initialActions
        transitionActions = builder.transitionActions
        initialTargetSets = builder.initialTargetSets
        doneEventMakers = builder.doneEvents
        doneEventIndices = builder.doneEventIndices
        rootInitials = builder.rootInitials
        edges = builder.edges
    }
}

// Filled once while its chart is built, and only read after.
extension StatechartContentTables: @unchecked Sendable where Output: Sendable {}
