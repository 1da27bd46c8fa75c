// Turns a statechart's node tree into flat tables indexed by raw value, checking it on the way.

/// A state of a built chart, indexed by its raw value.
@usableFromInline
struct CompiledNode: Sendable {
    @usableFromInline
    enum Kind: UInt8, Sendable {
        case unused, atomic, compound, parallel, final, shallowHistory, deepHistory
    }

    @usableFromInline var kind: Kind = .unused
    /// The parent's raw value, or -1 at the top.
    @usableFromInline var parent: Int = -1
    /// The children that are states (history pseudo-states left out).
    @usableFromInline var children = StatechartStateSet()
    /// Every state below, history pseudo-states included.
    @usableFromInline var descendants = StatechartStateSet()
    /// For a compound state, the descendant entered by default, or -1 when its default entry
    /// is in ``Statechart/initialTargetSets`` (several targets, or a history state); for a
    /// history state, its default target, -1 for none, or -2 for several (in
    /// ``Statechart/initialTargetSets``).
    @usableFromInline var initial: Int = -1
    @usableFromInline var entryOutputs: Range<Int> = 0..<0
    @usableFromInline var exitOutputs: Range<Int> = 0..<0
    @usableFromInline var transitions: Range<Int> = 0..<0

    @usableFromInline var isHistory: Bool { kind == .shallowHistory || kind == .deepHistory }
}

extension Statechart {
    /// A transition of a built chart: plain data, so reading one costs no reference counting.
    /// Its event predicate and condition are in ``Statechart/eventMatchers`` and
    /// ``Statechart/conditions``.
    @usableFromInline
    struct CompiledTransition: Sendable {
        @usableFromInline
        enum Trigger: UInt8, Sendable {
            case event, done, always
        }

        @usableFromInline var source: Int
        @usableFromInline var trigger: Trigger
        /// For a done trigger, the state whose done event it waits for; for an event trigger,
        /// the index of its predicate in `eventMatchers`.
        @usableFromInline var argument: Int
        /// The index of its condition in `conditions`, or -1 for none.
        @usableFromInline var condition: Int
        @usableFromInline var targets: StatechartStateSet
        @usableFromInline var isInternal: Bool
        /// Whether what it enters depends on history: it targets a history state, or enters a
        /// compound state whose default entry resumes one (then its domain is still static,
        /// and worked out again the same way).
        @usableFromInline var targetsHistory: Bool
        /// The domain when no target is a history state: a raw value, -1 for the whole chart,
        /// or -2 for a transition without targets.
        @usableFromInline var staticDomain: Int
        @usableFromInline var outputs: Range<Int>
    }
}

struct StatechartBuilder<StateID: StatechartStateID, Event: Sendable, Output> {
    typealias Node = StatechartNode<StateID, Event, Output>

    var nodes: [CompiledNode] = []
    var transitions: [Statechart<StateID, Event, Output>.CompiledTransition] = []
    var eventMatchers: [TransitionPattern<Event>] = []
    var conditions: [StatechartTransition<StateID, Event, Output>.Condition] = []
    /// By condition, whether its transition says it reads only the configuration. (An array,
    /// not a set: hashing needs random numbers that an Embedded `.wasm` module does not have.)
    var conditionsReadingOnlyTheConfiguration: [Bool] = []
    /// For each atomic state, by raw value, the transitions to try: its own, then its
    /// ancestors', innermost first, each state's in document order.
    var candidates: [Int] = []
    var candidateRanges: [Range<Int>] = []
    var edges: [StatechartEdge<StateID, Event, Output>] = []
    var outputs: [Output] = []
    /// Every raised event of the chart, and the ranges of it that each state raises on entry
    /// and exit (by raw value) and each transition raises. They are kept out of the nodes and
    /// transitions, whose size the hot path feels.
    var raises: [Event] = []
    var entryRaises: [Range<Int>] = []
    var exitRaises: [Range<Int>] = []
    var transitionRaises: [Range<Int>] = []
    /// Every action of the chart, and the ranges of it that each state runs on entry, on exit
    /// and on its default entry (by raw value), and each transition runs.
    var actions: [StatechartAction<StateID, Event, Output>] = []
    var entryActions: [Range<Int>] = []
    var exitActions: [Range<Int>] = []
    var initialActions: [Range<Int>] = []
    var transitionActions: [Range<Int>] = []
    /// By raw value, the default entry of compound and history states with several targets
    /// or a history target; empty when no state has one.
    var initialTargetSets: [StatechartStateSet] = []
    /// The compound states whose default entry targets a history state.
    var historyInitials = StatechartStateSet()
    var rootInitials = StatechartStateSet()
    /// The done events of the chart's type, and by raw value the index of each final or
    /// parallel state's in it (-1 for none); both empty when no state has one.
    var doneEvents: [StatechartDoneEventMaker<StateID, Event>] = []
    var doneEventIndices: [Int16] = []
    var documentOrder: [UInt8] = []
    var documentRank: [UInt8] = []
    var allStates = StatechartStateSet()
    var atomicStates = StatechartStateSet()
    var finalStates = StatechartStateSet()
    var topLevelFinalStates = StatechartStateSet()
    var rootInitial = -1
    /// The definitions' transitions and `initial`s, checked once every state is known.
    private var pending: [(source: Int, transition: StatechartTransition<StateID, Event, Output>)] = []
    private var initials: [(state: Int, targets: [StateID])] = []
    private var topLevel: [Int] = []

