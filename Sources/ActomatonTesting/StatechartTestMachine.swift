import ActomatonCore

/// Runs a `Statechart` in a test: checks each event's active states and outputs, counts every
/// transition taken, and fails the test with the transitions it never took.
///
/// ```swift
/// var machine = StatechartTestMachine(try Platformer.chart())
/// machine.send(.move(speed: 8), leaves: [.running, .holstered], outputs: [.dustOn])
/// machine.send(.jump, leaves: [.jumping, .holstered], outputs: [.dustOff, .jumpSound])
/// machine.expectEveryTransitionTaken() // fails, naming the transitions this test never took
/// ```
///
/// With ``runCoveringPaths(events:stateLimit:fileID:filePath:line:column:check:)`` the chart writes its own tests: the shortest event
/// sequences that take every transition, each run from the start, with a closure that compares
/// a system under test (a plugin, a hand-written port) with the chart at every step.
///
/// Failures go through IssueReporting, so Swift Testing and XCTest record them at the caller's
/// line.
public struct StatechartTestMachine<StateID: StatechartStateID, Event: Sendable, Output: Equatable> {
    /// The chart under test.
    public let chart: Statechart<StateID, Event, Output>
    /// The chart's current state.
    public private(set) var state: StatechartState<StateID>
    /// How many times each transition, by its index in the chart's `transitions`, was taken.
    public private(set) var timesTaken: [Int]

    /// A machine that has started the chart (or one at `state`, with nothing taken yet).
    ///
    /// Starting the chart counts the transitions its start takes (eventless ones, or those of
    /// events raised on entry), as every ``restart(fileID:filePath:line:column:)`` does; a start
    /// the chart cuts off at one of its limits fails the test, as a send does.
    public init(
        _ chart: Statechart<StateID, Event, Output>,
        state: StatechartState<StateID>? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) {
        self.chart = chart
        self.state = state ?? chart.initialState
        self.timesTaken = Array(repeating: 0, count: chart.transitions.count)
        if state == nil { restart(at: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)) }
    }

    /// Sends `event`; when given, checks the active leaves (in document order) and the outputs
    /// (in order) it led to, failing the test with both sides when they differ.
    ///
    /// A step the chart cuts off at its `Statechart.microstepLimit` or
    /// `Statechart.raisedEventLimit` fails the test too, whatever was asked: the state is legal,
    /// but the chart under test loops (eventless transitions, or events that raise each other).
    /// A test of the limits themselves sends to the chart directly.
    @discardableResult
    public mutating func send(
        _ event: Event,
        leaves: [StateID]? = nil,
        outputs: [Output]? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> StatechartReply<[Output]> {
        let location = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        let reply = step(event, at: location)
        let emitted = reply.outputs
        if let leaves {
            let actual = chart.activeLeaves(in: state)
            if actual != leaves {
                location.fail("After \(event), the active leaves are \(actual), not \(leaves).")
            }
        }
        if let outputs, outputs != emitted {
            location.fail("\(event) emitted \(emitted), not \(outputs).")
        }
        return reply
    }

    /// Sends `event`, counts the transitions taken, and fails at `location` when the chart cut
    /// the step off at one of its limits.
    private mutating func step(_ event: Event, at location: SourceLocation) -> StatechartReply<[Output]> {
        var emitted: [Output] = []
        var trace = StatechartTransitionList()
        let status = chart.send(event, to: &state, outputs: &emitted, trace: &trace)
        for index in trace.indices { timesTaken[index] += 1 }
        failIfCutOff(status, "\(event)", at: location)
        return StatechartReply(status: status, outputs: emitted)
    }

    /// Fails at `location` when `status` says the chart cut `what` off at one of its limits.
    private func failIfCutOff(_ status: StatechartStatus, _ what: String, at location: SourceLocation) {
        switch status {
        case .stoppedAtMicrostepLimit:
            location.fail(
                "\(what) was cut off at the chart's microstep limit (\(chart.microstepLimit)): its eventless transitions or raised events loop."
            )
        case .stoppedAtRaisedEventLimit:
            location.fail(
                "\(what) was cut off at the chart's raised event limit (\(chart.raisedEventLimit)): the chart raises events faster than it takes them."
            )
        case .transitioned, .ignored, .finished, .rejected:
            break
        }
    }

    /// Starts the chart again, from its initial state; the counts of transitions taken are
    /// kept, and those the start takes are added to them. A start the chart cuts off at one of
    /// its limits fails the test, as a send does.
    public mutating func restart(
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) {
        restart(at: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    private mutating func restart(at location: SourceLocation) {
        var outputs: [Output] = []
        var trace = StatechartTransitionList()
        let status = chart.start(into: &state, outputs: &outputs, trace: &trace)
        for index in trace.indices { timesTaken[index] += 1 }
        failIfCutOff(status, "The chart's start", at: location)
    }

    /// The transitions never taken so far.
    public var untakenTransitions: [StatechartEdge<StateID, Event, Output>] {
        chart.transitions.filter { timesTaken[$0.index] == 0 }
    }

    /// Fails the test, listing them, when some transition was never taken.
    public func expectEveryTransitionTaken(
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) {
        let untaken = untakenTransitions
        guard !untaken.isEmpty else { return }
        let location = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        let list = untaken.map { "  \(describe($0))" }.joined(separator: "\n")
        location.fail("\(untaken.count) of \(chart.transitions.count) transitions were never taken:\n\(list)")
    }

    /// One line naming a transition: `source --label--> targets`.
    public func describe(_ edge: StatechartEdge<StateID, Event, Output>) -> String {
        let label = chart.diagramLabel(of: edge, stateName: { "\($0)" }, eventName: { "\($0)" })
        let targets = edge.transition.targets.isEmpty ? "(stays)" : edge.transition.targets.map { "\($0)" }.joined(separator: ", ")
        return "\(edge.source) --\(label)--> \(targets)"
    }

    /// Runs the chart's generated tests: every path of the chart's `coveringPaths(events:stateLimit:)`
    /// from the initial state, calling `check` after each event with the path, the event's
    /// position in it (0 when the path starts again from the initial state), what the chart did
    /// and its state, to compare a system under test with. Fails the test when the search
    /// could not finish.
    ///
    /// - Returns: The paths run.
    @discardableResult
    public mutating func runCoveringPaths(
        events: [Event],
        stateLimit: Int = 100_000,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column,
        check: (_ path: [Event], _ position: Int, _ reply: StatechartReply<[Output]>, _ state: StatechartState<StateID>) -> Void
    ) -> [[Event]] {
        let covering = chart.coveringPaths(events: events, stateLimit: stateLimit)
        if !covering.isComplete {
            SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
                .fail("The search for covering paths stopped at \(stateLimit) states; raise stateLimit.")
        }
        let location = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        for path in covering.paths {
            restart(at: location)
            for (position, event) in path.enumerated() {
                let reply = step(event, at: location)
                check(path, position, reply, state)
            }
        }
        restart(at: location)
        return covering.paths
    }
}
