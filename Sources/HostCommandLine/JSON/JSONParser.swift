import ActomatonHost

/// Reads one JSON text (RFC 8259) in one pass, in time linear in its length.
///
/// Stricter than most parsers, because its input comes from anyone: no trailing commas, no
/// duplicate object keys, no leading zeros, `+` signs or bare `.5`, no control characters or
/// lone surrogates in strings, nothing after the value, and arrays and objects nested at most
/// ``maxDepth`` levels deep (recursion stays far from the stack's end). A number that does
/// not fit the host's types is an error that says so.
public struct JSONParser {
    /// The deepest nesting of arrays and objects accepted.
    public static let maxDepth = 64

    /// Why a JSON text was refused, and where.
    public struct Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
        /// What is wrong.
        public var reason: Reason
        /// The byte offset (from 0) where it was found.
        public var offset: Int

        /// Creates an error.
        public init(reason: Reason, offset: Int) {
            self.reason = reason
            self.offset = offset
        }

        /// What is wrong with a JSON text.
        public enum Reason: Sendable, Hashable {
            /// The text ends inside a value.
            case unexpectedEnd
            /// A character that cannot start or continue what is being read; `expected` says what could.
            case unexpected(Unicode.Scalar, expected: String)
            /// Arrays and objects nested deeper than ``JSONParser/maxDepth``.
            case tooDeep(limit: Int)
            /// A number RFC 8259 does not allow (`01`, `+1`, `.5`, `1.`, `1e`).
            case invalidNumber(String)
            /// An integer beyond `UInt64` or below `Int64.min`, or a number beyond `Double`'s range.
            case numberOutOfRange(String)
            /// A number with a fraction that the nearest double loses (`2.0000000000000001` is
            /// 2, `1e-400` is 0), when the parser keeps fractions (``JSONParser/parse(_:keepingFractions:maxDepth:)``).
            case fractionLost(String, readAs: Double)
            /// A `\` escape that is not one of RFC 8259's.
            case invalidEscape(String)
            /// A `\u` escape of half a surrogate pair.
            case loneSurrogate(String)
            /// A control character (U+0000 to U+001F) inside a string, where it must be escaped.
            case controlCharacterInString(UInt8)
            /// A comma right before `]` or `}`.
            case trailingComma
            /// A key that appears twice in one object.
            case duplicateKey(String)
            /// More text after the value.
            case trailingText
        }

        /// The reason and the column (from 1), one line.
        public var description: String {
            let what: String = switch reason {
            case .unexpectedEnd: "the text ends inside a value"
            case let .unexpected(scalar, expected): "expected \(expected), found \(Self.show(scalar))"
            case let .tooDeep(limit): "arrays and objects are nested deeper than \(limit) levels"
            case let .invalidNumber(text): "\(PluginLimits.echo(text)) is not a JSON number"
            case let .numberOutOfRange(text): "the number \(PluginLimits.echo(text)) is out of range (integers from -9223372036854775808 to 18446744073709551615, decimals within ±1.8e308)"
            case let .fractionLost(text, double): "the number \(PluginLimits.echo(text)) has a fraction that a double cannot keep: it would be read as \(double)"
            case let .invalidEscape(text): "unknown escape \(text) in a string"
            case let .loneSurrogate(text): "\(text) is half of a UTF-16 surrogate pair"
            case let .controlCharacterInString(byte): "a control character (\(TerminalText.hexByte(byte))) in a string must be escaped"
            case .trailingComma: "a comma before the closing bracket"
            case let .duplicateKey(key): "the key \(quoted(key)) appears twice"
            case .trailingText: "more text after the JSON value"
            }
            return "\(what) (column \(offset + 1))"
        }

