import ActomatonCore

/// What one byte (or the end of input) did in a ``CSVScanner``: a field that ended, whether
/// its record ended too, and an error met. A plain value: nothing is allocated.
///
/// When the three are present together (input ending inside a quoted field), they happened in
/// the order error, field, end of record, as ``CSVTokenizer`` emits them.
public struct CSVScanStep: Equatable, Sendable {
    /// The field that ended here, if any.
    public var field: CSVFieldRange?
    /// Whether its record ended here too.
    public var endsRecord: Bool
    /// Malformed input met here, if any.
    public var error: CSVSyntaxError?

    /// A step.
    @inlinable
    public init(field: CSVFieldRange? = nil, endsRecord: Bool = false, error: CSVSyntaxError? = nil) {
        self.field = field
        self.endsRecord = endsRecord
        self.error = error
    }

    /// Nothing happened.
    public static let none = CSVScanStep()

    /// The same step as ``CSVTokenizer``'s tokens, with the field's bytes read from `input`.
    public func tokens(in input: [UInt8]) -> [CSVToken] {
        var tokens: [CSVToken] = []
        if let error { tokens.append(.error(error)) }
        if let field { tokens.append(.field(field.bytes(in: input))) }
        if endsRecord { tokens.append(.endOfRecord) }
        return tokens
    }
}

/// A field of a ``CSVScanner``'s input, as a range of its bytes.
public struct CSVFieldRange: Equatable, Sendable {
    /// The field's content, or, when ``needsDecoding``, its raw bytes (opening quote included).
    public var range: Range<Int>
    /// Whether the bytes in ``range`` must go through ``bytes(in:)``: a quoted field with `""`,
    /// with bytes after its closing quote, or without a closing quote.
    public var needsDecoding: Bool

    /// A field.
    @inlinable
    public init(range: Range<Int>, needsDecoding: Bool) {
        self.range = range
        self.needsDecoding = needsDecoding
    }

    /// The field's content, read from `input` (the bytes the scanner was sent, from offset 0):
    /// surrounding quotes removed and `""` made `"`, as ``CSVTokenizer`` gives it.
    public func bytes<Input: RandomAccessCollection<UInt8>>(in input: Input) -> [UInt8] where Input.Index == Int {
        let raw = input[range]
        guard needsDecoding else { return Array(raw) }
        var content: [UInt8] = []
        content.reserveCapacity(raw.count)
        var index = raw.startIndex + 1  // past the opening quote
        var inQuotes = true
        while index < raw.endIndex {
            let byte = raw[index]
            if inQuotes && byte == .quote {
                if index + 1 < raw.endIndex && raw[index + 1] == .quote {
                    content.append(.quote)
                    index += 2
                    continue
                }
                inQuotes = false  // the closing quote; what follows is kept as it is
            } else {
                content.append(byte)
            }
            index += 1
        }
        return content
    }
}
