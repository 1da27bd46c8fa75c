/// Why an input line of `actomaton-host run` or `serve` could not be read.
///
/// Each case is one kind of bad line, so a message and a test can say which; the description
/// is one line, without the location (``HostLineError`` adds it).
public enum InputLineError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The line is longer than ``InputLine/maxLength`` bytes; it was skipped, up to its end.
    case tooLong(limit: Int)
    /// The line is not valid UTF-8; the byte offset (from 0) of the first bad byte.
    case invalidUTF8(offset: Int)
    /// The line holds a NUL character, at this byte offset (from 0).
    case nulCharacter(offset: Int)
    /// The text form cannot be read: what is wrong.
    case syntax(String)
    /// The line starts with `{` but is not valid JSON.
    case json(JSONParser.Error)
    /// The line is valid JSON, but not an action: what is wrong.
    case jsonShape(String)
    /// Reading the input failed (the system's reason) before this line ended: nothing from
    /// here on was read.
    case unreadable(String)

    /// The error, as one line.
    public var description: String {
        switch self {
        case let .tooLong(limit): "the line is longer than \(limit) bytes; it was skipped"
        case let .invalidUTF8(offset): "the line is not valid UTF-8 (a bad byte at column \(offset + 1))"
        case let .nulCharacter(offset): "the line holds a NUL character (column \(offset + 1)); NUL cannot be sent"
        case let .syntax(message): message
        case let .json(error):
            // Valid JSON, whose number an argument cannot be.
            if case .fractionLost = error.reason { error.description } else { "not valid JSON: \(error)" }
        case let .jsonShape(message): message
        case let .unreadable(reason): "cannot read the input: \(reason); nothing from here on was read"
        }
    }
}
