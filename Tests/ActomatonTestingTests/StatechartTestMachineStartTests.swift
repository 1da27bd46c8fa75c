import ActomatonCore
import ActomatonTesting
import Testing

private enum StartState: Int, StatechartStateID {
    case booting, ready
}

private enum StartEvent: Equatable, Sendable {
    case booted
}

/// A chart that leaves its first state on its own: entering `booting` raises `booted`, whose
/// transition the chart's start takes, every time it starts.
private func bootingChart() throws -> Statechart<StartState, StartEvent, String> {
    try Statechart(states: [
        .atomic(.booting, raiseOnEntry: [.booted], transitions: [.on(.booted, to: .ready)]),
        .atomic(.ready),
    ])
}

@Suite("StatechartTestMachine: the transitions of the chart's start")
struct StatechartTestMachineStartTests {
    /// The start's transitions are taken like any other: a machine that has started the chart
    /// has taken them, and must not report them as never taken.
    @Test func aTransitionTheStartTakesCountsAsTaken() throws {
        var machine = StatechartTestMachine(try bootingChart())
        #expect(machine.chart.activeLeaves(in: machine.state) == [.ready])
        #expect(machine.untakenTransitions.isEmpty)
        machine.restart()
        #expect(machine.timesTaken == [2])
        machine.expectEveryTransitionTaken()
    }
}
