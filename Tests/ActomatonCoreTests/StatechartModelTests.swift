import ComputeOffThePool
import ActomatonCore
import Testing

// A model-based check of `Statechart`: random charts run side by side with a deliberately
// naive interpreter written straight from the pseudo-code of appendix D of the W3C SCXML
// recommendation (plain arrays of node objects, document order from a pre-order walk, an
// internal queue of done events). Nothing is shared with the implementation but the public
// definition types; every event's status, outputs (exit, transition and entry order) and
// active configuration must agree.

// MARK: - Names

/// Forty state names; a generated chart uses some of them, usually with raw values in a random
/// order, so the implementation's reordering path runs (and sometimes in document order, so its
/// fast path runs too).
private enum MN: Int, StatechartStateID, CustomStringConvertible {
    case n0, n1, n2, n3, n4, n5, n6, n7, n8, n9, n10, n11, n12, n13, n14, n15, n16, n17, n18, n19
    case n20, n21, n22, n23, n24, n25, n26, n27, n28, n29, n30, n31, n32, n33, n34, n35, n36, n37, n38, n39
    var description: String { "n\(rawValue)" }
}

/// The events: `unused` is never a trigger.
private enum ME: Equatable, Sendable, CaseIterable { case a, b, c, d, unused }

private typealias ModelChart = Statechart<MN, ME, String>
private typealias ModelNode = StatechartNode<MN, ME, String>
private typealias ModelTransition = StatechartTransition<MN, ME, String>

// MARK: - The reference interpreter (SCXML appendix D, naively)

private final class RefNode {
    enum Kind: Equatable { case root, atomic, compound, parallel, final, history(StatechartHistoryDepth) }

    let id: Int
    let kind: Kind
    /// Position in a pre-order walk of the definition: document order.
    let order: Int
    weak var parent: RefNode?
    var children: [RefNode] = []
    var transitions: [RefTransition] = []
    /// A compound state's `initial`, or a history state's default.
    var initial: Int?
    let onEntry: [String]
    let onExit: [String]
    var raiseOnEntry: [ME] = []
    var raiseOnExit: [ME] = []

    init(id: Int, kind: Kind, order: Int, parent: RefNode?, initial: Int?, onEntry: [String], onExit: [String]) {
        self.id = id
        self.kind = kind
        self.order = order
        self.parent = parent
        self.initial = initial
        self.onEntry = onEntry
        self.onExit = onExit
    }

    var isAtomic: Bool { kind == .atomic || kind == .final }
    var isHistory: Bool { if case .history = kind { true } else { false } }
    /// The child states (history pseudo-states are not states).
    var childStates: [RefNode] { children.filter { !$0.isHistory } }
}

private final class RefTransition {
    let source: RefNode
    let trigger: StatechartTrigger<MN, ME>?
    let targets: [RefNode]
    let isInternal: Bool
    let condition: (@Sendable (StatechartState<MN>) -> Bool)?
    let outputs: [String]
    var raise: [ME] = []

    init(source: RefNode, trigger: StatechartTrigger<MN, ME>?, targets: [RefNode], isInternal: Bool,
         condition: (@Sendable (StatechartState<MN>) -> Bool)?, outputs: [String]) {
        self.source = source
        self.trigger = trigger
        self.targets = targets
        self.isInternal = isInternal
        self.condition = condition
        self.outputs = outputs
    }

    var isEventless: Bool { if case .always? = trigger { true } else { false } }
}

private final class ReferenceStatechart {
    let root: RefNode
    /// Every node, in document order; the tree's owner.
    private(set) var nodes: [RefNode] = []
    private var byID: [Int: RefNode] = [:]
    let microstepLimit: Int

    var configuration: [RefNode] = []
    var historyValue: [Int: [RefNode]] = [:]
    /// SCXML's internal queue: done events (a state's id) and raised events, in order.
    enum QueuedEvent { case done(Int), raised(ME) }
    var internalQueue: [QueuedEvent] = []
    let raisedEventLimit: Int
    /// Set when an event is raised while `raisedEventLimit` raised events are waiting.
    var overflowed = false
    var running = true
    var outputs: [String] = []

    /// What the run exercised, to check that the generator reaches the interesting paths.
    var exercised = ReferenceCoverage()

    /// For every compound or parallel state that has exited, its children active then: what
    /// the implementation remembers, and follows down, for a deep history state.
    private var lastActiveChildren: [Int: [RefNode]] = [:]
    /// Set when a deep history state resolved to something else than the implementation's
    /// memory gives (see `deepHistoryTargetedFromInsideItsActiveParent`): the known deviation.
    var reachedKnownDeviation = false

    /// Whether every compound state's initial transition emits `i<id>` and every history
    /// state's default transition `d<id>` (the generator's `initialContent`).
    let initialContent: Bool
    /// SCXML's statesForDefaultEntry and defaultHistoryContent, for the microstep being taken.
    private var statesForDefaultEntry: [RefNode] = []
    private var defaultHistoryContent: [Int: [String]] = [:]

    init(initial: MN?, microstepLimit: Int, raisedEventLimit: Int = 32, initialContent: Bool = false, states: [ModelNode]) {
        self.initialContent = initialContent
        self.microstepLimit = microstepLimit
        self.raisedEventLimit = raisedEventLimit
        root = RefNode(id: -1, kind: .root, order: -1, parent: nil, initial: nil, onEntry: [], onExit: [])
        addNodes(states, to: root)
        addTransitions(states)
        root.initial = initial?.rawValue ?? states.first { if case .history = $0.kind { false } else { true } }!.id.rawValue
    }

    private func addNodes(_ definitions: [ModelNode], to parent: RefNode) {
        for definition in definitions {
            let kind: RefNode.Kind = switch definition.kind {
            case .atomic: .atomic
            case .compound: .compound
            case .parallel: .parallel
            case .final: .final
            case let .history(depth): .history(depth)
            }
            let node = RefNode(id: definition.id.rawValue, kind: kind, order: nodes.count, parent: parent,
                               initial: definition.initial?.rawValue, onEntry: definition.onEntry, onExit: definition.onExit)
            node.raiseOnEntry = definition.raiseOnEntry
            node.raiseOnExit = definition.raiseOnExit
            nodes.append(node)
            byID[node.id] = node
            parent.children.append(node)
            addNodes(definition.children, to: node)
        }
    }

    private func addTransitions(_ definitions: [ModelNode]) {
        for definition in definitions {
            let source = byID[definition.id.rawValue]!
            for transition in definition.transitions {
                let compiled = RefTransition(
                    source: source, trigger: transition.trigger, targets: transition.targets.map { byID[$0.rawValue]! },
                    isInternal: transition.kind == .internal, condition: transition.condition, outputs: transition.outputs)
                compiled.raise = transition.raise
                source.transitions.append(compiled)
            }
            addTransitions(definition.children)
        }
    }

