extension TestMachine {
    /// Sends `action` and asserts the exact state change it causes.
    ///
    /// ```swift
    /// await machine.send(.increment) { $0.count = 1 }
    /// ```
    ///
    /// `assert` receives the state from before the action; it must change it into the state
    /// expected after. The test fails, with a diff, when the actual state differs; leave out the
    /// closure when the action must not change the state. Effects the action returns start
    /// running; the actions they send back must then be received with `receive`.
    ///
    /// With exhaustivity on, actions received but not yet asserted fail the test here: a test
    /// must account for everything that happened before it acts again.
    ///
    /// - Returns: The effects this action started, to cancel or wait for.
    @discardableResult
    public func send(
        _ action: Action,
        assert: ((_ state: inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async -> TestMachineTask {
        let location = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        if !receivedSteps.isEmpty {
            if exhaustivity == .on {
                location.fail(Failure.unhandledReceivedActions(receivedSteps.map(\.action)))
            }
            clearReceived()
        }
        var (steps, task) = perform(action)
        let step = steps.removeFirst()
        // Actions fed back with `Effect.nextAction` ran already, within this send; they are
        // received like any other action an effect sends back.
        enqueueReceived(steps)
        expectState(of: step, assert, at: location)
        await settle()
        return TestMachineTask(task)
    }
}
