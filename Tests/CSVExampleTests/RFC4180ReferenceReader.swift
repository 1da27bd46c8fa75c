import CSVExample

/// A plain reader of RFC 4180 CSV, written for the fuzz check to hold ``CSVTokenizer`` against.
///
/// It reads the whole input at once, with an index, by the RFC's grammar:
///
///     file        = record *(line-break record) [line-break]
///     record      = field *(delimiter field)
///     field       = escaped / non-escaped
///     escaped     = DQUOTE *(any byte but DQUOTE / 2DQUOTE) DQUOTE
///     non-escaped = *(any byte but delimiter, DQUOTE, CR, LF)
///
/// Where the tokenizer deliberately departs from the RFC, the reader models the tokenizer's
/// documented choice instead:
///
/// - A line break is CRLF, LF or a lone CR (the RFC: CRLF only), and the delimiter is any byte
///   the tokenizer is given (the RFC: a comma).
/// - An empty input holds no records (the grammar alone would read one record of one empty
///   field). A line break at the very end ends the last record; it does not start an empty one.
/// - A DQUOTE inside a non-escaped field is kept as a plain byte, after a
///   ``CSVSyntaxError/Kind/quoteInUnquotedField`` error at the DQUOTE.
/// - A byte after an escaped field's closing DQUOTE that is not a delimiter or a line break:
///   a ``CSVSyntaxError/Kind/characterAfterClosingQuote`` error at that byte; the byte is kept
///   and the field goes on as a non-escaped one.
/// - Input that ends inside an escaped field: an ``CSVSyntaxError/Kind/unterminatedQuotedField``
///   error one column past the last byte, on its line, then the field as read so far.
///
/// Errors come before the field they belong to, as the tokenizer streams them. Positions are a
/// line and a byte column, both from 1; a line ends at an LF, at a CRLF (the LF is on the CR's
/// line) or at a lone CR, inside escaped fields too.
struct RFC4180ReferenceReader {
    /// The byte between fields. It must not be a DQUOTE, CR or LF.
    var delimiter: UInt8

    private static let quote = UInt8(ascii: "\"")
    private static let carriageReturn = UInt8(ascii: "\r")
    private static let lineFeed = UInt8(ascii: "\n")

    /// The tokens of `input`, as ``CSVTokenizer`` should stream them, end of input included.
    func tokens(of input: [UInt8]) -> [CSVToken] {
        guard !input.isEmpty else { return [] }
        let positions = Self.positions(of: input)
        var tokens: [CSVToken] = []
        var index = 0

        /// Reads the rest of a non-escaped field into `field`, up to a delimiter, a line break or the end.
        func readNonEscaped(into field: inout [UInt8]) {
            while index < input.count, !isFieldEnd(input[index]) {
                if input[index] == Self.quote {
                    tokens.append(.error(CSVSyntaxError(.quoteInUnquotedField, line: positions[index].line, column: positions[index].column)))
                }
                field.append(input[index])
                index += 1
            }
        }

        while true {
            // record = field *(delimiter field)
            while true {
                var field: [UInt8] = []
                if index < input.count, input[index] == Self.quote {
                    // escaped = DQUOTE *(any byte but DQUOTE / 2DQUOTE) DQUOTE
                    index += 1
                    var closed = false
                    while index < input.count {
                        if input[index] != Self.quote {
                            field.append(input[index])
                            index += 1
                        } else if index + 1 < input.count, input[index + 1] == Self.quote {
                            field.append(Self.quote)
                            index += 2
                        } else {
                            index += 1
                            closed = true
                            break
                        }
                    }
                    if !closed {
                        let last = positions[input.count - 1]
                        tokens.append(.error(CSVSyntaxError(.unterminatedQuotedField, line: last.line, column: last.column + 1)))
                    } else if index < input.count, !isFieldEnd(input[index]) {
                        tokens.append(.error(CSVSyntaxError(.characterAfterClosingQuote, line: positions[index].line, column: positions[index].column)))
                        readNonEscaped(into: &field)
                    }
                } else {
                    readNonEscaped(into: &field)
                }
                tokens.append(.field(field))
                guard index < input.count, input[index] == delimiter else { break }
                index += 1
            }
            tokens.append(.endOfRecord)
            guard index < input.count else { return tokens }
            // line-break = CRLF / LF / CR
            if input[index] == Self.carriageReturn, index + 1 < input.count, input[index + 1] == Self.lineFeed {
                index += 2
            } else {
                index += 1
            }
            guard index < input.count else { return tokens }
        }
    }

    /// The records of `input`, each field decoded as UTF-8 (invalid bytes repaired).
    func records(of input: [UInt8]) -> [[String]] {
        var records: [[String]] = []
        var record: [String] = []
        for token in tokens(of: input) {
            switch token {
            case let .field(bytes): record.append(String(decoding: bytes, as: UTF8.self))
            case .endOfRecord: records.append(record); record = []
            case .error: break
            }
        }
        return records
    }

    private func isFieldEnd(_ byte: UInt8) -> Bool {
        byte == delimiter || byte == Self.carriageReturn || byte == Self.lineFeed
    }

    /// The line and column of every byte of `input`.
    private static func positions(of input: [UInt8]) -> [(line: Int, column: Int)] {
        var positions: [(line: Int, column: Int)] = []
        positions.reserveCapacity(input.count)
        var line = 1
        var column = 0
        for (index, byte) in input.enumerated() {
            column += 1
            positions.append((line, column))
            let isCRBeforeLF = byte == carriageReturn && index + 1 < input.count && input[index + 1] == lineFeed
            if byte == lineFeed || (byte == carriageReturn && !isCRBeforeLF) {
                line += 1
                column = 0
            }
        }
        return positions
    }
}
