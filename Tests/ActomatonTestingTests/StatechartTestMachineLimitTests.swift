import ActomatonCore
import ActomatonTesting
import Testing

private enum LoopState: Int, StatechartStateID {
    case s0
}

private enum LoopEvent: Equatable, Sendable {
    case foo, bar
}

/// A chart with a bug: `.foo` raises `.bar`, which raises `.foo`, for ever. The chart stops the
/// step at its microstep limit and says so in the reply's status, in a state that looks legal.
private func loopingChart() throws -> Statechart<LoopState, LoopEvent, String> {
    try Statechart(microstepLimit: 10, states: [
        .atomic(.s0, transitions: [
            .on(.foo, raise: [.bar]),
            .on(.bar, raise: [.foo]),
        ]),
    ])
}

@Suite("StatechartTestMachine: a step cut off at a limit")
struct StatechartTestMachineLimitTests {
    /// A send that a chart cuts off at its microstep limit is a livelock in the chart under test;
    /// a test that checks the leaves it expects must not pass over it in silence.
    @Test func aSendCutOffAtTheMicrostepLimitFailsTheTest() throws {
        var machine = StatechartTestMachine(try loopingChart())
        let line = #line + 2
        withKnownIssue {
            machine.send(.foo, leaves: [.s0])
        } matching: { issue in
            issue.sourceLocation?.line == line
                && issue.comments.map(\.rawValue).joined().contains("microstep limit")
        }
    }

    /// The generated tests fail the same way, at the line that runs them.
    @Test func aCoveringPathCutOffAtTheMicrostepLimitFailsTheTest() throws {
        var machine = StatechartTestMachine(try loopingChart())
        let line = #line + 2
        withKnownIssue {
            machine.runCoveringPaths(events: [.foo]) { _, _, _, _ in }
        } matching: { issue in
            issue.sourceLocation?.line == line
                && issue.comments.map(\.rawValue).joined().contains("microstep limit")
        }
    }

    /// A chart whose own start loops is as broken as one whose events do: starting it in a test
    /// machine, or starting it again, must not pass over it in silence.
    @Test func aStartCutOffAtTheMicrostepLimitFailsTheTest() throws {
        let chart = try Statechart<LoopState, LoopEvent, String>(microstepLimit: 10, states: [
            .atomic(.s0, raiseOnEntry: [.foo], transitions: [
                .on(.foo, raise: [.bar]),
                .on(.bar, raise: [.foo]),
            ]),
        ])
        #expect(chart.initialStatus == .stoppedAtMicrostepLimit)
        let line = #line + 2
        withKnownIssue {
            _ = StatechartTestMachine(chart)
        } matching: { issue in
            issue.sourceLocation?.line == line
                && issue.comments.map(\.rawValue).joined().contains("start was cut off at the chart's microstep limit")
        }
        var machine = StatechartTestMachine(chart, state: chart.initialState)
        let restartLine = #line + 2
        withKnownIssue {
            machine.restart()
        } matching: { issue in
            issue.sourceLocation?.line == restartLine
                && issue.comments.map(\.rawValue).joined().contains("start was cut off")
        }
    }
}