    var activeStates: [MN] { configuration.map { MN(rawValue: $0.id)! } }
    var active: StatechartStateSet { StatechartState(activeStates).active }

    // MARK: Running

    /// `interpret`: enter the initial transition's target, then settle; the entry is microstep 1.
    func start() -> StatechartStatus {
        outputs = []
        let initial = RefTransition(source: root, trigger: nil, targets: [byID[root.initial!]!], isInternal: false,
                                    condition: nil, outputs: [])
        enterStates([initial])
        return macrostep(after: 1)
    }

    /// One external event: its microstep, then the eventless transitions and internal events.
    func send(_ event: ME) -> StatechartStatus {
        outputs = []
        guard running else { return .finished }
        let enabled = selectTransitions { transition in
            if case let .event(pattern)? = transition.trigger { pattern.matches(event) } else { false }
        }
        if enabled.isEmpty { return .ignored }
        microstep(enabled)
        return macrostep(after: 1)
    }

    /// `mainEventLoop`'s inner loop, stopping before microstep `microstepLimit + 1`. The
    /// internal queue lives for one step.
    private func macrostep(after microsteps: Int) -> StatechartStatus {
        var microsteps = microsteps
        defer {
            internalQueue = []
            overflowed = false
        }
        while true {
            // A microstep that raised past the limit is the step's last.
            if overflowed { return .stoppedAtRaisedEventLimit }
            if !running { break }
            var enabled = selectTransitions { $0.isEventless }
            if !enabled.isEmpty {
                exercised.takenEventlessTransitions += 1
            } else {
                if internalQueue.isEmpty { break }
                switch internalQueue.removeFirst() {
                case let .done(done):
                    enabled = selectTransitions { transition in
                        if case let .done(state)? = transition.trigger { state.rawValue == done } else { false }
                    }
                    if !enabled.isEmpty {
                        exercised.takenDoneTransitions += 1
                        if byID[done]!.kind == .parallel { exercised.takenParallelDoneTransitions += 1 }
                    }
                case let .raised(event):
                    enabled = selectTransitions { transition in
                        if case let .event(pattern)? = transition.trigger { pattern.matches(event) } else { false }
                    }
                    if !enabled.isEmpty { exercised.takenRaisedEvents += 1 }
                }
            }
            if !enabled.isEmpty {
                if microsteps >= microstepLimit { return .stoppedAtMicrostepLimit }
                microstep(enabled)
                microsteps += 1
            }
        }
        return .transitioned
    }

    /// Queues a done event, or marks the step as overflowed when two per final state below the
    /// top are waiting (the implementation's bound).
    private func queueDone(_ state: Int) {
        let finals = byID.values.count { $0.kind == .final && $0.parent !== root }
        let waiting = internalQueue.count(where: { if case .done = $0 { true } else { false } })
        if waiting >= 2 * finals {
            overflowed = true
            exercised.overflows += 1
        } else {
            internalQueue.append(.done(state))
        }
    }

    /// `<raise>`: queues `events`, or marks the step as overflowed when the limit is reached.
    private func raise(_ events: [ME]) {
        for event in events {
            let waiting = internalQueue.count(where: { if case .raised = $0 { true } else { false } })
            if waiting >= raisedEventLimit {
                overflowed = true
                exercised.overflows += 1
            } else {
                internalQueue.append(.raised(event))
            }
        }
    }

    // MARK: Selection

    private func selectTransitions(_ matches: (RefTransition) -> Bool) -> [RefTransition] {
        var enabled: [RefTransition] = []
        let atomicStates = configuration.filter(\.isAtomic).sorted { $0.order < $1.order }
        for state in atomicStates {
            search: for s in [state] + properAncestors(of: state, upTo: nil) {
                for transition in s.transitions where matches(transition) && conditionMatch(transition) {
                    if !enabled.contains(where: { $0 === transition }) { enabled.append(transition) }
                    break search
                }
            }
        }
        return removeConflictingTransitions(enabled)
    }

    private func conditionMatch(_ transition: RefTransition) -> Bool {
        transition.condition?(StatechartState(activeStates)) ?? true
    }

    private func removeConflictingTransitions(_ enabled: [RefTransition]) -> [RefTransition] {
        var filtered: [RefTransition] = []
        for t1 in enabled {
            var t1Preempted = false
            var toRemove: [RefTransition] = []
            let exits1 = computeExitSet([t1])
            for t2 in filtered {
                let exits2 = computeExitSet([t2])
                if exits1.contains(where: { s in exits2.contains { $0 === s } }) {
                    if isDescendant(t1.source, of: t2.source) {
                        toRemove.append(t2)
                    } else {
                        t1Preempted = true
                        break
                    }
                }
            }
            if t1Preempted {
                exercised.preemptedTransitions += 1
            } else {
                exercised.preemptedTransitions += toRemove.count
                filtered.removeAll { t in toRemove.contains { $0 === t } }
                filtered.append(t1)
            }
        }
        return filtered
    }

    // MARK: The microstep

    private func microstep(_ enabled: [RefTransition]) {
        exitStates(enabled)
        for transition in enabled {
            outputs += transition.outputs
            raise(transition.raise)
        }
        enterStates(enabled)
    }

    private func exitStates(_ enabled: [RefTransition]) {
        let statesToExit = computeExitSet(enabled).sorted { $0.order > $1.order }
        // History is recorded for every exiting state before any state is removed.
        for s in statesToExit {
            if s.kind == .compound || s.kind == .parallel {
                lastActiveChildren[s.id] = configuration.filter { $0.parent === s }
            }
            for h in s.children where h.isHistory {
                if h.kind == .history(.deep) {
                    historyValue[h.id] = configuration.filter { $0.isAtomic && isDescendant($0, of: s) }
                } else {
                    historyValue[h.id] = configuration.filter { $0.parent === s }
                }
            }
        }
        for s in statesToExit {
            outputs += s.onExit
            raise(s.raiseOnExit)
            configuration.removeAll { $0 === s }
        }
    }

    private func computeExitSet(_ transitions: [RefTransition]) -> [RefNode] {
        var statesToExit: [RefNode] = []
        for transition in transitions where !transition.targets.isEmpty {
            guard let domain = transitionDomain(transition) else { continue }
            for s in configuration where isDescendant(s, of: domain) && !statesToExit.contains(where: { $0 === s }) {
                statesToExit.append(s)
            }
        }
        return statesToExit
    }

