import ActomatonEffect
import CustomDump

/// The messages of a ``TestMachine``'s failures.
enum Failure {
    static func stateMismatch<Action, State>(action: Action, expected: State, actual: State) -> String {
        """
        The state after \(describe(action)) does not match the expectation: …

        \(difference(expected, actual))

        (Expected: −, Actual: +)
        """
    }

    static func effectFailure(_ failure: EffectFailure) -> String {
        "A failure no caller sees: \(failure)."
    }

    static func noStateChange<Action>(action: Action) -> String {
        """
        Expected \(describe(action)) to change the state, but it did not. \
        If no change is expected, leave out the closure.
        """
    }

    static func unhandledReceivedActions<Action>(_ actions: [Action]) -> String {
        """
        \(count(actions.count, "received action")) must be received before sending an action: …

        \(list(actions))
        """
    }

    static func unexpectedAction<Action>(expected: Action, received: Action) -> String {
        """
        Received an action other than the one expected: …

        \(difference(expected, received))

        (Expected: −, Received: +)
        """
    }

    static func unmatchedAction<Action>(received: Action) -> String {
        """
        Received an action that does not match the predicate: …

        \(indented(String(customDumping: received)))
        """
    }

    static func noActionReceived(expected: String, runningEffects: Int, timeout: Duration) -> String {
        if runningEffects == 0 {
            return "Expected to receive \(expected), but none was received, and no effect is running."
        }
        return """
            Expected to receive \(expected), but none was received within \(timeout). \
            \(count(runningEffects, "effect")) still running: if \(runningEffects == 1 ? "it sleeps" : "they sleep") \
            on the test clock, advance it first.
            """
    }

    static func unreceivedActionsAtEnd<Action>(_ actions: [Action]) -> String {
        """
        The test ended with \(count(actions.count, "received action")) not asserted: …

        \(list(actions))

        Receive \(actions.count == 1 ? "it" : "them") with `receive`, skip them with \
        `skipReceivedActions()`, or make the test non-exhaustive.
        """
    }

    static func effectsStillRunning(_ count: Int) -> String {
        """
        The test ended with \(Failure.count(count, "effect")) still running. \
        Advance the clock until \(count == 1 ? "it ends" : "they end"), cancel \(count == 1 ? "it" : "them") \
        with an action, skip \(count == 1 ? "it" : "them") with `skipInFlightEffects()`, or make \
        the test non-exhaustive.
        """
    }

    static func taskStillRunning(timeout: Duration) -> String {
        "Expected the effects of this send to finish, but they were still running after \(timeout)."
    }

    static func clockStillHasSleepers(timeout: Duration) -> String {
        """
        Expected all sleeps on the test clock to finish, but some still sleep after \(timeout). \
        A timer that is never stopped sleeps for ever: advance the clock by hand instead.
        """
    }

    // MARK: Formatting

    /// The action between backquotes, as swift-custom-dump prints it.
    static func describe<Action>(_ action: Action) -> String {
        "`\(String(customDumping: action))`"
    }

    /// A −/+ diff of two values, indented.
    private static func difference<T>(_ expected: T, _ actual: T) -> String {
        diff(expected, actual, format: .proportional).map { indented($0) }
            ?? indented("− \(String(customDumping: expected))\n+ \(String(customDumping: actual))")
    }

    private static func list<Action>(_ actions: [Action]) -> String {
        actions.map { indented(String(customDumping: $0)) }.joined(separator: "\n")
    }

    private static func count(_ count: Int, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }

    private static func indented(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { "  \($0)" }
            .joined(separator: "\n")
    }
}
