import ActomatonCore
import ActomatonEffect
import Synchronization
import Testing

/// The failures a handler received, in order.
private final class FailureLog: Sendable {
    private let failures = Mutex<[EffectFailure]>([])
    func append(_ failure: EffectFailure) { failures.withLock { $0.append(failure) } }
    var all: [EffectFailure] { failures.withLock { $0 } }
}

private struct Boom: Error, Equatable {}

private struct FailureID: EffectID { var value: Int }

private struct OneAtATime: Oldest1DiscardNewEffectQueue {}

private enum Action: Sendable {
    /// Feeds itself back forever.
    case loop
    /// Starts an effect whose work throws `Boom`.
    case fail(id: Int?)
    /// Starts an effect that sleeps 1 s, then returns `.done`; thrown `Boom` when its sleep is cancelled.
    case sleep(id: Int, queue: Bool)
    case cancel(id: Int)
    case done
}

private let reducer = MealyReducer<Action, Int, Void, Effect<Action>> { action, count, _ in
    switch action {
    case .loop:
        count += 1
        return .nextAction(.loop)
    case let .fail(id):
        return Effect(id: id.map { FailureID(value: $0) }) { throw Boom() }
    case let .sleep(id, queue):
        return Effect(id: FailureID(value: id), queue: queue ? OneAtATime() : nil) { context in
            do {
                try await context.clock.sleep(for: .seconds(1))
            } catch {
                throw Boom() // what a cancelled request might throw instead of CancellationError
            }
            return .done
        }
    case let .cancel(id):
        return .cancel(id: FailureID(value: id))
    case .done:
        count += 1
        return .empty
    }
}

@Suite("EffectFailure: what no caller sees reaches the handler")
struct EffectFailureTests {
    @Test func aFeedbackLoopCutOffReachesTheHandler() async {
        let failures = FailureLog()
        let host = TestHost(state: 0, reducer: reducer, clock: ManualClock(), onFailure: failures.append)
        #expect(await host.send(.loop) == nil)
        let all = failures.all
        #expect(all.count == 1)
        guard case let .feedbackLoopCutOff(result)? = all.first else {
            Issue.record("received \(all)")
            return
        }
        #expect(result == .depthLimitReached(steps: 101))
        #expect(await host.state == 101, "the state is the one after the last step that ran")
        #expect("\(all[0])".hasPrefix("an Effect.nextAction loop was cut off (depthLimitReached(steps: 101))"))
    }

    @Test func anEffectsThrownErrorReachesTheHandler() async {
        let failures = FailureLog()
        let host = TestHost(state: 0, reducer: reducer, clock: ManualClock(), onFailure: failures.append)
        let task = await host.send(.fail(id: 7))
        await #expect(throws: Never.self, "the send's task ends as before: the error is reported, not thrown") {
            try await task?.value
        }
        await host.send(.fail(id: nil))
        #expect(await eventually { failures.all.count == 2 })

        let all = failures.all
        guard case let .effectThrew(error, effectID)? = all.first else {
            Issue.record("received \(all)")
            return
        }
        #expect(error as? Boom == Boom())
        #expect(effectID == AnyEffectID(FailureID(value: 7)))
        #expect("\(all[0])" == "an effect with ID FailureID(value: 7) threw an error, and delivers nothing more: Boom()")
        #expect("\(all[1])" == "an effect threw an error, and delivers nothing more: Boom()")
        #expect(await host.runningEffectCount == 0, "the failed effects freed their slots")
    }

    /// Cancellation is how a cancelled effect ends: whatever its work throws then, by ID, by
    /// its queue or by the send's task, before or after it started, is not a failure.
    @Test func aCancelledEffectsErrorsAreNotFailures() async {
        let failures = FailureLog()
        let clock = ManualClock()
        let host = TestHost(state: 0, reducer: reducer, clock: clock, onFailure: failures.append)

        // Cancelled by ID while asleep: its sleep throws, and it throws Boom.
        let byID = await host.send(.sleep(id: 1, queue: false))
        #expect(await clock.waitForSleepers(1))
        await host.send(.cancel(id: 1))
        _ = await byID?.result

        // Dropped by its queue's `.discardNew`: its work runs cancelled, and throws Boom.
        let running = await host.send(.sleep(id: 2, queue: true))
        let dropped = await host.send(.sleep(id: 3, queue: true))
        _ = await dropped?.result

        // Cancelled through the task `send` returned.
        #expect(await clock.waitForSleepers(1))
        running?.cancel()
        _ = await running?.result

        #expect(await host.runningEffectCount == 0)
        #expect(failures.all.isEmpty, "\(failures.all)")
    }
}