    /// Adds `list` as the children of `parent` (-1 for the top), depth first.
    mutating func add(_ list: [Node], parent: Int) throws(StatechartError<StateID>) {
        for node in list {
            let index = node.id.rawValue
            guard index >= 0, index < StatechartStateSet.capacity else { throw .rawValueOutOfRange(index) }
            if index >= nodes.count { nodes += Array(repeating: CompiledNode(), count: index + 1 - nodes.count) }
            guard nodes[index].kind == .unused else { throw .duplicateState(node.id) }
            allStates.insert(index)
            documentOrder.append(UInt8(index))
            nodes[index].parent = parent
            nodes[index].kind = switch node.kind {
            case .atomic: .atomic
            case .compound: .compound
            case .parallel: .parallel
            case .final: .final
            case .history(.shallow): .shallowHistory
            case .history(.deep): .deepHistory
            }
            if parent < 0 { topLevel.append(index) }
            switch node.kind {
            case .atomic, .final:
                guard node.children.isEmpty else { throw .misplacedContent(node.id) }
                atomicStates.insert(index)
                if node.kind == .final {
                    guard node.transitions.isEmpty else { throw .misplacedContent(node.id) }
                    guard parent < 0 || nodes[parent].kind != .parallel else { throw .finalInParallel(node.id) }
                    finalStates.insert(index)
                    if parent < 0 { topLevelFinalStates.insert(index) }
                }
            case .compound, .parallel:
                guard node.children.contains(where: { if case .history = $0.kind { false } else { true } }) else {
                    throw .noChildren(node.id)
                }
            case .history:
                guard parent >= 0 else { throw .historyAtTopLevel(node.id) }
                guard node.children.isEmpty, node.transitions.isEmpty, node.onEntry.isEmpty, node.onExit.isEmpty,
                      node.raiseOnEntry.isEmpty, node.raiseOnExit.isEmpty, node.entryActions.isEmpty,
                      node.exitActions.isEmpty else {
                    throw .misplacedContent(node.id)
                }
            }
            if parent >= 0 {
                if !nodes[index].isHistory { nodes[parent].children.insert(index) }
            }
            var ancestor = parent
            while ancestor >= 0 {
                nodes[ancestor].descendants.insert(index)
                ancestor = nodes[ancestor].parent
            }
            nodes[index].entryOutputs = outputs.count..<(outputs.count + node.onEntry.count)
            outputs += node.onEntry
            nodes[index].exitOutputs = outputs.count..<(outputs.count + node.onExit.count)
            outputs += node.onExit
            if index >= entryRaises.count {
                entryRaises += Array(repeating: 0..<0, count: index + 1 - entryRaises.count)
                exitRaises += Array(repeating: 0..<0, count: index + 1 - exitRaises.count)
            }
            entryRaises[index] = raises.count..<(raises.count + node.raiseOnEntry.count)
            raises += node.raiseOnEntry
            exitRaises[index] = raises.count..<(raises.count + node.raiseOnExit.count)
            raises += node.raiseOnExit
            if index >= entryActions.count {
                entryActions += Array(repeating: 0..<0, count: index + 1 - entryActions.count)
                exitActions += Array(repeating: 0..<0, count: index + 1 - exitActions.count)
                initialActions += Array(repeating: 0..<0, count: index + 1 - initialActions.count)
            }
            switch node.kind {
            case .compound, .history: break
            default: guard node.initialTargets.isEmpty, node.initialActions.isEmpty else { throw .misplacedContent(node.id) }
            }
            entryActions[index] = actions.count..<(actions.count + node.entryActions.count)
            actions += node.entryActions
            exitActions[index] = actions.count..<(actions.count + node.exitActions.count)
            actions += node.exitActions
            initialActions[index] = actions.count..<(actions.count + node.initialActions.count)
            actions += node.initialActions
            if let doneEvent = node.doneEvent {
                // A final state at the top has no parent whose done event it could be.
                guard node.kind == .parallel || (node.kind == .final && parent >= 0) else { throw .misplacedContent(node.id) }
                if doneEventIndices.count < StatechartStateSet.capacity {
                    doneEventIndices = Array(repeating: -1, count: StatechartStateSet.capacity)
                }
                doneEventIndices[index] = Int16(doneEvents.count)
                doneEvents.append(StatechartDoneEventMaker(make: doneEvent))
            }
            for transition in node.transitions { pending.append((index, transition)) }
            if !node.initialTargets.isEmpty { initials.append((index, node.initialTargets)) }
            try add(node.children, parent: index)
        }
    }

