import ActomatonCore
import ActomatonDebugging
import ActomatonTestSupport
import Logging
import Synchronization
import Testing

private enum Action: Sendable, Equatable {
    case increment
}

private let reducer = MealyReducer<Action, Int, Void, Void> { _, count, _ in count += 1 }

@Suite("debug: Logger sink")
struct LoggerSinkTests {
    @Test func entriesGoToTheLoggerAtTheLevelAsked() {
        let store = LogStore()
        let logged = reducer.debug("Counter", to: .logger(store.logger(level: .trace), level: .info))
        var count = 0
        logged.run(.increment, &count, ())

        let records = store.records.withLock { $0 }
        #expect(records.count == 1)
        #expect(records.first?.0 == .info)
        #expect(records.first?.1 == """
            Counter: received action:
              Action.increment
            - 0
            + 1
            """)
    }

    @Test func aLoggerAboveTheEntriesLevelIsADisabledSink() {
        let store = LogStore()
        let sink = DebugLogSink.logger(store.logger(level: .info), level: .debug)
        #expect(!sink.isEnabled())

        var count = 0
        reducer.debug(to: sink).run(.increment, &count, ())
        #expect(count == 1)
        #expect(store.records.withLock { $0.isEmpty })
    }
}
