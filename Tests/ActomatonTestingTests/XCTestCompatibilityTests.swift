import Actomaton
import ActomatonTesting
import Synchronization
import XCTest

// `TestMachine` works under XCTest too: failures are recorded as XCTest failures, at the file
// and line of the call that failed.
private enum State: Sendable, Equatable {
    case idle, loading, loaded(Int)
}

private enum Action: Sendable, Equatable {
    case load, loaded(Int)
}

private let reducer = Reducer<Action, State, Void> { action, state, _ in
    switch action {
    case .load:
        state = .loading
        return Effect { context in
            try await context.clock.sleep(for: .seconds(1))
            return .loaded(42)
        }
    case let .loaded(value):
        state = .loaded(value)
        return .empty
    }
}

final class TestMachineXCTests: XCTestCase {
    /// A failure XCTest recorded while `capturingFailures` ran.
    struct RecordedFailure: Sendable {
        let description: String
        let filePath: String
        let line: Int
    }

    private let captured = Mutex<[RecordedFailure]?>(nil)

    /// Runs `body`, and returns the failures it recorded instead of failing the test.
    ///
    /// (Swift Testing has `withKnownIssue`; XCTest on Linux has no `XCTExpectFailure`.)
    private func capturingFailures(_ body: () async -> Void) async -> [RecordedFailure] {
        captured.withLock { $0 = [] }
        await body()
        return captured.withLock { failures in
            defer { failures = nil }
            return failures ?? []
        }
    }

    override func recordFailure(withDescription description: String, inFile filePath: String, atLine lineNumber: Int, expected: Bool) {
        let isCaptured = captured.withLock { failures in
            guard failures != nil else { return false }
            failures?.append(RecordedFailure(description: description, filePath: filePath, line: lineNumber))
            return true
        }
        if !isCaptured {
            super.recordFailure(withDescription: description, inFile: filePath, atLine: lineNumber, expected: expected)
        }
    }

    func testLoad() async {
        let machine = TestMachine(state: State.idle, reducer: reducer)

        await machine.send(.load) { $0 = .loading }
        await machine.advance(by: .seconds(1))
        await machine.receive(.loaded(42)) { $0 = .loaded(42) }
    }

    func testStateMismatchIsAnXCTestFailureAtTheCallersLine() async {
        let line = #line + 5
        let failures = await capturingFailures {
            let machine = TestMachine(state: State.idle, reducer: reducer)
            await machine.send(.load) { $0 = .loading }
            await machine.advance(by: .seconds(1))
            await machine.receive(.loaded(42)) { $0 = .loaded(41) }
        }

        XCTAssertEqual(failures.count, 1)
        XCTAssertEqual(failures.first?.filePath, "\(#filePath)")
        XCTAssertEqual(failures.first?.line, line)
        XCTAssert(failures.first?.description.contains("The state after `Action.loaded(42)` does not match") == true)
    }

    func testEffectStillRunningIsAnXCTestFailureWhereTheMachineWasCreated() async {
        let line = #line + 2
        let failures = await capturingFailures {
            let machine = TestMachine(state: State.idle, reducer: reducer)
            await machine.send(.load) { $0 = .loading }
        }

        XCTAssertEqual(failures.count, 1)
        XCTAssertEqual(failures.first?.line, line)
        XCTAssert(failures.first?.description.contains("The test ended with 1 effect still running") == true)
    }
}