    private func enterStates(_ enabled: [RefTransition]) {
        var statesToEnter: [RefNode] = []
        statesForDefaultEntry = []
        defaultHistoryContent = [:]
        computeEntrySet(enabled, &statesToEnter)
        for s in statesToEnter.sorted(by: { $0.order < $1.order }) {
            configuration.append(s)
            outputs += s.onEntry
            raise(s.raiseOnEntry)
            if initialContent {
                if statesForDefaultEntry.contains(where: { $0 === s }) {
                    exercised.initialContentRuns += 1
                    outputs.append("i\(s.id)")
                }
                if let content = defaultHistoryContent[s.id] {
                    exercised.historyContentRuns += 1
                    outputs += content
                }
            }
            guard s.kind == .final, let parent = s.parent else { continue }
            if parent === root {
                running = false
            } else {
                queueDone(parent.id)
                if let grandparent = parent.parent, grandparent.kind == .parallel,
                   grandparent.childStates.allSatisfy(isInFinalState) {
                    queueDone(grandparent.id)
                }
            }
        }
    }

    private func computeEntrySet(_ transitions: [RefTransition], _ statesToEnter: inout [RefNode]) {
        for transition in transitions {
            for s in transition.targets { addDescendantStatesToEnter(s, &statesToEnter) }
            guard let ancestor = transitionDomain(transition) else { continue }
            for s in effectiveTargetStates(transition) { addAncestorStatesToEnter(s, ancestor, &statesToEnter) }
        }
    }

    private func addDescendantStatesToEnter(_ state: RefNode, _ statesToEnter: inout [RefNode]) {
        if state.isHistory {
            let targets: [RefNode]
            if let value = historyValue[state.id], !value.isEmpty {
                exercised.resumedHistories += 1
                noteDeviation(state, value)
                targets = value
            } else {
                exercised.defaultHistories += 1
                targets = defaultTargets(of: state)
                defaultHistoryContent[state.parent!.id, default: []].append("d\(state.id)")
            }
            for s in targets { addDescendantStatesToEnter(s, &statesToEnter) }
            for s in targets { addAncestorStatesToEnter(s, state.parent!, &statesToEnter) }
            return
        }
        if !statesToEnter.contains(where: { $0 === state }) { statesToEnter.append(state) }
        if state.kind == .compound {
            statesForDefaultEntry.append(state)
            let initial = initialChild(of: state)
            addDescendantStatesToEnter(initial, &statesToEnter)
            addAncestorStatesToEnter(initial, state, &statesToEnter)
        } else if state.kind == .parallel {
            for child in state.childStates where !statesToEnter.contains(where: { isDescendant($0, of: child) }) {
                addDescendantStatesToEnter(child, &statesToEnter)
            }
        }
    }

    private func addAncestorStatesToEnter(_ state: RefNode, _ ancestor: RefNode, _ statesToEnter: inout [RefNode]) {
        for anc in properAncestors(of: state, upTo: ancestor) {
            if !statesToEnter.contains(where: { $0 === anc }) { statesToEnter.append(anc) }
            if anc.kind == .parallel {
                for child in anc.childStates where !statesToEnter.contains(where: { isDescendant($0, of: child) }) {
                    addDescendantStatesToEnter(child, &statesToEnter)
                }
            }
        }
    }

    private func isInFinalState(_ s: RefNode) -> Bool {
        switch s.kind {
        case .compound: s.childStates.contains { $0.kind == .final && isActive($0) }
        case .parallel: s.childStates.allSatisfy(isInFinalState)
        default: false
        }
    }

    // MARK: Domains and targets

    private func transitionDomain(_ transition: RefTransition) -> RefNode? {
        let targets = effectiveTargetStates(transition)
        if targets.isEmpty { return nil }
        if transition.source === root { return root }  // the initial transition
        if transition.isInternal && transition.source.kind == .compound
            && targets.allSatisfy({ isDescendant($0, of: transition.source) }) {
            return transition.source
        }
        return findLCCA([transition.source] + targets)
    }

    private func findLCCA(_ states: [RefNode]) -> RefNode {
        for anc in properAncestors(of: states[0], upTo: nil) where anc.kind == .compound {
            if states.dropFirst().allSatisfy({ isDescendant($0, of: anc) }) { return anc }
        }
        return root
    }

    private func effectiveTargetStates(_ transition: RefTransition) -> [RefNode] {
        var targets: [RefNode] = []
        func add(_ s: RefNode) { if !targets.contains(where: { $0 === s }) { targets.append(s) } }
        for s in transition.targets {
            if s.isHistory {
                if let value = historyValue[s.id], !value.isEmpty {
                    noteDeviation(s, value)
                    value.forEach(add)
                } else {
                    defaultTargets(of: s).forEach(add)
                }
            } else {
                add(s)
            }
        }
        return targets
    }

    /// Notes whether the implementation resumes `value` for the deep history state `history`:
    /// it follows each state's last active children down from the history's parent, which is
    /// SCXML's value unless a state below the parent exited after the parent last did.
    private func noteDeviation(_ history: RefNode, _ value: [RefNode]) {
        guard history.kind == .history(.deep) else { return }
        if value.contains(where: { $0.parent !== history.parent }) { exercised.deepResumesBelowChildren += 1 }
        func leaves(_ states: [RefNode]) -> [RefNode] {
            states.flatMap { state in
                let below = lastActiveChildren[state.id] ?? []
                return below.isEmpty ? [state] : leaves(below)
            }
        }
        let chain = Set(leaves(lastActiveChildren[history.parent!.id] ?? []).map(\.id))
        if chain != Set(value.map(\.id)) { reachedKnownDeviation = true }
    }

    /// A history state's default transition's targets: its default, or else its parent's
    /// default entry (the initial child of a compound parent, every region of a parallel one).
    private func defaultTargets(of history: RefNode) -> [RefNode] {
        if let target = history.initial { return [byID[target]!] }
        let parent = history.parent!
        return parent.kind == .compound ? [initialChild(of: parent)] : parent.childStates
    }

    private func initialChild(of compound: RefNode) -> RefNode {
        compound.initial.map { byID[$0]! } ?? compound.childStates[0]
    }

    // MARK: The tree

    private func isActive(_ s: RefNode) -> Bool { configuration.contains { $0 === s } }

    /// Whether `s` is a proper descendant of `ancestor`.
    private func isDescendant(_ s: RefNode, of ancestor: RefNode) -> Bool {
        var node = s.parent
        while let current = node {
            if current === ancestor { return true }
            node = current.parent
        }
        return false
    }

    /// The proper ancestors of `s`, innermost first, up to but not including `upTo` (all of
    /// them when `nil`). The root (the `<scxml>` element) is never included: it is no state.
    private func properAncestors(of s: RefNode, upTo: RefNode?) -> [RefNode] {
        var ancestors: [RefNode] = []
        var node = s.parent
        while let current = node, current !== upTo, current !== root {
            ancestors.append(current)
            node = current.parent
        }
        return ancestors
    }
}

