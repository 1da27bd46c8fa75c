import ActomatonCore
import CSVExample
import Testing

private func records(_ text: String) -> [[String]] {
    CSVDocument(Array(text.utf8)).records
}

private func errors(_ text: String) -> [CSVSyntaxError] {
    CSVDocument(Array(text.utf8)).errors
}

private func field(_ text: String) -> CSVToken { .field(Array(text.utf8)) }

@Suite("CSV tokenizer: well-formed input")
struct CSVTokenizerTests {
    @Test func tokenStreamOfASmallInput() {
        #expect(CSVTokenizer().tokens(of: "a,b\nc\n".utf8) == [
            field("a"), field("b"), .endOfRecord,
            field("c"), .endOfRecord,
        ])
    }

    @Test func feedingOneByteAtATimeThroughAMachine() {
        var machine = MealyMachine(state: CSVTokenizer.State(), reducer: CSVTokenizer(),
                                   effectManager: ReplyEffectManager())
        var tokens: [CSVToken] = []
        for byte in "x,\"y\"\n".utf8 {
            tokens += machine.send(.byte(byte))
        }
        #expect(tokens == [field("x"), field("y"), .endOfRecord])
        #expect(machine.send(.endOfInput) == [])
    }

    @Test(arguments: [
        ("a,b,c\n1,2,3\n", [["a", "b", "c"], ["1", "2", "3"]]),
        ("a,b", [["a", "b"]]),
        ("a,b\r\nc,d\r\n", [["a", "b"], ["c", "d"]]),
        ("a\rb\r", [["a"], ["b"]]),
        ("\"a,b\",c\n", [["a,b", "c"]]),
        ("\"he said \"\"hi\"\"\",x\n", [["he said \"hi\"", "x"]]),
        ("\"\"\"\"\n", [["\""]]),
        ("\"line1\nline2\",x\r\n", [["line1\nline2", "x"]]),
        ("\"crlf\r\ninside\"\r\n", [["crlf\r\ninside"]]),
        (",,\n", [["", "", ""]]),
        ("\"\",a\n", [["", "a"]]),
        ("a,", [["a", ""]]),
        ("a,\"\"", [["a", ""]]),
        ("a\n\nb\n", [["a"], [""], ["b"]]),
        ("\"x\"", [["x"]]),
        ("\"héllo\",wörld,日本\n", [["héllo", "wörld", "日本"]]),
        (" spaced , kept \n", [[" spaced ", " kept "]]),
        ("", []),
    ] as [(String, [[String]])])
    func rfc4180Records(input: String, expected: [[String]]) {
        let document = CSVDocument(Array(input.utf8))
        #expect(document.records == expected)
        #expect(document.errors == [])
    }

    @Test func tabSeparatedValues() {
        let document = CSVDocument(Array("a\tb,c\t\"d\te\"\n".utf8), tokenizer: CSVTokenizer(delimiter: UInt8(ascii: "\t")))
        #expect(document.records == [["a", "b,c", "d\te"]])
    }

    @Test func endOfInputResetsForTheNextDocument() {
        var machine = MealyMachine(state: CSVTokenizer.State(), reducer: CSVTokenizer(),
                                   effectManager: ReplyEffectManager())
        _ = machine.send(.byte(UInt8(ascii: "\"")))
        #expect(machine.send(.endOfInput).contains(.endOfRecord))
        #expect(machine.send(.byte(UInt8(ascii: "z"))) == [])
        #expect(machine.state.line == 1 && machine.state.column == 1)
        #expect(machine.send(.endOfInput) == [field("z"), .endOfRecord])
    }

    /// Random records, encoded by the RFC's rules, come back unchanged.
    @Test func roundTripOfGeneratedRecords() {
        var random = SplitMix64(seed: 4180)
        let alphabet = Array("ab ,\"\r\né".unicodeScalars)
        for _ in 0..<300 {
            let expected: [[String]] = (0..<Int(random.next() % 4 + 1)).map { _ in
                (0..<Int(random.next() % 4 + 1)).map { _ in
                    var field = ""
                    for _ in 0..<Int(random.next() % 6) {
                        field.unicodeScalars.append(alphabet[Int(random.next() % UInt64(alphabet.count))])
                    }
                    return field
                }
            }
            let text = expected.map { record in
                record.map { field in
                    let needsQuotes = field.isEmpty || field.unicodeScalars.contains(where: { ",\"\r\n".unicodeScalars.contains($0) })
                    let escaped = field.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"")
                    return needsQuotes ? "\"\(escaped)\"" : escaped
                }.joined(separator: ",")
            }.joined(separator: random.next() % 2 == 0 ? "\n" : "\r\n")
            let document = CSVDocument(Array(text.utf8))
            #expect(document.records == expected, "input: \(String(reflecting: text))")
            #expect(document.errors == [])
        }
    }
}

@Suite("CSV tokenizer: malformed input")
struct CSVTokenizerErrorTests {
    @Test func strayQuoteInAnUnquotedField() {
        let document = CSVDocument(Array("ab\"c,d\n".utf8))
        #expect(document.errors == [CSVSyntaxError(.quoteInUnquotedField, line: 1, column: 3)])
        #expect(document.records == [["ab\"c", "d"]])
    }

    @Test func characterAfterAClosingQuote() {
        let document = CSVDocument(Array("x\n\"ab\"c,d\n".utf8))
        #expect(document.errors == [CSVSyntaxError(.characterAfterClosingQuote, line: 2, column: 5)])
        #expect(document.records == [["x"], ["abc", "d"]])
    }

    @Test func unterminatedQuotedField() {
        let document = CSVDocument(Array("a,\"bc".utf8))
        #expect(document.errors == [CSVSyntaxError(.unterminatedQuotedField, line: 1, column: 6)])
        #expect(document.records == [["a", "bc"]])
    }

    @Test func linesCountNewlinesInsideQuotesAndCRLFOnce() {
        #expect(errors("\"a\nb\",x\r\nc\"d\n") == [CSVSyntaxError(.quoteInUnquotedField, line: 3, column: 2)])
        #expect(errors("a\r\rb\"\n") == [CSVSyntaxError(.quoteInUnquotedField, line: 3, column: 2)])
    }

    @Test func theTokenizerKeepsGoingAfterAnError() {
        let document = CSVDocument(Array("a\"b\n\"c\"d\n1,2\n".utf8))
        #expect(document.errors.map(\.kind) == [.quoteInUnquotedField, .characterAfterClosingQuote])
        #expect(document.records == [["a\"b"], ["cd"], ["1", "2"]])
    }

    @Test func theErrorComesAsATokenInStreamOrder() {
        #expect(CSVTokenizer().tokens(of: "a\"\n".utf8) == [
            .error(CSVSyntaxError(.quoteInUnquotedField, line: 1, column: 2)),
            field("a\""), .endOfRecord,
        ])
    }
}
