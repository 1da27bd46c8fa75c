extension TestMachine where Action: Equatable {
    /// Asserts that the next action effects sent back is `expectedAction`, and the exact state
    /// change it caused.
    ///
    /// ```swift
    /// await machine.advance(by: .seconds(1))
    /// await machine.receive(.loginOK) { $0 = .loggedIn }
    /// ```
    ///
    /// If no action has arrived yet, it waits while effects are running, up to `timeout` of
    /// real time. Actions run when they arrive, as in an `Actomaton`; `assert` receives the
    /// state from before that run and must change it into the state after. With exhaustivity
    /// off, earlier actions that are not `expectedAction` are skipped.
    ///
    /// The test fails when no action arrives, when the next one is another action (with a diff
    /// of the two), or when the state differs.
    public func receive(
        _ expectedAction: Action,
        timeout: Duration? = nil,
        assert: ((_ state: inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        await receive(
            Failure.describe(expectedAction),
            matching: { $0 == expectedAction },
            unexpected: { Failure.unexpectedAction(expected: expectedAction, received: $0) },
            timeout: timeout, assert: assert,
            at: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }
}

extension TestMachine {
    /// Asserts that the next action effects sent back matches `isMatching`, and the exact state
    /// change it caused; for actions that are not `Equatable`.
    ///
    /// ```swift
    /// await machine.receive({ if case .didFetch = $0 { true } else { false } }) {
    ///     $0.fetched = ["data"]
    /// }
    /// ```
    ///
    /// Waits and checks like `receive(_:)`.
    public func receive(
        _ isMatching: (Action) -> Bool,
        timeout: Duration? = nil,
        assert: ((_ state: inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        await receive(
            "an action matching the predicate",
            matching: isMatching,
            unexpected: { Failure.unmatchedAction(received: $0) },
            timeout: timeout, assert: assert,
            at: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }

    private func receive(
        _ expectation: String,
        matching isMatching: (Action) -> Bool,
        unexpected: (Action) -> String,
        timeout: Duration?,
        assert: ((inout State) throws -> Void)?,
        at location: SourceLocation
    ) async {
        let timeout = timeout ?? self.timeout
        let isExhaustive = exhaustivity == .on
        // Exhaustive: the next action, whatever it is. Otherwise: the first one that matches.
        func index() -> Int? {
            isExhaustive ? receivedSteps.indices.first : receivedSteps.firstIndex { isMatching($0.action) }
        }
        _ = await waitUntil(timeout: timeout) { index() != nil || runningEffectCount == 0 }
        guard let index = index() else {
            location.fail(Failure.noActionReceived(expected: expectation, runningEffects: runningEffectCount, timeout: timeout))
            return
        }
        let step = takeReceived(through: index)
        if isMatching(step.action) {
            expectState(of: step, assert, at: location)
        } else {
            location.fail(unexpected(step.action))
        }
        await settle()
    }
}