// MARK: - Random charts

private final class GenNode {
    var kind: StatechartNodeKind
    var id = -1
    weak var parent: GenNode?
    var children: [GenNode] = []
    var initial: Int?
    var transitions: [ModelTransition] = []
    var transitionNotes: [String] = []
    var raiseOnEntry: [ME] = []
    var raiseOnExit: [ME] = []

    init(_ kind: StatechartNodeKind, parent: GenNode?) {
        self.kind = kind
        self.parent = parent
    }

    var isHistory: Bool { if case .history = kind { true } else { false } }
    var isComposite: Bool { kind == .compound || kind == .parallel }
    var canTransition: Bool { kind == .atomic || kind == .compound || kind == .parallel }

    /// This node and everything below it, in document order.
    var subtree: [GenNode] { [self] + children.flatMap(\.subtree) }
    var descendants: [GenNode] { children.flatMap(\.subtree) }
}

/// Counts of the paths a reference run went through.
private struct ReferenceCoverage {
    var resumedHistories = 0
    var defaultHistories = 0
    var preemptedTransitions = 0
    var takenDoneTransitions = 0
    var takenEventlessTransitions = 0
    var takenParallelDoneTransitions = 0
    /// Deep history resumptions that entered a state below the parent's children.
    var deepResumesBelowChildren = 0
    /// Raised events that enabled a transition.
    var takenRaisedEvents = 0
    /// Events raised past the limit.
    var overflows = 0
    /// Initial transitions' and history defaults' content run.
    var initialContentRuns = 0
    var historyContentRuns = 0

    static func += (total: inout Self, run: Self) {
        total.initialContentRuns += run.initialContentRuns
        total.historyContentRuns += run.historyContentRuns
        total.resumedHistories += run.resumedHistories
        total.defaultHistories += run.defaultHistories
        total.preemptedTransitions += run.preemptedTransitions
        total.takenDoneTransitions += run.takenDoneTransitions
        total.takenEventlessTransitions += run.takenEventlessTransitions
        total.takenParallelDoneTransitions += run.takenParallelDoneTransitions
        total.deepResumesBelowChildren += run.deepResumesBelowChildren
        total.takenRaisedEvents += run.takenRaisedEvents
        total.overflows += run.overflows
    }
}

private struct GeneratedChart {
    var initial: MN?
    var microstepLimit: Int
    var raisedEventLimit = 32
    var states: [ModelNode]
    var events: [ME]
    var listing: String
}

private struct ChartGenerator {
    var random: SplitMix64
    /// When set, transitions and states raise events, drawn from a stream of their own so the
    /// charts of a seed are otherwise the same as without.
    var raising: SplitMix64?

    /// When set, compound states' initial transitions and history states' defaults have
    /// content (`i<id>`, `d<id>`).
    var initialContent = false

    init(seed: UInt64, raising: Bool = false, initialContent: Bool = false) {
        self.initialContent = initialContent
        random = SplitMix64(seed: seed)
        self.raising = raising ? SplitMix64(seed: seed ^ 0x5EED_0F_4A15E) : nil
    }

