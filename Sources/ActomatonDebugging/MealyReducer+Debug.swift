import ActomatonCore
import CustomDump

extension MealyReducer {
    /// Logs each action the reducer runs, and what it did to the state.
    ///
    /// ```swift
    /// let logged = reducer.debug("Timer", format: .actionAndStateDiff, filter: { $0 != .tick })
    /// ```
    ///
    /// writes, for each action but `.tick`, an entry such as
    ///
    ///     Timer: received action:
    ///       Action.start
    ///       State(
    ///     -   isRunning: false
    ///     +   isRunning: true
    ///       )
    ///
    /// The logged reducer returns exactly what the reducer returns and leaves the state exactly
    /// as the reducer leaves it: logging never changes behaviour. It works on any output (the
    /// `Effect`s of `Reducer`, `Void`, feedback arrays), so it fits every machine.
    ///
    /// Logging costs nothing when it is off: with ``DebugLogSink/disabled`` the reducer itself
    /// is returned; otherwise the sink's ``DebugLogSink/isEnabled`` and then `filter` are asked
    /// first, and an action they turn away is neither copied nor formatted.
    ///
    /// - Parameters:
    ///   - name: Starts every entry, to tell several logged reducers apart.
    ///   - format: What follows the action: nothing, the whole state, or the state diff.
    ///   - sink: Where entries go: standard output by default, or a swift-log `Logger`.
    ///   - filter: Returns `false` for actions to leave out, e.g. a timer's ticks.
    public func debug(
        _ name: String? = nil,
        format: DebugLogFormat = .actionAndStateDiff,
        to sink: DebugLogSink = .standardOutput,
        filter: @escaping @Sendable (Action) -> Bool = { _ in true }
    ) -> MealyReducer {
        if sink.isAlwaysDisabled { return self }
        return MealyReducer { action, state, environment in
            guard sink.isEnabled(), filter(action) else {
                return self.run(action, &state, environment)
            }
            let before = format.needsStateBefore ? state : nil
            let output = self.run(action, &state, environment)
            sink.write(DebugLogEntry.message(name: name, format: format, action: action, before: before, after: state))
            return output
        }
    }
}

/// Formats the entries of `MealyReducer/debug(_:format:to:filter:)`.
enum DebugLogEntry {
    static func message<Action, State>(
        name: String?, format: DebugLogFormat, action: Action, before: State?, after: State
    ) -> String {
        let prefix = name.map { $0.isEmpty ? "" : "\($0): " } ?? ""
        var message = "\(prefix)received action:\n"
        message += indented(String(customDumping: action))
        switch format.content {
        case .action:
            break
        case .actionAndState:
            message += "\n" + indented(String(customDumping: after))
        case .actionAndStateDiff:
            if let before, let difference = diff(before, after) {
                message += "\n" + difference
            } else {
                message += "\n  (No state changes)"
            }
        }
        return message
    }

    /// Indents every line by two spaces, to line up with a diff's unchanged lines.
    private static func indented(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { "  \($0)" }
            .joined(separator: "\n")
    }
}
