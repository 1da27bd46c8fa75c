import Actomaton
import ActomatonDebugging
import Logging
import Testing

// The README's ActomatonDebugging examples, compiled and run as they are written there.
enum CounterAction: Sendable, Equatable {
    case increment, decrement
}

struct CounterState: Sendable, Equatable {
    var count = 0
}

let counterReducer = Reducer<CounterAction, CounterState, Void> { action, state, _ in
    switch action {
    case .increment:
        state.count += 1
    case .decrement:
        state.count -= 1
    }
    return .empty
}

enum TimerAction: Sendable, Equatable {
    case start, tick, stop
}

let timerReducer = Reducer<TimerAction, Int, Void> { action, count, _ in
    if action == .tick { count += 1 }
    return .empty
}

@Suite("README: ActomatonDebugging")
struct DebuggingReadmeExamplesTests {
    @Test func printChanges() async {
        let actomaton = Actomaton<CounterAction, CounterState>(
            state: CounterState(),
            reducer: counterReducer.debug("Counter")
        )
        await actomaton.send(.increment)
        #expect(await actomaton.state.count == 1)
    }

    @Test func theReadmeShowsWhatIsPrinted() {
        let recorder = RecordingSink()
        var state = CounterState()
        _ = counterReducer.debug("Counter", to: recorder.sink).run(.increment, &state, ())
        #expect(recorder.messages == [
            """
            Counter: received action:
              CounterAction.increment
            - CounterState(count: 0)
            + CounterState(count: 1)
            """,
        ])
    }

    @Test func serverLogging() {
        let logger = Logger(label: "com.example.timer")
        let serverReducer = timerReducer.debug(
            "Timer",
            format: .action,
            to: .logger(logger, level: .info),
            filter: { $0 != .tick }
        )
        var count = 0
        _ = serverReducer.run(.tick, &count, ())
        #expect(count == 1)
    }

    @Test func switchedOff() {
        let isVerbose = CommandLine.arguments.contains("--verbose")
        let reducer = counterReducer.debug("Counter", to: isVerbose ? .standardOutput : .disabled)
        var state = CounterState()
        _ = reducer.run(.increment, &state, ())
        #expect(state.count == 1)
    }
}
