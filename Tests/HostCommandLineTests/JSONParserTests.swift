import HostCommandLine
import Testing

@Suite("JSON: RFC 8259, strict, linear, nested at most 64 levels")
struct JSONParserTests {
    private func reason(_ text: String) -> JSONParser.Error.Reason? {
        do {
            _ = try JSONParser.parse(text)
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func values() throws {
        #expect(try JSONParser.parse(#" {"a": [1, -2, 3.5, 1e2, -0, true, false, null, "x\"\\\/\b\f\n\r\t\u0041"], "b": {}} "#)
            == .object([
                ("a", .array([.int(1), .int(-2), .float(3.5), .float(100), .int(0), .bool(true), .bool(false), .null, .string("x\"\\/\u{8}\u{c}\n\r\tA")])),
                ("b", .object([])),
            ]))
        #expect(try JSONParser.parse("[]") == .array([]))
        #expect(try JSONParser.parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try JSONParser.parse("9223372036854775807") == .int(.max))
        #expect(try JSONParser.parse("9223372036854775808") == .uint(9_223_372_036_854_775_808))
        #expect(try JSONParser.parse("18446744073709551615") == .uint(.max))
        #expect(try JSONParser.parse("-9223372036854775808") == .int(.min))
    }

    @Test func numbersRFC8259DoesNotAllow() {
        for text in ["01", "-01", "+1", ".5", "1.", "1e", "1e+", "-", "--1", "1.e3", "0x10"] {
            let reason = reason(text)
            switch reason {
            case .invalidNumber?, .unexpected?, .trailingText?: break
            default: Issue.record("\(text): \(String(describing: reason))")
            }
        }
        #expect(reason("01") == .invalidNumber("01"))
        #expect(reason("[1.]") == .invalidNumber("1."))
        #expect(reason("NaN") == .unexpected("N", expected: "a value"))
        #expect(reason("Infinity") == .unexpected("I", expected: "a value"))
    }

    @Test func numbersOutOfRange() {
        #expect(reason("18446744073709551616") == .numberOutOfRange("18446744073709551616"))
        #expect(reason("-9223372036854775809") == .numberOutOfRange("-9223372036854775809"))
        #expect(reason("1e309") == .numberOutOfRange("1e309"))
        #expect(reason("-1.5e400") == .numberOutOfRange("-1.5e400"))
    }

    @Test func trailingCommasAndOtherMistakes() {
        #expect(reason("[1,]") == .trailingComma)
        #expect(reason(#"{"a": 1,}"#) == .trailingComma)
        #expect(reason("[1 2]") == .unexpected("2", expected: "',' or ']'"))
        #expect(reason(#"{"a" 1}"#) == .unexpected("1", expected: "':'"))
        #expect(reason("{a: 1}") == .unexpected("a", expected: "a key in double quotes"))
        #expect(reason(#"{"a": 1, "a": 2}"#) == .duplicateKey("a"))
        #expect(reason("[1] [2]") == .trailingText)
        #expect(reason("[1") == .unexpectedEnd)
        #expect(reason(#""abc"#) == .unexpectedEnd)
        #expect(reason("") == .unexpectedEnd)
        #expect(reason("tru") == .unexpectedEnd)
        #expect(reason("trueish") == .trailingText)
        #expect(reason("nul!") == .unexpected("n", expected: "a value"))
        #expect(reason("\"a\tb\"") == .controlCharacterInString(9))
        #expect(reason(#""\x""#) == .invalidEscape("\\x"))
        #expect(reason(#""\u12G4""#) == .invalidEscape("\\u12G"))
        #expect(reason(#""\ud83d""#) == .loneSurrogate("\\ud83d"))
        #expect(reason(#""\ude00""#) == .loneSurrogate("\\ude00"))
        #expect(reason(#""\ud83d\u0041""#) == .loneSurrogate("\\ud83d"))
    }

    @Test func nestingLimit() throws {
        let depth = JSONParser.maxDepth
        let atLimit = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect(throws: Never.self) { try JSONParser.parse(atLimit) }
        let objects = String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
        #expect(throws: Never.self) { try JSONParser.parse(objects) }
        let pastLimit = "[" + atLimit + "]"
        #expect(throws: JSONParser.Error(reason: .tooDeep(limit: depth), offset: depth)) { try JSONParser.parse(pastLimit) }
    }

    /// A megabyte of `[` is refused after 65 bytes: nothing grows with the depth a line asks for.
    @Test func deepNestingIsRefusedAtOnce() {
        let hostile = String(repeating: "[", count: 1 << 20)
        #expect(throws: JSONParser.Error(reason: .tooDeep(limit: 64), offset: 64)) { try JSONParser.parse(hostile) }
        let mixed = String(repeating: #"{"k":["#, count: 100_000)
        #expect(throws: JSONParser.Error(reason: .tooDeep(limit: 64), offset: 6 * 32)) { try JSONParser.parse(mixed) }
    }

    /// A line of the largest size, wide rather than deep, parses in one pass.
    @Test func wideValuesParse() throws {
        let count = 200_000
        let text = "[" + Array(repeating: "12345", count: count).joined(separator: ",") + "]"
        guard case let .array(values) = try JSONParser.parse(text) else { Issue.record("not an array"); return }
        #expect(values.count == count && values.allSatisfy { $0 == .int(12345) })
    }

    @Test func messagesSayWhatAndWhere() {
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse("[1,]") }
        #expect(JSONParser.Error(reason: .trailingComma, offset: 2).description == "a comma before the closing bracket (column 3)")
        #expect(JSONParser.Error(reason: .unexpected("\u{1B}", expected: "a value"), offset: 0).description
            == "expected a value, found the control character 0x1B (column 1)")
        #expect(JSONParser.Error(reason: .tooDeep(limit: 64), offset: 64).description
            == "arrays and objects are nested deeper than 64 levels (column 65)")
    }
}
