/// What `MealyReducer/debug(_:format:to:filter:)` writes for each action.
///
/// Every entry starts with the action; the format says what follows it: nothing, the whole
/// state after the action, or a diff of the state from before to after (the default).
/// Values are printed with swift-custom-dump, so nested types read as Swift.
public struct DebugLogFormat: Hashable, Sendable {
    enum Content: Hashable, Sendable {
        case action
        case actionAndState
        case actionAndStateDiff
    }

    let content: Content

    /// The action only: for actions whose effect on the state does not matter, or a state too
    /// large to print.
    public static let action = DebugLogFormat(content: .action)

    /// The action, then the whole state after it.
    public static let actionAndState = DebugLogFormat(content: .actionAndState)

    /// The action, then what it changed in the state, as a `−`/`+` diff; "(No state changes)"
    /// when it changed nothing.
    public static let actionAndStateDiff = DebugLogFormat(content: .actionAndStateDiff)

    /// Whether the entry needs the state from before the action, which costs a copy.
    var needsStateBefore: Bool { content == .actionAndStateDiff }
}