    /// Checks every reference, fills in defaults and compiles the transitions.
    mutating func resolve(initial: [StateID]) throws(StatechartError<StateID>) {
        documentRank = Array(repeating: 0, count: nodes.count)
        for (rank, index) in documentOrder.enumerated() { documentRank[Int(index)] = UInt8(rank) }
        entryActions += Array(repeating: 0..<0, count: nodes.count - entryActions.count)
        exitActions += Array(repeating: 0..<0, count: nodes.count - exitActions.count)
        initialActions += Array(repeating: 0..<0, count: nodes.count - initialActions.count)

        for index in nodes.indices where nodes[index].kind == .compound {
            nodes[index].initial = nodes[index].children.map { $0 }.min { documentRank[$0] < documentRank[$1] } ?? -1
        }
        for (state, list) in initials {
            var targets = StatechartStateSet()
            for initial in list {
                let target = try self.index(of: initial)
                if nodes[state].isHistory {
                    let parent = nodes[state].parent
                    guard nodes[parent].descendants.contains(target), !nodes[target].isHistory else {
                        throw .historyDefaultNotDescendant(history: StateID(rawValue: state)!, target: initial)
                    }
                } else {
                    // A compound state's default entry may resume one of its own history states.
                    guard nodes[state].descendants.contains(target),
                          !nodes[target].isHistory || nodes[target].parent == state else {
                        throw .initialNotDescendant(state: StateID(rawValue: state)!, initial: initial)
                    }
                    if nodes[target].isHistory { historyInitials.insert(state) }
                }
                targets.insert(target)
            }
            try checkCanBeActiveTogether(targets, else: .conflictingInitials(list))
            if targets.count == 1 && !historyInitials.contains(state) {
                nodes[state].initial = targets.first!
            } else {
                if initialTargetSets.isEmpty { initialTargetSets = Array(repeating: StatechartStateSet(), count: nodes.count) }
                initialTargetSets[state] = targets
                nodes[state].initial = nodes[state].isHistory ? -2 : -1
            }
        }
        // A compound state that resumes its history by default needs the history state's own
        // default for the first time.
        for state in historyInitials {
            for target in initialTargetSets[state] where nodes[target].isHistory && nodes[target].initial == -1 {
                throw .historyWithoutDefault(StateID(rawValue: target)!)
            }
        }
        if initial.isEmpty {
            rootInitial = topLevel.first { !nodes[$0].isHistory } ?? -1
            rootInitials = StatechartStateSet(index: rootInitial)
        } else {
            for state in initial {
                let index = try index(of: state)
                guard !nodes[index].isHistory else { throw .historyAsChartInitial(state) }
                rootInitials.insert(index)
            }
            try checkCanBeActiveTogether(rootInitials, else: .conflictingInitials(initial))
            rootInitial = rootInitials.count == 1 ? rootInitials.first! : -1
        }

        guard pending.count <= Statechart<StateID, Event, Output>.transitionLimit else { throw .tooManyTransitions(pending.count) }
        // Transitions in document order of their sources, each state's in its own order.
        let bySource = pending.enumerated().sorted {
            (documentRank[$0.element.source], $0.offset) < (documentRank[$1.element.source], $1.offset)
        }
        var next = 0
        for (_, entry) in bySource {
            let (source, transition) = entry
            if nodes[source].transitions.isEmpty { nodes[source].transitions = next..<next }
            nodes[source].transitions = nodes[source].transitions.lowerBound..<(next + 1)
            next += 1
            try compile(transition, from: source)
        }
        candidateRanges = Array(repeating: 0..<0, count: nodes.count)
        for index in nodes.indices where nodes[index].kind == .atomic || nodes[index].kind == .final {
            let start = candidates.count
            var node = index
            while node >= 0 {
                candidates += Array(nodes[node].transitions)
                node = nodes[node].parent
            }
            candidateRanges[index] = start..<candidates.count
        }
    }

