import Actomaton
import ActomatonTesting
import Clocks
import Synchronization
import Testing

// A `TestMachine` takes the reducers an `Actomaton` takes: a struct `MealyReducerProtocol`
// whose output is an `Effect`, too. What fails where no caller sees it fails the test.
private enum Action: Sendable, Equatable {
    case start, tick, loop, fail
}

private struct Boom: Error {}

private struct Ticker: MealyReducerProtocol, Sendable {
    func reduce(_ action: Action, into ticks: inout Int, environment: Int) -> Effect<Action> {
        switch action {
        case .start:
            return Effect { context in
                try await context.clock.sleep(for: .seconds(environment))
                return .tick
            }
        case .tick:
            ticks += 1
            return .empty
        case .loop:
            return .nextAction(.loop)
        case .fail:
            return .fireAndForget { throw Boom() }
        }
    }
}

/// The failures a handler received.
private final class Failures: Sendable {
    private let failures = Mutex<[String]>([])
    func append(_ failure: EffectFailure) { failures.withLock { $0.append("\(failure)") } }
    var all: [String] { failures.withLock { $0 } }
}

@Suite("TestMachine: struct reducers and failures no caller sees")
struct StructReducerTests {
    @Test func aStructReducerIsTested() async {
        let machine = TestMachine(state: 0, reducer: Ticker(), environment: 2)
        await machine.send(.start)
        await machine.advance(by: .seconds(2))
        await machine.receive(.tick) { $0 = 1 }
    }

    /// By default, an effect's thrown error fails the test where the machine was made.
    @Test func anEffectsErrorFailsTheTest() async {
        let line = #line + 2
        await withKnownIssue {
            let machine = TestMachine(state: 0, reducer: Ticker(), environment: 1)
            await machine.send(.fail).finish()
        } matching: { issue in
            let message = issue.comments.map(\.rawValue).joined()
            return issue.sourceLocation?.line == line
                && message.contains("A failure no caller sees: an effect threw an error, and delivers nothing more: Boom().")
        }
    }

    @Test func aFeedbackLoopGoesToTheHandlerGiven() async {
        let failures = Failures()
        let machine = TestMachine(state: 0, reducer: Ticker(), environment: 1, exhaustivity: .off, onFailure: failures.append)
        await machine.send(.loop)
        #expect(failures.all.count == 1)
        #expect(failures.all.first?.hasPrefix("an Effect.nextAction loop was cut off") == true)
    }
}

/// An effect that throws once `opened` yields.
private struct Thrower: MealyReducerProtocol, Sendable {
    func reduce(_ action: Action, into state: inout Int, environment opened: AsyncStream<Void>) -> Effect<Action> {
        .fireAndForget {
            for await _ in opened { break }
            throw Boom()
        }
    }
}

@Suite("TestMachine: an effect that threw")
struct EffectThatThrewTests {
    /// Regression: an effect that threw was reported while it still counted as running. A test
    /// that ended meanwhile (its machine released, or `finish()` done waiting) failed twice: for
    /// the error, and for an effect still running.
    @Test func anEffectThatThrewIsNotStillRunningWhileItsFailureIsReported() async {
        let (opened, open) = AsyncStream<Void>.makeStream()
        let (reported, report) = AsyncStream<String>.makeStream()
        let held = Mutex<TestMachine<Action, Int>?>(nil)
        do {
            let machine = TestMachine(state: 0, reducer: Thrower(), environment: opened, onFailure: { failure in
                // The test ends while the failure is reported: its machine is released here, and
                // the end-of-test checks run.
                let last = held.withLock { machine in
                    defer { machine = nil }
                    return machine
                }
                #expect(last != nil)
                report.yield("\(failure)")
            })
            await machine.send(.fail)
            held.withLock { $0 = machine }
        }
        open.yield()
        var failures: [String] = []
        for await failure in reported {
            failures.append(failure)
            break
        }
        #expect(failures.first?.hasPrefix("an effect threw an error") == true, "\(failures)")
        #expect(held.withLock { $0 } == nil)
    }
}
