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
                ("a", .array([.int(1), .int(-2), .float(3.5), .int(100), .int(0), .bool(true), .bool(false), .null, .string("x\"\\/\u{8}\u{c}\n\r\tA")])),
                ("b", .object([])),
            ]))
        #expect(try JSONParser.parse("[]") == .array([]))
        #expect(try JSONParser.parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try JSONParser.parse("9223372036854775807") == .int(.max))
        #expect(try JSONParser.parse("9223372036854775808") == .uint(9_223_372_036_854_775_808))
        #expect(try JSONParser.parse("18446744073709551615") == .uint(.max))
        #expect(try JSONParser.parse("-9223372036854775808") == .int(.min))
    }

    /// Regression (audit): a number with a fraction or an exponent was read as a double, and an
    /// integral one past 2^53 became another integer: `9007199254740993.0` was 9007199254740992,
    /// which an int64 parameter took. An integral number is now read from its digits.
    @Test func anIntegralNumberIsTheIntegerItsDigitsWrite() throws {
        let exact: [(String, JSONValue)] = [
            ("9007199254740993.0", .int(9_007_199_254_740_993)), ("9.007199254740993e15", .int(9_007_199_254_740_993)),
            ("-9007199254740993.000", .int(-9_007_199_254_740_993)), ("5e0", .int(5)), ("1.5e3", .int(1500)), ("1500e-3", .float(1.5)), ("1000e-3", .int(1)),
            ("15000E-4", .float(1.5)), ("0.5e1", .int(5)), ("9.223372036854775807e18", .int(.max)),
            ("-9.223372036854775808e18", .int(.min)), ("9.223372036854775808e18", .uint(9_223_372_036_854_775_808)),
            ("1.8446744073709551615e19", .uint(.max)), ("1e19", .uint(10_000_000_000_000_000_000)),
            // Past the integers: a double, as before.
            ("1.8446744073709551616e19", .float(18_446_744_073_709_551_616)), ("-9.223372036854775809e18", .float(-9_223_372_036_854_775_809)),
            ("1e20", .float(1e20)), ("1e308", .float(1e308)), ("2.5", .float(2.5)), ("1e-3", .float(0.001)),
            ("1.00000000000000000000000000001e0", .float(1)),
        ]
        for (text, value) in exact {
            #expect(try JSONParser.parse(text) == value, "\(text)")
        }
        // Zero written with a fraction keeps its sign, as a double.
        guard case let .float(negativeZero) = try JSONParser.parse("-0.0") else { Issue.record("-0.0"); return }
        #expect(negativeZero == 0 && negativeZero.sign == .minus)
        #expect(try JSONParser.parse("0e7") == .float(0))
        // A huge exponent is read without overflow: out of range of every integer, a double.
        #expect(try JSONParser.parse("1e-99999999999999999999999") == .float(0))
        #expect(reason("1e99999999999999999999999") == .numberOutOfRange("1e99999999999999999999999"))
        // Keeping fractions, a fraction the double loses entirely is refused; a double's own
        // text, whose fraction the double keeps, never is.
        for (text, double) in [("2.0000000000000001", 2.0), ("1e-400", 0), ("-0.1e-999", -0.0), ("12345678901234567.5", 12_345_678_901_234_568)] {
            #expect(throws: JSONParser.Error(reason: .fractionLost(text, readAs: double), offset: 1)) {
                try JSONParser.parse("[\(text)]", keepingFractions: true)
            }
        }
        for text in ["0.1", "2.0000000000000004", "1e-320", "4.9e-324", "0.30000000000000004", "1.7976931348623157e308", "-0.0", "5.0"] {
            #expect((try? JSONParser.parse(text, keepingFractions: true)) != nil, "\(text)")
        }
        #expect(JSONParser.Error(reason: .fractionLost("1e-400", readAs: 0), offset: 0).description
            == "the number 1e-400 has a fraction that a double cannot keep: it would be read as 0.0 (column 1)")
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
