import ActomatonCore

/// The RFC 4180 tokenizer of ``CSVTokenizer``, with outputs that allocate nothing: each field
/// is a range of the input's bytes, not a copy.
///
/// Same rules, same errors (kind, line and column) as ``CSVTokenizer``; only the output
/// differs. Run it over a whole input in bulk with a ``SinkEffectManager`` and
/// ``MealyMachine/send(contentsOf:)``; ranges count from the first byte sent after the state
/// was made (or after the last ``Action/endOfInput``):
///
/// ```swift
/// var machine = MealyMachine(state: CSVScanner.State(), reducer: CSVScanner(),
///                            effectManager: SinkEffectManager<CSVScanner.Action, FieldCounter>(FieldCounter()))
/// machine.send(contentsOf: bytes.lazy.map(CSVScanner.Action.byte))
/// machine.send(.endOfInput)
/// ```
///
/// A field whose bytes are exactly its content (unquoted, or quoted without `""` or a stray
/// quote) comes as the range of its content; any other is marked ``CSVFieldRange/needsDecoding``
/// and comes as its raw bytes, quotes included, which ``CSVFieldRange/bytes(in:)`` decodes.
public struct CSVScanner: MealyReducerProtocol, Sendable {
    /// Input to the scanner.
    public enum Action: Equatable, Sendable {
        /// The next byte of input.
        case byte(UInt8)
        /// The end of input: emits the last field and record, if any, and starts over at
        /// offset 0.
        case endOfInput
    }

    /// The scanner's position and what the field in progress looks like.
    public struct State: Equatable, Sendable {
        public var phase: CSVTokenizer.Phase = .recordStart
        /// The offset of the next byte.
        public var offset = 0
        /// The offset of the first byte of the field in progress (its opening quote, if quoted).
        public var fieldStart = 0
        /// Whether the field in progress must be decoded (`""`, a byte after its closing quote,
        /// or no closing quote).
        public var needsDecoding = false
        /// The line of the next byte, from 1, and the offset its line starts at.
        public var line = 1
        public var lineStart = 0
        public var lineEnded = false
        public var lastByteWasCarriageReturn = false

        public init() {}
    }

    /// The byte that separates fields.
    public let delimiter: UInt8

    /// A scanner that splits fields at `delimiter`.
    @inlinable
    public init(delimiter: UInt8 = UInt8(ascii: ",")) {
        self.delimiter = delimiter
    }

    @inlinable
    public func reduce(_ action: Action, into state: inout State, environment: Void) -> CSVScanStep {
        guard case let .byte(byte) = action else { return finish(&state) }
        let offset = state.offset
        state.offset = offset &+ 1
        if state.lineEnded || byte == .lineFeed || byte == .carriageReturn { advanceLine(&state, at: offset, over: byte) }
        switch state.phase {
        case .unquoted:
            return unquoted(byte, at: offset, &state)
        case .quoted:
            if byte == .quote { state.phase = .quoteInQuoted }
            return .none
        case .recordStart, .fieldStart, .afterCarriageReturn:
            if state.phase == .afterCarriageReturn && byte == .lineFeed {
                state.phase = .recordStart
                return .none
            }
            state.fieldStart = offset
            state.needsDecoding = false
            if byte == .quote {
                state.phase = .quoted
                return .none
            }
            state.phase = .unquoted
            return unquoted(byte, at: offset, &state)
        case .quoteInQuoted:
            if byte == .quote {
                state.needsDecoding = true
                state.phase = .quoted
                return .none
            }
            if let step = endOfField(byte, at: offset, &state) { return step }
            state.needsDecoding = true
            state.phase = .unquoted
            return CSVScanStep(error: CSVSyntaxError(.characterAfterClosingQuote, line: state.line, column: offset - state.lineStart + 1))
        }
    }

    @inlinable
    func unquoted(_ byte: UInt8, at offset: Int, _ state: inout State) -> CSVScanStep {
        if let step = endOfField(byte, at: offset, &state) { return step }
        guard byte != .quote else {
            return CSVScanStep(error: CSVSyntaxError(.quoteInUnquotedField, line: state.line, column: offset - state.lineStart + 1))
        }
        return .none
    }

    /// Ends the field at `offset` if `byte` is a delimiter or a line end.
    @inlinable
    func endOfField(_ byte: UInt8, at offset: Int, _ state: inout State) -> CSVScanStep? {
        let endsRecord: Bool
        let wasQuoted = state.phase == .quoteInQuoted
        if byte == delimiter {
            state.phase = .fieldStart
            endsRecord = false
        } else if byte == .lineFeed || byte == .carriageReturn {
            state.phase = byte == .lineFeed ? .recordStart : .afterCarriageReturn
            endsRecord = true
        } else {
            return nil
        }
        return CSVScanStep(field: field(endingAt: offset, wasQuoted: wasQuoted, state), endsRecord: endsRecord)
    }

    /// The field in progress, ending before `end`; `wasQuoted` when it ends after its closing quote.
    @inlinable
    func field(endingAt end: Int, wasQuoted: Bool, _ state: State) -> CSVFieldRange {
        if state.needsDecoding { return CSVFieldRange(range: state.fieldStart..<end, needsDecoding: true) }
        if wasQuoted { return CSVFieldRange(range: (state.fieldStart + 1)..<(end - 1), needsDecoding: false) }
        return CSVFieldRange(range: state.fieldStart..<end, needsDecoding: false)
    }

    @inlinable
    func finish(_ state: inout State) -> CSVScanStep {
        defer { state = State() }
        switch state.phase {
        case .recordStart, .afterCarriageReturn:
            return .none
        case .fieldStart:
            return CSVScanStep(field: CSVFieldRange(range: state.offset..<state.offset, needsDecoding: false), endsRecord: true)
        case .unquoted, .quoteInQuoted:
            return CSVScanStep(field: field(endingAt: state.offset, wasQuoted: state.phase == .quoteInQuoted, state), endsRecord: true)
        case .quoted:
            let error = CSVSyntaxError(.unterminatedQuotedField, line: state.line, column: state.offset - 1 - state.lineStart + 2)
            return CSVScanStep(field: CSVFieldRange(range: state.fieldStart..<state.offset, needsDecoding: true), endsRecord: true, error: error)
        }
    }

    /// Moves the line to `byte` at `offset`. A line end (LF, CR or CRLF) belongs to the line it ends.
    @inlinable
    func advanceLine(_ state: inout State, at offset: Int, over byte: UInt8) {
        if state.lineEnded {
            if byte == .lineFeed && state.lastByteWasCarriageReturn {
                state.lastByteWasCarriageReturn = false
                return
            }
            state.line += 1
            state.lineStart = offset
            state.lineEnded = false
        }
        state.lineEnded = byte == .lineFeed || byte == .carriageReturn
        state.lastByteWasCarriageReturn = byte == .carriageReturn
    }
}
