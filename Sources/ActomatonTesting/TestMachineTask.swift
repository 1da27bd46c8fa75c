import Synchronization

/// The effects one ``TestMachine/send(_:assert:fileID:filePath:line:column:)`` started: cancel
/// them, or wait for them to finish.
public struct TestMachineTask: Hashable, Sendable {
    /// The task that awaits the effects; `nil` when the action started none.
    public let rawValue: Task<Void, Error>?

    /// Wraps the task `Actomaton.send` would have returned.
    public init(_ rawValue: Task<Void, Error>?) {
        self.rawValue = rawValue
    }

    /// Cancels the effects, like cancelling the task `Actomaton.send` returns.
    public func cancel() {
        rawValue?.cancel()
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool {
        rawValue?.isCancelled ?? false
    }

    /// Waits until the effects have finished; fails if they are still running after `timeout`
    /// of real time (advance the clock first when they sleep on it).
    public func finish(
        timeout: Duration = .seconds(1),
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        guard let rawValue else { return }
        let isDone = Flag()
        let watcher = Task {
            _ = await rawValue.result
            isDone.set()
        }
        if await !waitUntil(timeout: timeout, { isDone.isSet }) {
            SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
                .fail(Failure.taskStillRunning(timeout: timeout))
        }
        watcher.cancel()
    }
}

/// A flag one task sets and another polls.
private final class Flag: Sendable {
    private let value = Atomic(false)

    func set() {
        value.store(true, ordering: .releasing)
    }

    var isSet: Bool {
        value.load(ordering: .acquiring)
    }
}