    /// Up to two events to raise, or none; always none without `raising`.
    mutating func raisedEvents(_ probability: Double) -> [ME] {
        guard var stream = raising else { return [] }
        defer { raising = stream }
        guard Double.random(in: 0..<1, using: &stream) < probability else { return [] }
        return (0..<Int.random(in: 1...2, using: &stream)).map { _ in [ME.a, .b, .c, .d, .unused].randomElement(using: &stream)! }
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
    mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &random) < probability }
    mutating func pick<T>(_ list: [T]) -> T { list[int(0...(list.count - 1))] }

    /// `total` split into `count` positive shares.
    mutating func split(_ total: Int, into count: Int) -> [Int] {
        var shares = Array(repeating: 1, count: count)
        for _ in 0..<max(total - count, 0) { shares[int(0...(count - 1))] += 1 }
        return shares
    }

    mutating func generate(eventCount: Int) -> GeneratedChart {
        let budget = int(4...18)
        let topCount = min(int(2...4), budget)
        var top = split(budget, into: topCount).map { makeState(depth: 0, parent: nil, budget: $0, allowFinal: false, isRegion: false) }
        if chance(0.2) { top.insert(GenNode(.final, parent: nil), at: int(1...top.count)) }

        let all = top.flatMap(\.subtree)
        precondition(all.count <= 40, "a chart of \(all.count) states does not fit the forty names")
        let ids = chance(0.25) ? Array(0..<all.count) : Array(Array(0..<40).shuffled(using: &random).prefix(all.count))
        for (node, id) in zip(all, ids) { node.id = id }

        for node in all {
            if node.kind == .compound, chance(0.25) {
                node.initial = pick(node.descendants.filter { !$0.isHistory }).id
            } else if node.isHistory, chance(0.5) {
                node.initial = pick(node.parent!.descendants.filter { !$0.isHistory }).id
            }
        }

        let states = all.filter { !$0.isHistory }
        let histories = all.filter(\.isHistory)
        let composites = all.filter(\.isComposite)
        let parallels = all.filter { $0.kind == .parallel }
        var transitionCount = 0
        for node in all where node.canTransition {
            for _ in 0..<pick([0, 0, 1, 1, 1, 2, 2, 2, 3, 3]) {
                let (transition, note) = makeTransition(
                    index: transitionCount, states: states, histories: histories, composites: composites, parallels: parallels)
                node.transitions.append(transition)
                node.transitionNotes.append(note)
                transitionCount += 1
            }
        }

        for node in all where !node.isHistory {
            node.raiseOnEntry = raisedEvents(0.2)
            node.raiseOnExit = raisedEvents(0.15)
        }

        let initial: MN? = chance(0.15) ? MN(rawValue: pick(states.filter { !($0.kind == .final && $0.parent == nil) }).id) : nil
        let microstepLimit = chance(0.3) ? 100 : int(2...12)
        let events = (0..<eventCount).map { _ in chance(0.05) ? ME.unused : pick([ME.a, .b, .c, .d]) }
        var listing = "initial: \(initial.map { "\($0)" } ?? "default"), microstepLimit: \(microstepLimit)\n"
        for node in top { describe(node, indent: "", into: &listing) }
        var raisedEventLimit = 32
        if var stream = raising {
            raisedEventLimit = Bool.random(using: &stream) ? Int.random(in: 1...3, using: &stream) : 32
            raising = stream
            listing = "raisedEventLimit: \(raisedEventLimit), " + listing
        }
        var definitions: [ModelNode] = []
        for node in top { definitions.append(definition(node)) }
        return GeneratedChart(initial: initial, microstepLimit: microstepLimit, raisedEventLimit: raisedEventLimit,
                              states: definitions, events: events, listing: listing)
    }

    private mutating func makeState(depth: Int, parent: GenNode?, budget: Int, allowFinal: Bool, isRegion: Bool) -> GenNode {
        let rest = budget - 1
        guard rest >= 1, depth < 4, chance(isRegion ? 0.85 : depth == 0 ? 0.6 : 0.45) else {
            return GenNode(allowFinal && chance(0.2) ? .final : .atomic, parent: parent)
        }
        let parallel = rest >= 2 && chance(0.3)
        let node = GenNode(parallel ? .parallel : .compound, parent: parent)
        let count = parallel ? min(int(2...3), rest) : min(int(1...4), rest)
        // Half the parallel states get a final state in each region, so that they can be done
        // (one extra state per region: at most doubling the budget, within 40).
        let finishing = parallel && chance(0.5)
        let spare = rest - count
        let historyCount = spare >= 1 && chance(0.45) ? (spare >= 2 && chance(0.25) ? 2 : 1) : 0
        node.children = split(rest - historyCount, into: count).map {
            makeState(depth: depth + 1, parent: node, budget: $0, allowFinal: !parallel, isRegion: parallel)
        }
        if finishing {
            for region in node.children where region.kind != .parallel {
                if region.kind == .atomic { region.kind = .compound }
                if !region.children.contains(where: { $0.kind == .final }) {
                    region.children.insert(GenNode(.final, parent: region), at: int(0...region.children.count))
                }
            }
        }
        for index in 0..<historyCount {
            let historyDepth: StatechartHistoryDepth = historyCount == 2 ? (index == 0 ? .shallow : .deep)
                : chance(0.5) ? .shallow : .deep
            node.children.insert(GenNode(.history(historyDepth), parent: node), at: int(0...node.children.count))
        }
        return node
    }

    private mutating func makeTransition(
        index: Int, states: [GenNode], histories: [GenNode], composites: [GenNode], parallels: [GenNode]
    ) -> (ModelTransition, String) {
        let trigger: StatechartTrigger<MN, ME>
        var note: String
        let roll = Double.random(in: 0..<1, using: &random)
        if roll < 0.6 || (roll >= 0.78 && composites.isEmpty) {
            let event = pick([ME.a, .a, .b, .b, .c, .c, .d])
            trigger = .event(TransitionPattern(event))
            note = "\(event)"
        } else if roll < 0.78 {
            trigger = .always
            note = "always"
        } else {
            let state = MN(rawValue: (!parallels.isEmpty && chance(0.4) ? pick(parallels) : pick(composites)).id)!
            trigger = .done(state)
            note = "done(\(state))"
        }

        var targets: [GenNode]
        let targetRoll = Double.random(in: 0..<1, using: &random)
        if targetRoll < 0.15 {
            targets = []
        } else if targetRoll < 0.3, !parallels.isEmpty {
            let regions = pick(parallels).children.filter { !$0.isHistory }.shuffled(using: &random)
            targets = regions.prefix(int(2...regions.count)).map { region in
                let inside = region.subtree
                let histories = inside.filter(\.isHistory)
                return !histories.isEmpty && chance(0.15) ? pick(histories) : pick(inside.filter { !$0.isHistory })
            }
        } else if !histories.isEmpty, chance(0.3) {
            targets = [pick(histories)]
        } else {
            let finals = states.filter { $0.kind == .final && $0.parent != nil }
            targets = [!finals.isEmpty && chance(0.2) ? pick(finals) : pick(states)]
        }
        let ids = targets.map { MN(rawValue: $0.id)! }
        note += " -> \(ids)"

        let kind: StatechartTransitionKind = chance(0.3) ? .internal : .external
        if kind == .internal { note += " internal" }

        var condition: (@Sendable (StatechartState<MN>) -> Bool)?
        if chance(note.hasPrefix("always") ? 0.85 : 0.35) {
            let conditionRoll = Double.random(in: 0..<1, using: &random)
            let state = MN(rawValue: pick(states).id)!
            if conditionRoll < 0.45 {
                condition = { $0.isIn(state) }
                note += " when isIn(\(state))"
            } else if conditionRoll < 0.9 {
                condition = { !$0.isIn(state) }
                note += " when !isIn(\(state))"
            } else {
                let constant = chance(0.5)
                condition = { _ in constant }
                note += " when \(constant)"
            }
        }
        let raise = raisedEvents(0.3)
        if !raise.isEmpty { note += " raise \(raise)" }
        note += " [t\(index)]"
        return (ModelTransition(trigger: trigger, targets: ids, kind: kind, condition: condition, outputs: ["t\(index)"], raise: raise),
                note)
    }

    private mutating func definition(_ node: GenNode) -> ModelNode {
        let id = MN(rawValue: node.id)!
        let initialTargets = node.initial.flatMap(MN.init(rawValue:)).map { [$0] } ?? []
        if node.isHistory {
            return ModelNode(id: id, kind: node.kind, initialTargets: initialTargets,
                             initialActions: initialContent ? [.emit("d\(node.id)")] : [])
        }
        var children: [ModelNode] = []
        for child in node.children { children.append(definition(child)) }
        return ModelNode(id: id, kind: node.kind, initialTargets: initialTargets,
                         initialActions: initialContent && node.kind == .compound ? [.emit("i\(node.id)")] : [],
                         onEntry: ["+\(id)"], onExit: ["-\(id)"], raiseOnEntry: node.raiseOnEntry, raiseOnExit: node.raiseOnExit,
                         transitions: node.transitions, children: children)
    }

    private func describe(_ node: GenNode, indent: String, into text: inout String) {
        text += "\(indent)\(node.kind) n\(node.id)"
        if let initial = node.initial { text += node.isHistory ? " default n\(initial)" : " initial n\(initial)" }
        if !node.raiseOnEntry.isEmpty { text += " raise on entry \(node.raiseOnEntry)" }
        if !node.raiseOnExit.isEmpty { text += " raise on exit \(node.raiseOnExit)" }
        text += "\n"
        for note in node.transitionNotes { text += "\(indent)  on \(note)\n" }
        for child in node.children { describe(child, indent: indent + "    ", into: &text) }
    }
}

// MARK: - The comparison

private struct ModelRun {
    enum Result {
        case rejected(StatechartError<MN>)
        case compared(steps: Int)
        /// The chart's start stopped at a limit, as the reference's did.
        case unsettled
        case mismatch(String)
    }

