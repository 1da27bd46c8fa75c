import Actomaton
import Logging
import ActomatonTestSupport
import Testing

// The README's example of routing an `Actomaton`'s failures to a swift-log `Logger`.
private enum Action: Sendable {
    case save
}

private struct State: Sendable {}

private struct DiskFull: Error {}

@Suite("Actomaton: failures routed to a Logger")
struct EffectFailureLoggingTests {
    @Test func failuresGoToTheLogger() async {
        let store = LogStore()
        let logger = store.logger(level: .trace)
        let reducer = Reducer<Action, State, Void> { _, _, _ in
            .fireAndForget { throw DiskFull() }
        }

        let actomaton = Actomaton<Action, State>(state: State(), reducer: reducer, onFailure: { failure in
            logger.error("\(failure)") // a swift-log Logger
        })

        _ = await actomaton.send(.save)?.result
        let records = store.records.withLock { $0 }
        #expect(records.count == 1)
        #expect(records.first?.0 == .error)
        #expect(records.first?.1 == "an effect threw an error, and delivers nothing more: DiskFull()")
    }
}
