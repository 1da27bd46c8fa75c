extension TestMachine {
    /// Ends the test: waits for running effects to end, then fails if effects are still
    /// running or actions were received but not asserted.
    ///
    /// The same checks run when the machine is released, so calling it is optional; call it to
    /// wait for effects that end on their own (not on the test clock), or to have failures
    /// reported at this line instead of where the machine was created. With exhaustivity off
    /// it only drops what is left. Either way, effects still running are then cancelled.
    public func finish(
        timeout: Duration? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        let location = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        let timeout = timeout ?? self.timeout
        _ = await waitUntil(timeout: timeout) { runningEffectCount == 0 }
        if exhaustivity == .on {
            Self.checkEndOfTest(received: receivedSteps, runningEffects: stillRunningEffectCount, at: location)
        }
        clearReceived()
        cancelEffects()
        markFinished()
    }

    /// Drops the actions received but not yet asserted, for a test that does not care about
    /// them.
    public func skipReceivedActions() async {
        await settle()
        clearReceived()
    }

    /// Cancels every effect still running, for a test that ends before them (a timer, a
    /// long-lived subscription) on purpose.
    ///
    /// Cancelled effects send back nothing more.
    public func skipInFlightEffects() async {
        cancelEffects()
        await settle()
    }
}