    var statuses: [StatechartStatus: Int] = [:]
    /// Seeds whose comparison stopped at the known deep-history deviation.
    var knownDeviations = 0
    /// What the reference exercised, over every seed.
    var exercised = ReferenceCoverage()

    /// Builds the chart of `seed`, starts it and sends its events on both sides.
    mutating func check(seed: UInt64, events eventCount: Int = 40, raising: Bool = false, initialContent: Bool = false) -> Result {
        var generator = ChartGenerator(seed: seed, raising: raising, initialContent: initialContent)
        let generated = generator.generate(eventCount: eventCount)
        let reference = ReferenceStatechart(initial: generated.initial, microstepLimit: generated.microstepLimit,
                                            raisedEventLimit: generated.raisedEventLimit, initialContent: initialContent,
                                            states: generated.states)
        defer { exercised += reference.exercised }
        let referenceStart = reference.start()
        if reference.reachedKnownDeviation { return .compared(steps: 0) }
        let header = "seed \(seed) (reproduce: `var run = ModelRun(); run.check(seed: \(seed), raising: \(raising), initialContent: \(initialContent))`,"
            + " or seeds = \(seed)..<\(seed + 1))"
        let chart: ModelChart
        do {
            chart = try ModelChart(initial: generated.initial, microstepLimit: generated.microstepLimit,
                                   raisedEventLimit: generated.raisedEventLimit, states: generated.states)
        } catch {
            return .rejected(error)
        }
        if chart.initialStatus != .transitioned {
            if referenceStart == .transitioned {
                return .mismatch("\(header), start: the chart stopped with \(chart.initialStatus), the reference settled:"
                    + " \(reference.outputs) in \(reference.activeStates)\n\(generated.listing)")
            }
            return .unsettled
        }
        var started = StatechartState<MN>()
        if referenceStart != .transitioned
            || chart.initialOutputs != reference.outputs
            || chart.start(into: &started) != StatechartReply(status: .transitioned, outputs: reference.outputs)
            || started != chart.initialState || chart.initialState.active != reference.active {
            return .mismatch("""
                \(header), start:
                  chart:     \(chart.initialOutputs) in \(chart.initialState)
                  reference: \(referenceStart) \(reference.outputs) in \(sorted(reference))
                \(generated.listing)
                """)
        }
        var state = chart.initialState
        for (step, event) in generated.events.enumerated() {
            let reply = chart.send(event, to: &state)
            let status = reference.send(event)
            if reference.reachedKnownDeviation {
                knownDeviations += 1
                return .compared(steps: step)
            }
            statuses[status, default: 0] += 1
            if reply.status != status || reply.outputs != reference.outputs || state.active != reference.active {
                return .mismatch("""
                    \(header), step \(step) (event .\(event), after \(generated.events.prefix(step).map { ".\($0)" })):
                      chart:     \(reply.status) \(reply.outputs) in \(state)
                      reference: \(status) \(reference.outputs) in \(sorted(reference))
                    \(generated.listing)
                    """)
            }
        }
        return .compared(steps: generated.events.count)
    }

    private func sorted(_ reference: ReferenceStatechart) -> [Int] { reference.configuration.map(\.id).sorted() }
}

@Suite("Statechart: against a naive SCXML interpreter")
struct StatechartModelTests {
    @Test func randomChartsAgreeWithTheReferenceInterpreter() async {
        var run = ModelRun()
        let seeds = 0..<UInt64(700)
        var compared = 0, steps = 0, unsettled = 0
        var rejections: [String: Int] = [:]
        var mismatches = 0
        for seed in seeds {
            // Computes for seconds: lets the tests waiting for the pool's threads run meanwhile.
            await Task.yield()
            switch run.check(seed: seed) {
            case let .compared(count):
                compared += 1
                steps += count
            case .unsettled:
                unsettled += 1
            case let .rejected(error):
                rejections["\(error)", default: 0] += 1
            case let .mismatch(message):
                mismatches += 1
                if mismatches <= 3 { Issue.record(Comment(rawValue: message)) }
            }
        }
        #expect(mismatches == 0, "\(mismatches) of \(seeds.count) seeds disagree")
        // Most generated charts build (a chart whose own start loops is a fair rejection, and
        // is itself compared: the reference must stop at the limit too).
        #expect(compared >= seeds.count * 3 / 4, "built \(compared), unsettled \(unsettled), rejected \(rejections)")
        #expect(rejections.isEmpty, "\(rejections)")
        // Seeds that reach the known deep-history deviation are compared only up to it; they
        // must stay rare, or they would hide real differences.
        #expect(run.knownDeviations * 100 <= seeds.count, "\(run.knownDeviations) seeds stopped at the known deviation")
        // The runs reach every status and the paths worth checking.
        for status in [StatechartStatus.transitioned, .ignored, .finished, .stoppedAtMicrostepLimit] {
            #expect(run.statuses[status, default: 0] > 0, "no \(status) in \(run.statuses)")
        }
        #expect(run.exercised.resumedHistories > 0 && run.exercised.defaultHistories > 0)
        #expect(run.exercised.preemptedTransitions > 0 && run.exercised.takenDoneTransitions > 0 && run.exercised.takenEventlessTransitions > 0)
        #expect(run.exercised.takenParallelDoneTransitions > 0 && run.exercised.deepResumesBelowChildren > 0)
        print("StatechartModelTests: \(compared) charts compared over \(steps) events (\(unsettled) did not settle at start,",
              "\(run.knownDeviations) stopped at the known deep-history deviation);",
              "statuses \(run.statuses); histories resumed \(run.exercised.resumedHistories), defaulted \(run.exercised.defaultHistories);",
              "preempted \(run.exercised.preemptedTransitions), done taken \(run.exercised.takenDoneTransitions),",
              "eventless taken \(run.exercised.takenEventlessTransitions), parallel done taken \(run.exercised.takenParallelDoneTransitions),",
              "deep resumes below the children \(run.exercised.deepResumesBelowChildren)")
    }
}


