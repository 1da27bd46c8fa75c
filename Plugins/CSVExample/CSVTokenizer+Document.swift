import ActomatonCore

/// A whole CSV input, tokenized: its records as strings, and any syntax errors met on the way.
public struct CSVDocument: Equatable, Sendable {
    /// The records, each a list of fields decoded as UTF-8.
    public var records: [[String]]
    /// The malformed spots, in input order; empty for well-formed input.
    public var errors: [CSVSyntaxError]

    /// Tokenizes `bytes` in full, end of input included, with `tokenizer`.
    public init<Bytes: Sequence<UInt8>>(_ bytes: Bytes, tokenizer: CSVTokenizer = CSVTokenizer()) {
        records = []
        errors = []
        var record: [String] = []
        for token in tokenizer.tokens(of: bytes) {
            switch token {
            case let .field(bytes): record.append(String(decoding: bytes, as: UTF8.self))
            case .endOfRecord: records.append(record); record = []
            case let .error(error): errors.append(error)
            }
        }
    }
}

extension CSVTokenizer {
    /// Tokenizes a complete input, one byte at a time through a `MealyMachine`, end of input
    /// included.
    public func tokens<Bytes: Sequence<UInt8>>(of bytes: Bytes) -> [CSVToken] {
        var machine = MealyMachine(state: State(), reducer: self, effectManager: ReplyEffectManager())
        var tokens: [CSVToken] = []
        for byte in bytes {
            tokens += machine.send(.byte(byte))
        }
        tokens += machine.send(.endOfInput)
        return tokens
    }
}
