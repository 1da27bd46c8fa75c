import Actomaton
import ActomatonTesting
import Testing

private enum Action: Sendable, Equatable { case tickForever, tick }

private let reducer = Reducer<Action, Int, Void> { action, _, _ in
    switch action {
    case .tickForever:
        return Effect(sequence: { context in
            AsyncThrowingStream<Action, any Error>(unfolding: {
                try await context.clock.sleep(for: .seconds(1))
                return .tick
            })
        })
    case .tick:
        return .empty
    }
}

@Suite("TestMachine: run() that times out")
struct RunTimeoutTests {
    /// `run(timeout:)` fails with its own message, naming the timeout given and telling the
    /// author to advance the clock by hand: not with swift-clocks' `TestClock.run`'s, which names
    /// the time that was left, and after which (it resumes every sleeper with
    /// `CancellationError`) nothing sleeps any more for `run` to report.
    @Test func aTimerThatNeverStopsFailsWithRunsOwnMessage() async {
        let line = #line + 4
        await withKnownIssue {
            let machine = TestMachine(state: 0, reducer: reducer)
            await machine.send(.tickForever)
            await machine.run(timeout: .milliseconds(50))
            await machine.skipInFlightEffects()
            await machine.skipReceivedActions()
        } matching: { issue in
            let message = issue.comments.map(\.rawValue).joined()
            return issue.sourceLocation?.line == line
                && message.contains("A timer that is never stopped") && message.contains("0.05 seconds")
        }
    }
}