@Suite("Statechart: raised events against a naive SCXML interpreter")
struct StatechartRaiseModelTests {
    // The same random charts, with raised events on a fifth of the states' entries and exits and
    // on a third of the transitions, and sometimes a raised-event limit of 1 to 3.
    @Test func randomChartsThatRaiseAgreeWithTheReferenceInterpreter() async {
        var run = ModelRun()
        let seeds = 0..<UInt64(700)
        var compared = 0, steps = 0, unsettled = 0, mismatches = 0
        var rejections: [String: Int] = [:]
        for seed in seeds {
            // Computes for seconds: lets the tests waiting for the pool's threads run meanwhile.
            await Task.yield()
            switch run.check(seed: seed, raising: true) {
            case let .compared(count):
                compared += 1
                steps += count
            case .unsettled:
                unsettled += 1
            case let .rejected(error):
                rejections["\(error)", default: 0] += 1
            case let .mismatch(message):
                mismatches += 1
                if mismatches <= 3 { Issue.record(Comment(rawValue: message)) }
            }
        }
        #expect(mismatches == 0, "\(mismatches) of \(seeds.count) seeds disagree")
        #expect(compared >= seeds.count / 2, "built \(compared), unsettled \(unsettled), rejected \(rejections)")
        #expect(rejections.isEmpty, "\(rejections)")
        for status in [StatechartStatus.transitioned, .ignored, .finished, .stoppedAtMicrostepLimit, .stoppedAtRaisedEventLimit] {
            #expect(run.statuses[status, default: 0] > 0, "no \(status) in \(run.statuses)")
        }
        #expect(run.exercised.takenRaisedEvents > 0 && run.exercised.overflows > 0)
        #expect(run.exercised.takenDoneTransitions > 0 && run.exercised.takenEventlessTransitions > 0)
        print("StatechartRaiseModelTests: \(compared) charts compared over \(steps) events (\(unsettled) did not settle at start);",
              "statuses \(run.statuses); raised events taken \(run.exercised.takenRaisedEvents), overflows \(run.exercised.overflows)")
    }
}

@Suite("Statechart: initial-transition and history-default content against a naive SCXML interpreter")
struct StatechartInitialContentModelTests {
    // The same random charts, raising events, with content on every compound state's initial
    // transition and every history state's default: each runs where SCXML runs it, after the
    // entry content of the state entered by default (or of the history state's parent).
    @Test func randomChartsWithInitialContentAgreeWithTheReferenceInterpreter() async {
        var run = ModelRun()
        let seeds = 0..<UInt64(500)
        var compared = 0, mismatches = 0
        for seed in seeds {
            // Computes for seconds: lets the tests waiting for the pool's threads run meanwhile.
            await Task.yield()
            switch run.check(seed: seed, raising: true, initialContent: true) {
            case .compared: compared += 1
            case .unsettled, .rejected: break
            case let .mismatch(message):
                mismatches += 1
                if mismatches <= 3 { Issue.record(Comment(rawValue: message)) }
            }
        }
        #expect(mismatches == 0, "\(mismatches) of \(seeds.count) seeds disagree")
        #expect(compared >= seeds.count / 2)
        #expect(run.exercised.initialContentRuns > 0 && run.exercised.historyContentRuns > 0)
        print("StatechartInitialContentModelTests: \(compared) charts compared; initial content run",
              "\(run.exercised.initialContentRuns) times, history defaults' \(run.exercised.historyContentRuns)")
    }
}

@Suite("CompiledStatechart: against the chart it was compiled from")
struct CompiledStatechartModelTests {
    /// With `raising`, the charts raise events (see ``StatechartRaiseModelTests``).
    @Test(arguments: [false, true])
    func compiledRandomChartsAgreeWithTheirCharts(raising: Bool) async {
        var compiledCharts = 0, mergedCharts = 0, steps = 0, overLimit = 0, mismatches = 0
        for seed in 0..<UInt64(700) {
            // Computes for seconds: lets the tests waiting for the pool's threads run meanwhile.
            await Task.yield()
            var generator = ChartGenerator(seed: seed, raising: raising)
            let generated = generator.generate(eventCount: 200)
            guard let chart = try? ModelChart(initial: generated.initial, microstepLimit: generated.microstepLimit,
                                              raisedEventLimit: generated.raisedEventLimit, states: generated.states)
            else { continue }
            let compiled: CompiledStatechart<MN, ME, String>
            do {
                compiled = try chart.compiled(events: ME.allCases, stateLimit: 2_000) { ME.allCases.firstIndex(of: $0)! }
            } catch .stateLimitExceeded {
                overLimit += 1
                continue
            } catch {
                Issue.record("seed \(seed): \(error)")
                continue
            }
            compiledCharts += 1
            if compiled.stateCount < chart.coveringPaths(events: ME.allCases).statesExplored { mergedCharts += 1 }
            #expect(compiled.initialOutputs == chart.initialOutputs)
            // The form that leaves the context to run time: a chart without one answers its
            // guards while compiling, so every slot is a plain entry.
            guard let evaluating = try? chart.compiledEvaluatingContext(events: ME.allCases, stateLimit: 4_000, classifiedBy: {
                ME.allCases.firstIndex(of: $0)!
            }) else {
                Issue.record("seed \(seed): compiles, but not with the context left to run time")
                continue
            }
            #expect(evaluating.programSlotCount == 0 && evaluating.initialOutputs == chart.initialOutputs)
            var state = chart.initialState
            var compiledState = compiled.initialState
            var evaluatingState = evaluating.initialState
            for (step, event) in generated.events.enumerated() {
                let expected = chart.send(event, to: &state)
                let reply = compiled.send(event, to: &compiledState)
                let evaluatingReply = evaluating.send(event, to: &evaluatingState)
                guard reply == expected, compiled.configuration(of: compiledState) == state.active,
                      evaluatingReply == expected, evaluating.configuration(of: evaluatingState) == state.active
                else {
                    mismatches += 1
                    if mismatches <= 3 {
                        Issue.record(Comment(rawValue: """
                            seed \(seed) (raising: \(raising)), step \(step) (event .\(event)):
                              chart:    \(expected.status) \(expected.outputs) in \(state)
                              compiled: \(reply.status) \(reply.outputs) in \(compiled.configuration(of: compiledState))
                            \(generated.listing)
                            """))
                    }
                    break
                }
                steps += 1
            }
        }
        #expect(mismatches == 0)
        #expect(compiledCharts >= (raising ? 400 : 500), "compiled \(compiledCharts), over the state limit \(overLimit)")
        // Merging states that differ only in unseen history happens in many charts.
        #expect(mergedCharts > 0)
        print("CompiledStatechartModelTests (raising: \(raising)): \(compiledCharts) charts compiled (\(mergedCharts) with merged states,",
              "\(overLimit) over 2,000 states), \(steps) events compared")
    }
}

