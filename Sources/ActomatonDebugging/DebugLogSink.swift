/// Where `MealyReducer/debug(_:format:to:filter:)` writes its entries: standard output, a
/// swift-log `Logger` (``logger(_:level:)``), or any closure.
///
/// A sink also says whether it is enabled. The logging reducer asks before it copies or
/// formats anything, so a disabled sink (a `Logger` whose level is above the entries', or
/// ``disabled``) costs one check per action and no formatting.
public struct DebugLogSink: Sendable {
    /// Whether entries written now would go anywhere.
    public let isEnabled: @Sendable () -> Bool
    /// Writes one entry: a message of one or more lines, without a final newline.
    public let write: @Sendable (String) -> Void

    /// `true` only for ``disabled``: the reducer is then returned unchanged.
    let isAlwaysDisabled: Bool

    /// Creates a sink that writes entries with `write` while `isEnabled` returns `true`.
    public init(
        isEnabled: @escaping @Sendable () -> Bool = { true },
        write: @escaping @Sendable (String) -> Void
    ) {
        self.isEnabled = isEnabled
        self.write = write
        isAlwaysDisabled = false
    }

    private init(disabled: Void) {
        isEnabled = { false }
        write = { _ in }
        isAlwaysDisabled = true
    }

    /// Prints each entry to standard output.
    public static var standardOutput: DebugLogSink {
        DebugLogSink { print($0) }
    }

    /// Writes nothing; a reducer logged to it is the reducer itself, at no cost.
    ///
    /// Use it to switch logging off without changing the composition:
    /// `reducer.debug(to: verbose ? .standardOutput : .disabled)`.
    public static var disabled: DebugLogSink {
        DebugLogSink(disabled: ())
    }
}