    private func index(of state: StateID) throws(StatechartError<StateID>) -> Int {
        let index = state.rawValue
        guard index >= 0, index < nodes.count, nodes[index].kind != .unused else { throw .unknownState(state) }
        return index
    }

    private mutating func compile(_ transition: StatechartTransition<StateID, Event, Output>, from source: Int) throws(StatechartError<StateID>) {
        var targets = StatechartStateSet()
        var targetsHistory = false
        for target in transition.targets {
            let index = try self.index(of: target)
            targets.insert(index)
            if nodes[index].isHistory { targetsHistory = true }
        }
        try checkCanBeActiveTogether(targets, else: .conflictingTargets(source: StateID(rawValue: source)!, targets: transition.targets))
        let trigger: Statechart<StateID, Event, Output>.CompiledTransition.Trigger
        var argument = -1
        switch transition.trigger {
        case let .event(pattern):
            trigger = .event
            argument = eventMatchers.count
            eventMatchers.append(pattern)
        case let .done(state):
            let index = try self.index(of: state)
            guard nodes[index].kind == .compound || nodes[index].kind == .parallel else { throw .doneOfStateWithoutChildren(state) }
            trigger = .done
            argument = index
        case .always:
            trigger = .always
        }
        var condition = -1
        if let userCondition = transition.condition {
            condition = conditions.count
            conditions.append(.init(holds: userCondition))
            conditionsReadingOnlyTheConfiguration.append(!transition.conditionReadsContext)
        }
        let isInternal = transition.kind == .internal
        var domain = -2
        if !targets.isEmpty && !targetsHistory {
            domain = Statechart<StateID, Event, Output>.domain(source: source, targets: targets, isInternal: isInternal, nodes: nodes)
        }
        edges.append(StatechartEdge(index: transitions.count, source: StateID(rawValue: source)!, transition: transition))
        transitions.append(.init(
            source: source, trigger: trigger, argument: argument, condition: condition, targets: targets, isInternal: isInternal,
            targetsHistory: targetsHistory, staticDomain: domain,
            outputs: outputs.count..<(outputs.count + transition.outputs.count)))
        transitionRaises.append(raises.count..<(raises.count + transition.raise.count))
        transitionActions.append(actions.count..<(actions.count + transition.actions.count))
        actions += transition.actions
        outputs += transition.outputs
        raises += transition.raise
    }

    /// Throws `error` unless every two of `targets` can be active at once: they meet in a
    /// parallel state.
    private func checkCanBeActiveTogether(
        _ targets: StatechartStateSet, else error: StatechartError<StateID>
    ) throws(StatechartError<StateID>) {
        let list = targets.map { $0 }
        for (position, first) in list.enumerated() {
            for second in list[(position + 1)...] where !canBeActiveTogether(first, second) { throw error }
        }
    }

    private func canBeActiveTogether(_ first: Int, _ second: Int) -> Bool {
        if nodes[first].descendants.contains(second) || nodes[second].descendants.contains(first) { return false }
        // The innermost common ancestor must be parallel.
        var ancestor = nodes[first].parent
        while ancestor >= 0 && !nodes[ancestor].descendants.contains(second) { ancestor = nodes[ancestor].parent }
        return ancestor >= 0 && nodes[ancestor].kind == .parallel
    }
}

/// A state's done event of the chart's type, in a struct so a built chart keeps them in an
/// array and calls them without a reabstraction thunk.
@usableFromInline
struct StatechartDoneEventMaker<StateID: StatechartStateID, Event: Sendable>: Sendable {
    @usableFromInline let make: @Sendable (StatechartState<StateID>) -> Event

    @usableFromInline
    init(make: @escaping @Sendable (StatechartState<StateID>) -> Event) {
        self.make = make
    }
}
