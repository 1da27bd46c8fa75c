/// Why an input line could not be read (placeholder until the input-line work lands).
public enum InputLineError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The line cannot be read; what is wrong.
    case syntax(String)

    /// The error, as one line.
    public var description: String {
        switch self {
        case let .syntax(message): message
        }
    }
}
