import Actomaton
import ActomatonTesting
import Clocks
import Testing

// Every kind of mismatch a `TestMachine` catches is reported as a test failure, with a readable
// message, at the line of the call that failed. Each test here expects exactly that failure.
private struct State: Sendable, Equatable {
    var count = 0
    var isLoading = false
}

private enum Action: Sendable, Equatable {
    case increment, noop
    case incrementLater, incremented, decremented
    case tickForever, tick
}

private let reducer = Reducer<Action, State, Void> { action, state, _ in
    switch action {
    case .increment:
        state.count += 1
        return .empty
    case .noop:
        return .empty
    case .incrementLater:
        state.isLoading = true
        return Effect { context in
            try await context.clock.sleep(for: .seconds(1))
            return .incremented
        }
    case .incremented:
        state.count += 1
        state.isLoading = false
        return .empty
    case .decremented:
        state.count -= 1
        return .empty
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

private struct Unreachable: Error {}

/// Whether `issue` is reported at `line` of this file, and its message contains every one of
/// `texts`.
private func isReported(_ issue: Issue, at line: Int, fileID: String = #fileID, containing texts: String...) -> Bool {
    let message = issue.comments.map(\.rawValue).joined(separator: "\n")
    return issue.sourceLocation?.fileID == fileID
        && issue.sourceLocation?.line == line
        && texts.allSatisfy { message.contains($0) }
}

@Suite("TestMachine: failures")
struct FailureTests {
    @Test func stateMismatchOnSend() async {
        let line = #line + 3
        await withKnownIssue {
            let machine = TestMachine(state: State(), reducer: reducer)
            await machine.send(.increment) { $0.count = 2 }
        } matching: { issue in
            isReported(issue, at: line, containing: "The state after `Action.increment` does not match",
                       "−   count: 2", "+   count: 1", "(Expected: −, Actual: +)")
        }
    }

    @Test func stateMismatchOnReceive() async {
        let line = #line + 5
        await withKnownIssue {
            let machine = TestMachine(state: State(), reducer: reducer)
            await machine.send(.incrementLater) { $0.isLoading = true }
            await machine.advance(by: .seconds(1))
            await machine.receive(.incremented) { $0.count = 1 }
        } matching: { issue in
            isReported(issue, at: line, containing: "The state after `Action.incremented` does not match",
                       "−   isLoading: true", "+   isLoading: false")
        }
    }

    @Test func closureThatChangesNothing() async {
        let line = #line + 3
        await withKnownIssue {
            let machine = TestMachine(state: State(), reducer: reducer)
            await machine.send(.noop) { $0.count = 0 }
        } matching: { issue in
            isReported(issue, at: line, containing: "Expected `Action.noop` to change the state, but it did not.")
        }
    }

    @Test func closureThatThrows() async {
        let line = #line + 3
        await withKnownIssue {
            let machine = TestMachine(state: State(), reducer: reducer)
            await machine.send(.increment) { _ in throw Unreachable() }
        } matching: { issue in
            issue.error is Unreachable && issue.sourceLocation?.line == line
        }
    }

    @Test func unexpectedReceivedAction() async {
        let line = #line + 5
        await withKnownIssue {
            let machine = TestMachine(state: State(), reducer: reducer)
            await machine.send(.incrementLater) { $0.isLoading = true }
            await machine.advance(by: .seconds(1))
            await machine.receive(.decremented) { $0.count = -1 }
        } matching: { issue in
            isReported(issue, at: line, containing: "Received an action other than the one expected",
                       "− Action.decremented", "+ Action.incremented", "(Expected: −, Received: +)")
        }
    }

    @Test func receivedActionNotMatchingThePredicate() async {
        let line = #line + 5
        await withKnownIssue {
            let machine = TestMachine(state: State(), reducer: reducer)
            await machine.send(.incrementLater) { $0.isLoading = true }
            await machine.advance(by: .seconds(1))
            await machine.receive({ $0 == .decremented })
        } matching: { issue in
            isReported(issue, at: line, containing: "Received an action that does not match the predicate",
                       "Action.incremented")
        }
    }

    @Test func missingReceivedAction() async {
        let line = #line + 4
        await withKnownIssue {
            let machine = TestMachine(state: State(), reducer: reducer)
            await machine.send(.increment) { $0.count = 1 }
            await machine.receive(.incremented) { $0.count = 2 }
        } matching: { issue in
            isReported(issue, at: line, containing: "Expected to receive `Action.incremented`, but none was received",
                       "no effect is running")
        }
    }

    @Test func missingReceivedActionWhileAnEffectSleeps() async {
        let line = #line + 4
        await withKnownIssue {
            let machine = TestMachine(state: State(), reducer: reducer)
            await machine.send(.incrementLater) { $0.isLoading = true }
            await machine.receive(.incremented, timeout: .milliseconds(20)) { $0.count = 1 }
            await machine.skipInFlightEffects()
        } matching: { issue in
            isReported(issue, at: line, containing: "Expected to receive `Action.incremented`, but none was received within",
                       "1 effect still running", "advance it first")
        }
    }

    @Test func receivedActionNotAssertedBeforeTheNextSend() async {
        let line = #line + 5
        await withKnownIssue {
            let machine = TestMachine(state: State(), reducer: reducer)
            await machine.send(.incrementLater) { $0.isLoading = true }
            await machine.advance(by: .seconds(1))
            await machine.send(.increment) { $0.count = 2 }
        } matching: { issue in
            isReported(issue, at: line, containing: "1 received action must be received before sending an action",
                       "Action.incremented")
        }
    }

    @Test func receivedActionNotAssertedWhenTheTestEnds() async {
        let line = #line + 2
        await withKnownIssue {
            let machine = TestMachine(state: State(), reducer: reducer)
            await machine.send(.incrementLater) { $0.isLoading = true }
            await machine.advance(by: .seconds(1))
        } matching: { issue in
            isReported(issue, at: line, containing: "The test ended with 1 received action not asserted",
                       "Action.incremented")
        }
    }

    @Test func effectStillRunningWhenTheTestEnds() async {
        let line = #line + 2
        await withKnownIssue {
            let machine = TestMachine(state: State(), reducer: reducer)
            await machine.send(.incrementLater) { $0.isLoading = true }
        } matching: { issue in
            isReported(issue, at: line, containing: "The test ended with 1 effect still running",
                       "skipInFlightEffects()")
        }
    }

    @Test func effectStillRunningWhenTheTestFinishes() async {
        let line = #line + 5
        await withKnownIssue {
            let machine = TestMachine(state: State(), reducer: reducer)
            await machine.send(.incrementLater) { $0.isLoading = true }
            await machine.send(.tickForever)
            await machine.finish(timeout: .milliseconds(20))
        } matching: { issue in
            isReported(issue, at: line, containing: "The test ended with 2 effects still running")
        }
    }

    @Test func effectsOfASendThatDoNotFinish() async {
        let line = #line + 4
        await withKnownIssue {
            let machine = TestMachine(state: State(), reducer: reducer)
            let task = await machine.send(.incrementLater) { $0.isLoading = true }
            await task.finish(timeout: .milliseconds(20))
            await machine.skipInFlightEffects()
        } matching: { issue in
            isReported(issue, at: line, containing: "Expected the effects of this send to finish")
        }
    }

    /// Regression (review): `run(timeout:)` failed with swift-clocks' `TestClock.run`'s message,
    /// which names the time that was left (0.0475 s for 50 ms), and after which (it resumes
    /// every sleeper with `CancellationError`) nothing slept any more for `run` to report. It
    /// fails once, with its own message, naming the timeout given.
    @Test func clockThatNeverRunsOut() async {
        let line = #line + 4
        await withKnownIssue {
            let machine = TestMachine(state: State(), reducer: reducer)
            await machine.send(.tickForever)
            await machine.run(timeout: .milliseconds(50))
            await machine.skipInFlightEffects()
            await machine.skipReceivedActions()
        } matching: { issue in
            isReported(issue, at: line, containing: "Expected all sleeps", "A timer that is never stopped", "0.05 seconds")
        }
    }
}

@Suite("TestMachine: what passes")
struct PassingTests {
    @Test func runMovesTheClockUntilNoEffectSleeps() async {
        let machine = TestMachine(state: State(), reducer: reducer)

        await machine.send(.incrementLater) { $0.isLoading = true }
        // The default's 30 s of real time ran out beside the whole suite on one core and a
        // build (every yield waits behind hundreds of other tests' jobs); only a failure waits.
        await machine.run(timeout: .seconds(600))
        await machine.receive(.incremented) {
            $0.count = 1
            $0.isLoading = false
        }
    }

    @Test func cancellingTheEffectsOfASend() async {
        let machine = TestMachine(state: State(), reducer: reducer)

        let task = await machine.send(.incrementLater) { $0.isLoading = true }
        task.cancel()
        await task.finish()
        #expect(task.isCancelled)
        #expect(await machine.runningEffectCount == 0)

        // Cancelled, the effect sends nothing back, however long the test waits.
        await machine.advance(by: .seconds(10))
    }

    @Test func waitingForTheEffectsOfASend() async {
        let machine = TestMachine(state: State(), reducer: reducer)

        let task = await machine.send(.incrementLater) { $0.isLoading = true }
        await machine.advance(by: .seconds(1))
        await task.finish()
        await machine.receive(.incremented) {
            $0.count = 1
            $0.isLoading = false
        }
    }

    @Test func aClockSharedWithTheEnvironment() async {
        let clock = TestClock()
        let machine = TestMachine(state: State(), reducer: reducer, clock: clock)

        await machine.send(.incrementLater) { $0.isLoading = true }
        await clock.advance(by: .seconds(1))
        await machine.receive(.incremented) {
            $0.count = 1
            $0.isLoading = false
        }
        #expect(machine.clock === clock)
    }
}