@Suite("Statechart: what the model test found")
struct StatechartModelFindingTests {
    /// Seven done events in one microstep: one per region of `n0`, whose regions start in final
    /// states, then `n0`'s own. The queue used to hold `2 × microstepLimit + 2` (here 6), on the
    /// belief that a microstep raises at most two, and silently dropped `n0`'s done event, so
    /// `onDone(n0)` was never taken.
    /// Regression (review): the done events' room was sized for every microstep of a step
    /// (two per final state × the microstep limit): three final states made 601 entries, past
    /// the 1 KiB the standard library keeps on the stack, so every event allocated. The room is
    /// two per final state.
    @Test func aChartWithFinalStatesKeepsItsScratchSpaceOnTheStack() throws {
        let states: [ModelNode] = [
            .compound(.n0, transitions: [.on(.a, to: .n3)], children: [.atomic(.n1), .final(.n2)]),
            .compound(.n3, transitions: [.on(.a, to: .n6)], children: [.atomic(.n4), .final(.n5)]),
            .compound(.n6, transitions: [.on(.a, to: .n0, raise: [.b])], children: [.atomic(.n7), .final(.n8)]),
        ]
        #expect(!(try ModelChart(states: states)).allocatesPerEvent)
        #expect(!(try ModelChart(microstepLimit: 10_000, states: states)).allocatesPerEvent)
        // Room for 1,000 raised events: 2 KB of queue order, on the heap.
        #expect(try ModelChart(raisedEventLimit: 1_000, states: states).allocatesPerEvent)
    }

    /// Eventless transitions that keep entering a final state pile its done events up faster
    /// than the queue is taken: the step stops at two per final state, as at the raised-event
    /// limit, in a legal state.
    @Test func doneEventsPilingUpStopTheStep() throws {
        let states: [ModelNode] = [
            .compound(.n0, transitions: [.always(to: .n0, outputs: ["again"])], children: [.final(.n1)]),
        ]
        let chart = try ModelChart(states: states)
        #expect(chart.initialStatus == .stoppedAtRaisedEventLimit)
        #expect(chart.initialOutputs == ["again", "again"])
        #expect(chart.initialState.active == StatechartState<MN>([.n0, .n1]).active)
        let reference = ReferenceStatechart(initial: nil, microstepLimit: 100, states: states)
        #expect(reference.start() == .stoppedAtRaisedEventLimit && reference.outputs == ["again", "again"])
    }

    /// Regression (review): a final state right inside a parallel state was taken, and made its
    /// parallel state done at once, whatever its other regions (SCXML has no such final state).
    @Test func aFinalStateIsNotARegion() {
        #expect(throws: StatechartError<MN>.finalInParallel(.n1)) {
            try ModelChart(states: [.parallel(.n0, children: [.final(.n1), .compound(.n2, children: [.atomic(.n3), .final(.n4)])])])
        }
        #expect(StatechartError<MN>.finalInParallel(.n1).description
                == "final state n1 is a child of a parallel state; put it in a compound state (a region) of its own")
    }

    /// Regression (review): transitions are numbered in 16 bits: the 32,768th trapped, and the
    /// 65,537th was taken as the first. At the limit the chart is built; one past it, refused.
    @Test func aChartHoldsAtMostTheTransitionLimit() async throws {
        try await computeOffThePool {
            let limit = ModelChart.transitionLimit
            #expect(limit == 32_767)
            var atLimit = try ModelChart(states: [
                .atomic(.n0, transitions: Array(repeating: .on(.b), count: limit - 1) + [.on(.a, to: .n1)]), .atomic(.n1),
            ])
            var state = atLimit.initialState
            #expect(atLimit.send(.a, to: &state).status == .transitioned)
            #expect(state.isIn(.n1))
            #expect(throws: StatechartError<MN>.tooManyTransitions(limit + 1)) {
                atLimit = try ModelChart(states: [.atomic(.n0, transitions: Array(repeating: .on(.b), count: limit) + [.on(.a, to: .n1)]), .atomic(.n1)])
            }
            #expect(StatechartError<MN>.tooManyTransitions(limit + 1).description == "the chart has 32768 transitions; a chart holds at most 32767")
        }
    }

    /// A state set holds the indices 0..<128: `contains` is false past them, as `isIn` is.
    @Test func aStateSetContainsNothingOutsideItsRange() {
        var set = StatechartStateSet()
        set.insert(64)
        #expect(set.contains(64) && !set.contains(128) && !set.contains(-1) && !set.contains(Int.max))
    }

    @Test func oneMicrostepCanRaiseADoneEventForEveryRegion() throws {
        let states: [ModelNode] = [
            .parallel(.n0, transitions: [.onDone(.n0, to: .n20, outputs: ["n0 done"])], children: (0..<6).map { region in
                .compound(MN(rawValue: 1 + region * 2)!, children: [.final(MN(rawValue: 2 + region * 2)!)])
            }),
            .atomic(.n20, transitions: [.on(.a, to: .n0)]),
        ]
        let chart = try ModelChart(microstepLimit: 2, states: states)
        #expect(chart.initialOutputs == ["n0 done"])
        #expect(chart.initialState.active == StatechartState<MN>([.n20]).active)
        var state = chart.initialState
        #expect(chart.send(.a, to: &state) == StatechartReply(status: .transitioned, outputs: ["n0 done"]))
        #expect(state.active == StatechartState<MN>([.n20]).active)

        let reference = ReferenceStatechart(initial: nil, microstepLimit: 2, states: states)
        #expect(reference.start() == .transitioned && reference.outputs == ["n0 done"])
        #expect(reference.send(.a) == .transitioned && reference.outputs == ["n0 done"])
        #expect(reference.activeStates == [.n20])
    }

    /// SCXML's deep history value is the atomic states active when its parent last exited. The
    /// chart keeps one memory per state (its children active when it last exited) and follows
    /// it down, which is the same thing unless a state below the parent exits after the parent
    /// did and the history is then taken while the parent is still active: here `n2` exits
    /// remembering `n3`, but `n0` last exited in `n4`.
    @Test func deepHistoryTargetedFromInsideItsActiveParent() throws {
        let states: [ModelNode] = [
            .compound(.n0, transitions: [.on(.a, to: .n5)], children: [
                .history(.n1, .deep),
                .compound(.n2, children: [
                    .atomic(.n3, transitions: [.on(.b, to: .n4), .on(.c, to: .n6)]),
                    .atomic(.n4),
                ]),
                .atomic(.n6, transitions: [.on(.d, to: .n1)]),
            ]),
            .atomic(.n5, transitions: [.on(.b, to: .n3)]),
        ]
        let events: [ME] = [.b, .a, .b, .c, .d]  // n4; exit n0 (in n4); n3; exit n2 (in n3); n0's deep history
        let chart = try ModelChart(states: states)
        var state = chart.initialState
        _ = chart.run(events, from: &state)
        let reference = ReferenceStatechart(initial: nil, microstepLimit: 100, states: states)
        _ = reference.start()
        for event in events { _ = reference.send(event) }
        #expect(reference.activeStates == [.n0, .n2, .n4])
        #expect(reference.reachedKnownDeviation)
        withKnownIssue("deep history resumes each state's last memory, not the leaves active when its parent last exited") {
            #expect(chart.activeLeaves(in: state) == [.n4])
        }
    }
}
