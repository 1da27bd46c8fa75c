/// Event sequences, each starting from a machine's initial state, that together take every
/// transition the search reached: tests generated from the machine, in the manner of
/// `@xstate/graph`'s shortest paths.
///
/// Make them with ``Statechart/coveringPaths(events:stateLimit:)`` or
/// ``TransitionTable/coveringPaths(from:inputs:stateLimit:)``.
public struct CoveringPaths<Event> {
    /// The paths to run: no path is a prefix of another, and each is as short as the search
    /// allows for the transition (or state) it was made for.
    public var paths: [[Event]]
    /// For each transition, by index, the shortest path whose last event takes it: empty for one
    /// the start takes (a statechart's eventless transitions, say), `nil` for one no path reached.
    public var pathTakingTransition: [[Event]?]
    /// The transitions no explored state could take with the given events.
    public var untakenTransitions: [Int]
    /// The number of distinct states the search visited.
    public var statesExplored: Int
    /// Whether the search visited every reachable state; `false` when it stopped at the state
    /// limit, so some transitions may be reachable but untaken.
    public var isComplete: Bool
}

extension CoveringPaths: Sendable where Event: Sendable {}
extension CoveringPaths: Equatable where Event: Equatable {}

/// A breadth-first search from `start`: for every transition and every marker (a state of a
/// chart, say), the shortest event path that takes or reaches it.
///
/// `step` returns the next node, the transitions the event took and the markers (states of a
/// chart, say) it reached on the way, or `nil` when the event changes nothing. `startTaken` and
/// `startMarkers` are the transitions and markers the start itself takes and reaches.
func shortestCoveringPaths<Node: Hashable, Event>(
    start: Node,
    events: [Event],
    transitionCount: Int,
    stateLimit: Int,
    startTaken: [Int],
    startMarkers: [Int],
    step: (Node, Event) -> (next: Node, taken: [Int], reached: [Int])?
) -> (paths: CoveringPaths<Event>, pathReachingMarker: [Int: [Event]]) {
    // Each visited node: the node it was reached from and the event, to rebuild paths. A
    // transition or marker is recorded by the node its step left and the event (none for the
    // markers of the start).
    typealias Origin = (node: Int, event: Int?)
    var visited: [Node: Int] = [start: 0]
    var nodes: [Node] = [start]
    var parents: [Origin] = [(-1, nil)]
    var takenBy: [Origin?] = Array(repeating: nil, count: transitionCount)
    for transition in startTaken where transition < transitionCount { takenBy[transition] = (0, nil) }
    var reachedBy: [Int: Origin] = [:]
    for marker in startMarkers { reachedBy[marker] = (0, nil) }
    var isComplete = true

    var head = 0
    while head < nodes.count {
        let current = head
        head += 1
        for (eventIndex, event) in events.enumerated() {
            guard let (next, taken, reached) = step(nodes[current], event) else { continue }
            for transition in taken where transition < transitionCount && takenBy[transition] == nil {
                takenBy[transition] = (current, eventIndex)
            }
            for marker in reached where reachedBy[marker] == nil { reachedBy[marker] = (current, eventIndex) }
            guard visited[next] == nil else { continue }
            guard nodes.count < stateLimit else {
                isComplete = false
                continue
            }
            visited[next] = nodes.count
            nodes.append(next)
            parents.append((current, eventIndex))
        }
    }

    /// The event indices from the start to `origin`, its own event included.
    func eventIndices(to origin: Origin) -> [Int] {
        var reversed: [Int] = origin.event.map { [$0] } ?? []
        var current = origin.node
        while let event = parents[current].event {
            reversed.append(event)
            current = parents[current].node
        }
        return reversed.reversed()
    }
    // Candidates as event indices, so prefixes are found without comparing events; the longest
    // first, each dropped when it is a prefix of one kept.
    let candidates = (takenBy.compactMap { $0 } + reachedBy.keys.sorted().map { reachedBy[$0]! }).map(eventIndices)
    var kept: [[Int]] = []
    for candidate in candidates.sorted(by: { $0.count > $1.count }) where !candidate.isEmpty {
        if !kept.contains(where: { $0.starts(with: candidate) }) { kept.append(candidate) }
    }
    let paths = kept.sorted { $0.lexicographicallyPrecedes($1) }.map { $0.map { events[$0] } }
    let pathTakingTransition = takenBy.map { origin in origin.map { eventIndices(to: $0).map { events[$0] } } }
    let pathReachingMarker = reachedBy.mapValues { eventIndices(to: $0).map { events[$0] } }
    return (
        CoveringPaths(
            paths: paths,
            pathTakingTransition: pathTakingTransition,
            untakenTransitions: takenBy.indices.filter { takenBy[$0] == nil },
            statesExplored: nodes.count,
            isComplete: isComplete),
        pathReachingMarker
    )
}