        private static func show(_ scalar: Unicode.Scalar) -> String {
            scalar.value < 0x20 || scalar.value == 0x7F ? "the control character \(TerminalText.hexByte(UInt8(scalar.value)))" : "'\(scalar)'"
        }
    }

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0
    private var depthLimit = JSONParser.maxDepth

    private let keepsFractions: Bool

    private init(_ bytes: [UInt8], keepingFractions: Bool) {
        self.bytes = bytes
        keepsFractions = keepingFractions
    }

    /// Parses `text`, which must hold exactly one JSON value (with whitespace around it).
    ///
    /// A number whose text writes an integer is one, read from its digits (`5.0` and `1.5e3`
    /// are ``JSONValue/int(_:)``). With `keepingFractions`, a number with a fraction that the
    /// nearest double would lose entirely (`2.0000000000000001`, `1e-400`: the double is a whole
    /// number) is refused (``Error/Reason/fractionLost(_:readAs:)``): an integer parameter would
    /// take it as another number than the one sent. No double's own text is one of those.
    /// `maxDepth` is the most levels it nests (``maxDepth`` unless told: a reader of a value
    /// that embeds one as deep as that, one level down, allows one more).
    public static func parse(_ text: String, keepingFractions: Bool = false, maxDepth: Int = JSONParser.maxDepth) throws(Error) -> JSONValue {
        var parser = JSONParser(Array(text.utf8), keepingFractions: keepingFractions)
        parser.depthLimit = maxDepth
        let value = try parser.value()
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw Error(reason: .trailingText, offset: parser.index) }
        return value
    }

    private func fail(_ reason: Error.Reason, at offset: Int? = nil) -> Error {
        Error(reason: reason, offset: offset ?? index)
    }

    /// The scalar at `index`, for messages (the text is valid UTF-8).
    private func scalar(at offset: Int) -> Unicode.Scalar {
        var iterator = bytes[offset...].makeIterator()
        var decoder = UTF8()
        if case let .scalarValue(scalar) = decoder.decode(&iterator) { return scalar }
        return Unicode.Scalar(bytes[offset])
    }

    private func unexpected(_ expected: String) -> Error {
        index < bytes.count ? fail(.unexpected(scalar(at: index), expected: expected)) : fail(.unexpectedEnd)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
            index += 1
        }
    }

    private mutating func value() throws(Error) -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw fail(.unexpectedEnd) }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw unexpected("a value")
        }
    }

    private mutating func literal(_ word: StaticString) throws(Error) {
        let start = index
        for byte in UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount) {
            guard index < bytes.count, bytes[index] == byte else {
                throw index < bytes.count ? fail(.unexpected(scalar(at: start), expected: "a value"), at: start) : fail(.unexpectedEnd)
            }
            index += 1
        }
    }

    private mutating func enter() throws(Error) {
        depth += 1
        guard depth <= depthLimit else { throw fail(.tooDeep(limit: depthLimit)) }
    }

    private mutating func array() throws(Error) -> JSONValue {
        try enter()
        index += 1 // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            elements.append(try value())
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            switch bytes[index] {
            case UInt8(ascii: ","):
                let comma = index
                index += 1
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { throw fail(.trailingComma, at: comma) }
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return .array(elements)
            default:
                throw unexpected("',' or ']'")
            }
        }
    }

    private mutating func object() throws(Error) -> JSONValue {
        try enter()
        index += 1 // {
        var members: [(key: String, value: JSONValue)] = []
        var keys = Set<String>()
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw unexpected("a key in double quotes") }
            let keyStart = index
            let key = try string()
            guard keys.insert(key).inserted else { throw fail(.duplicateKey(key), at: keyStart) }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw unexpected("':'") }
            index += 1
            members.append((key, try value()))
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            switch bytes[index] {
            case UInt8(ascii: ","):
                let comma = index
                index += 1
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") { throw fail(.trailingComma, at: comma) }
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return .object(members)
            default:
                throw unexpected("',' or '}'")
            }
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private mutating func number() throws(Error) -> JSONValue {
        let start = index
        var isInteger = true
        // The extent of the token, so a refusal can quote all of it.
        func token(_ parser: JSONParser) -> String {
            var end = parser.index
            while end < parser.bytes.count, "+-.eE0123456789".utf8.contains(parser.bytes[end]) { end += 1 }
            return String(decoding: parser.bytes[start..<end], as: UTF8.self)
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, Self.isDigit(bytes[index]) else { throw fail(.invalidNumber(token(self)), at: start) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, Self.isDigit(bytes[index]) { throw fail(.invalidNumber(token(self)), at: start) }
        } else {
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, Self.isDigit(bytes[index]) else { throw fail(.invalidNumber(token(self)), at: start) }
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, Self.isDigit(bytes[index]) else { throw fail(.invalidNumber(token(self)), at: start) }
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger {
            if let value = Int64(text) { return .int(value) }
            if let value = UInt64(text) { return .uint(value) }
            throw fail(.numberOutOfRange(text), at: start)
        }
        guard let value = Double(text), value.isFinite else { throw fail(.numberOutOfRange(text), at: start) }
        // `5.0` and `5e0` are the integer they write, exactly (a double past 2^53 may not be).
        switch DecimalText.read(bytes[start..<index]) {
        case let .int(integer): return .int(integer)
        case let .uint(integer): return .uint(integer)
        case .zero, .beyondIntegers: return .float(value)
        case .fraction:
            if keepsFractions, DecimalText.losesTheFraction(value) { throw fail(.fractionLost(text, readAs: value), at: start) }
            return .float(value)
        }
    }

    private mutating func string() throws(Error) -> String {
        index += 1 // the opening quote
        var utf8: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: utf8, as: UTF8.self)
            case UInt8(ascii: "\\"):
                let escapeStart = index
                index += 1
                guard index < bytes.count else { throw fail(.unexpectedEnd) }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escaped)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    let scalar = try unicodeEscape(from: escapeStart)
                    utf8.append(contentsOf: String(Character(scalar)).utf8)
                default:
                    throw fail(.invalidEscape("\\" + String(scalar(at: escapeStart + 1))), at: escapeStart)
                }
            case 0x00..<0x20:
                throw fail(.controlCharacterInString(byte))
            default:
                utf8.append(byte)
                index += 1
            }
        }
        throw fail(.unexpectedEnd)
    }

    /// After `\u`: four hex digits, and a second `\uXXXX` for a surrogate pair.
    private mutating func unicodeEscape(from escapeStart: Int) throws(Error) -> Unicode.Scalar {
        let high = try hexQuad(escapeStart)
        if (0xDC00...0xDFFF).contains(high) {
            throw fail(.loneSurrogate(text(escapeStart, index)), at: escapeStart)
        }
        if (0xD800...0xDBFF).contains(high) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw fail(.loneSurrogate(text(escapeStart, index)), at: escapeStart)
            }
            let lowStart = index
            index += 2
            let low = try hexQuad(lowStart)
            guard (0xDC00...0xDFFF).contains(low) else { throw fail(.loneSurrogate(text(escapeStart, lowStart)), at: escapeStart) }
            return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))!
        }
        return Unicode.Scalar(high)!
    }

    private mutating func hexQuad(_ escapeStart: Int) throws(Error) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail(.invalidEscape(text(escapeStart, min(index + 1, bytes.count))), at: escapeStart)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private func text(_ start: Int, _ end: Int) -> String {
        String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
