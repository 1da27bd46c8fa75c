import ActomatonCore

/// A streaming RFC 4180 CSV tokenizer, written as a Mealy machine fed one byte at a time.
///
/// It handles quoted fields, doubled quotes (`""` inside quotes is one `"`), CRLF, LF and lone
/// CR line ends, and newlines inside quoted fields. Malformed input is reported as a
/// ``CSVToken/error(_:)`` token and the tokenizer recovers, so it never stops on bad input.
/// A blank line is a record with one empty field; input that ends without a final newline
/// still ends its last record when ``Action/endOfInput`` is sent.
///
/// ```swift
/// var machine = MealyMachine(state: CSVTokenizer.State(), reducer: CSVTokenizer(),
///                            effectManager: ReplyEffectManager())
/// for byte in "a,\"b\"\"c\"\n".utf8 { tokens += machine.send(.byte(byte)) }
/// // [.field("a"), .field("b\"c"), .endOfRecord]
/// ```
public struct CSVTokenizer: MealyReducerProtocol, Sendable {
    /// Input to the tokenizer.
    public enum Action: Equatable, Sendable {
        /// The next byte of input.
        case byte(UInt8)
        /// The input has ended: emits the last field and record, if any, and resets the
        /// tokenizer (position included) for a new input.
        case endOfInput
    }

    /// Where the tokenizer is within the grammar.
    public enum Phase: UInt8, Equatable, Sendable {
        /// At the start of a record (or of the input).
        case recordStart
        /// After a delimiter, at the start of a field.
        case fieldStart
        /// Inside an unquoted field.
        case unquoted
        /// Inside a quoted field.
        case quoted
        /// Just after a `"` inside a quoted field: a doubled quote or the closing quote.
        case quoteInQuoted
        /// Just after a CR that ended a record: an LF next belongs to it.
        case afterCarriageReturn
    }

    /// The tokenizer's state: the phase, the field read so far and the input position.
    public struct State: Equatable, Sendable {
        /// Where the tokenizer is within the grammar.
        public var phase: Phase = .recordStart
        /// The current field's bytes so far.
        public var field: [UInt8] = []
        /// The current line, from 1.
        public var line = 1
        /// The column of the last byte read, from 1 (0 before the first byte of a line).
        public var column = 0
        /// Whether the last byte ended a line, so the next one starts a new line.
        public var lineEnded = false
        /// Whether the last byte was a CR, so an LF after it ends the same line.
        public var lastByteWasCarriageReturn = false

        /// The state before any input.
        public init() {}
    }

    /// The byte that separates fields: `,` by default, `\t` for TSV.
    public let delimiter: UInt8

    /// Creates a tokenizer that splits fields at `delimiter`.
    @inlinable
    public init(delimiter: UInt8 = UInt8(ascii: ",")) {
        self.delimiter = delimiter
    }

    @inlinable
    public func reduce(_ action: Action, into state: inout State, environment: Void) -> [CSVToken] {
        guard case let .byte(byte) = action else { return finish(&state) }
        advancePosition(&state, over: byte)
        switch state.phase {
        case .afterCarriageReturn where byte == .lineFeed:
            state.phase = .recordStart
            return []
        case .recordStart, .fieldStart, .afterCarriageReturn:
            if byte == .quote {
                state.phase = .quoted
                return []
            }
            state.phase = .unquoted
            return unquoted(byte, &state)
        case .unquoted:
            return unquoted(byte, &state)
        case .quoted:
            if byte == .quote {
                state.phase = .quoteInQuoted
            } else {
                state.field.append(byte)
            }
            return []
        case .quoteInQuoted:
            if byte == .quote {
                state.field.append(byte)
                state.phase = .quoted
                return []
            }
            if let tokens = endOfField(byte, &state) { return tokens }
            state.field.append(byte)
            state.phase = .unquoted
            return [.error(CSVSyntaxError(.characterAfterClosingQuote, line: state.line, column: state.column))]
        }
    }

    /// A byte in an unquoted field (or the first byte of one).
    @inlinable
    func unquoted(_ byte: UInt8, _ state: inout State) -> [CSVToken] {
        if let tokens = endOfField(byte, &state) { return tokens }
        state.field.append(byte)
        guard byte != .quote else {
            return [.error(CSVSyntaxError(.quoteInUnquotedField, line: state.line, column: state.column))]
        }
        return []
    }

    /// Ends the field if `byte` is a delimiter or a line end; `nil` if it is neither.
    @inlinable
    func endOfField(_ byte: UInt8, _ state: inout State) -> [CSVToken]? {
        if byte == delimiter {
            state.phase = .fieldStart
            return [.field(takeField(&state))]
        }
        if byte == .lineFeed || byte == .carriageReturn {
            state.phase = byte == .lineFeed ? .recordStart : .afterCarriageReturn
            return [.field(takeField(&state)), .endOfRecord]
        }
        return nil
    }

    /// Ends the input and resets the state, position included, for the next input.
    @inlinable
    func finish(_ state: inout State) -> [CSVToken] {
        defer { state = State() }
        switch state.phase {
        case .recordStart, .afterCarriageReturn:
            return []
        case .fieldStart, .unquoted, .quoteInQuoted:
            return [.field(takeField(&state)), .endOfRecord]
        case .quoted:
            let error = CSVSyntaxError(.unterminatedQuotedField, line: state.line, column: state.column + 1)
            return [.error(error), .field(takeField(&state)), .endOfRecord]
        }
    }

    @inlinable
    func takeField(_ state: inout State) -> [UInt8] {
        let field = state.field
        state.field = []
        return field
    }

    /// Moves the position to `byte`. A line end (LF, CR or CRLF) belongs to the line it ends.
    @inlinable
    func advancePosition(_ state: inout State, over byte: UInt8) {
        if state.lineEnded {
            if byte == .lineFeed && state.lastByteWasCarriageReturn {
                state.column += 1
                state.lastByteWasCarriageReturn = false
                return
            }
            state.line += 1
            state.column = 0
            state.lineEnded = false
        }
        state.column += 1
        state.lineEnded = byte == .lineFeed || byte == .carriageReturn
        state.lastByteWasCarriageReturn = byte == .carriageReturn
    }
}

extension UInt8 {
    @usableFromInline static let quote = UInt8(ascii: "\"")
    @usableFromInline static let lineFeed = UInt8(ascii: "\n")
    @usableFromInline static let carriageReturn = UInt8(ascii: "\r")
}