extension Statechart {
    /// Generated tests: the shortest event sequences from ``initialState`` that together take
    /// every transition (and enter every state) reachable with `events`.
    ///
    /// The search is breadth first over the chart's states (configuration and history), trying
    /// each of `events` in each, so it needs a representative event for each trigger: for a
    /// predicate trigger such as "move faster than 5", give a value that matches it.
    ///
    /// - Parameters:
    ///   - events: The events to try in every state.
    ///   - stateLimit: The most distinct states visited (100,000 by default); beyond it the
    ///     result says it is not complete.
    public func coveringPaths(events: [Event], stateLimit: Int = 100_000) -> CoveringPaths<Event> {
        coveringPathsAndStates(events: events, stateLimit: stateLimit).paths
    }

    /// The states no path enters with `events` (history states, which are never active, left
    /// out).
    public func unreachedStates(events: [Event], stateLimit: Int = 100_000) -> [StateID] {
        let reached = coveringPathsAndStates(events: events, stateLimit: stateLimit).pathReachingMarker
        return inDocumentOrder(allStates).filter { !nodes[$0].isHistory && reached[$0] == nil }.compactMap { StateID(rawValue: $0) }
    }

    func coveringPathsAndStates(events: [Event], stateLimit: Int) -> (paths: CoveringPaths<Event>, pathReachingMarker: [Int: [Event]]) {
        // The start counts: its eventless transitions and raised events take transitions and may
        // pass through states that are no longer active in `initialState`.
        var started = initialState
        var startOutputs = DiscardingSink<Output>()
        var startTrace = StatechartTransitionList()
        _ = start(into: &started, outputs: &startOutputs, trace: &startTrace)
        return shortestCoveringPaths(
            start: initialState, events: events, transitionCount: transitions.count, stateLimit: Swift.max(stateLimit, 1),
            startTaken: startTrace.indices, startMarkers: startTrace.enteredStates,
            step: { state, event in
                var next = state
                var outputs = DiscardingSink<Output>()
                var trace = StatechartTransitionList()
                let status = send(event, to: &next, outputs: &outputs, trace: &trace)
                guard status == .transitioned || status == .stoppedAtMicrostepLimit || status == .stoppedAtRaisedEventLimit else {
                    return nil
                }
                return (next, trace.indices, trace.enteredStates)
            })
    }
}

extension TransitionTable where State: Hashable {
    /// Generated tests: the shortest input sequences from `state` that together fire every row
    /// reachable with `inputs` (the rows' own exact inputs when empty).
    ///
    /// - Parameters:
    ///   - state: The state the paths start from.
    ///   - inputs: The inputs to try in every state; the rows' own exact inputs when empty.
    ///   - stateLimit: The most distinct states visited (100,000 by default).
    public func coveringPaths(from state: State, inputs: [Input] = [], stateLimit: Int = 100_000) -> CoveringPaths<Input> {
        var allInputs = inputs
        if allInputs.isEmpty { allInputs = rows.compactMap { $0.input.value } }
        return shortestCoveringPaths(
            start: state, events: allInputs, transitionCount: rows.count, stateLimit: Swift.max(stateLimit, 1),
            startTaken: [], startMarkers: [],
            step: { state, input in
                guard let index = rows.firstIndex(where: { $0.matches(input, in: state) }) else { return nil }
                return (rows[index].transition.to, [index], [])
            }).paths
    }
}

/// A trace that lists the transitions taken and the states entered and exited, in order.
public struct StatechartTransitionList: StatechartTrace, Sendable {
    /// The indices, in ``Statechart/transitions``, of the transitions taken.
    public var indices: [Int] = []
    /// The raw values of the states entered.
    public var enteredStates: [Int] = []
    /// The raw values of the states exited, in exit order.
    public var exitedStates: [Int] = []

    /// An empty list.
    public init() {}

    /// Appends `index` to ``indices``.
    public mutating func took(transition index: Int) {
        indices.append(index)
    }

    /// Appends `index` to ``enteredStates``.
    public mutating func entered(state index: Int) {
        enteredStates.append(index)
    }

    /// Appends `index` to ``exitedStates``.
    public mutating func exited(state index: Int) {
        exitedStates.append(index)
    }
}

/// A sink that drops every output.
struct DiscardingSink<Output>: OutputSink {
    mutating func receive(_ output: Output) {}
}
