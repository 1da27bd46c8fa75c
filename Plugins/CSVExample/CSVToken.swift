/// One token of CSV text, as ``CSVTokenizer`` emits them.
public enum CSVToken: Equatable, Sendable {
    /// A field's bytes, unquoted: surrounding quotes removed and doubled quotes made single.
    case field([UInt8])
    /// The end of a record (a line), after its last field.
    case endOfRecord
    /// Malformed input. The tokenizer recovers and goes on; see ``CSVSyntaxError/Kind``.
    case error(CSVSyntaxError)
}

/// Malformed CSV: what is wrong, and where (1-based line and byte column).
public struct CSVSyntaxError: Equatable, Sendable {
    /// What is wrong.
    public enum Kind: UInt8, Equatable, Sendable {
        /// A `"` inside an unquoted field, as in `ab"c`. The quote is kept as a plain byte.
        case quoteInUnquotedField = 1
        /// A byte other than a delimiter or newline after a closing quote, as in `"ab"c`.
        /// The byte is kept and the field goes on unquoted.
        case characterAfterClosingQuote = 2
        /// The input ended inside a quoted field. The field is emitted as read so far.
        case unterminatedQuotedField = 3

        /// The case's name, for messages (`quoteInUnquotedField`), without reflection.
        public var name: String {
            switch self {
            case .quoteInUnquotedField: "quoteInUnquotedField"
            case .characterAfterClosingQuote: "characterAfterClosingQuote"
            case .unterminatedQuotedField: "unterminatedQuotedField"
            }
        }
    }

    /// What is wrong.
    public var kind: Kind
    /// The line of the offending byte, from 1.
    public var line: Int
    /// The byte column of the offending byte within its line, from 1.
    public var column: Int

    /// Creates an error.
    public init(_ kind: Kind, line: Int, column: Int) {
        self.kind = kind
        self.line = line
        self.column = column
    }
}
