/// Makes text from outside — input lines, paths, and everything a plugin hands back — safe to
/// print as one line on a terminal or in a log.
///
/// Every line `actomaton-host` prints goes through ``escaping(_:)``, so a newline in an action
/// name cannot forge an `error:` line, and an escape sequence in a plugin's `describe` cannot
/// drive the terminal. Bytes that are not UTF-8 are shown as `\xHH` by ``decoding(_:)``.
public enum TerminalText {
    /// `text` with control and invisible characters escaped: `\n`, `\r`, `\t` for those,
    /// `\u{1B}` for the other C0 and C1 controls, DEL, every format character (general
    /// category Cf: the bidirectional overrides and isolates, zero-width spaces and joiners,
    /// U+FEFF wherever it is, the soft hyphen, U+061C…) and the line and paragraph separators
    /// (Zl, Zp: U+2028, U+2029). What is printed then shows every scalar that is there: a
    /// name with an invisible character cannot pass for another, nor text read in another order.
    public static func escaping(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        // Built as bytes, once: appending to a scalar view copied it each time (a megabyte of
        // control characters took minutes).
        var result: [UInt8] = []
        result.reserveCapacity(text.utf8.count + text.utf8.count / 4)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                UTF8.encode(scalar) { result.append($0) }
                continue
            }
            switch scalar {
            case "\n": result.append(contentsOf: #"\n"#.utf8)
            case "\r": result.append(contentsOf: #"\r"#.utf8)
            case "\t": result.append(contentsOf: #"\t"#.utf8)
            default: result.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".utf8)
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// `byte` as a line names it: `0x0D`.
    package static func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return "0x\(digits[Int(byte >> 4)])\(digits[Int(byte & 0xF)])"
    }

    /// `bytes` as UTF-8, with each byte that is not part of a valid sequence shown as `\xHH`.
    public static func decoding(_ bytes: some Collection<UInt8>) -> String {
        if let valid = String(validating: bytes, as: UTF8.self) { return valid }
        let bytes = Array(bytes)
        // Built as bytes, once (see `escaping`): each bad byte becomes the 4 bytes of `\xHH`.
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count + bytes.count / 2)
        let digits = Array("0123456789ABCDEF".utf8)
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case let .valid(encoded):
                result.append(contentsOf: encoded)
                offset += encoded.count
            case let .error(length):
                for byte in bytes[offset..<offset + length] {
                    result += [UInt8(ascii: "\\"), UInt8(ascii: "x"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
                }
                offset += length
            case .emptyInput:
                return String(decoding: result, as: UTF8.self)
            }
        }
    }

    /// Whether ``escaping(_:)`` escapes `scalar`.
    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F..<0xA0: return true
        case 0x20..<0x7F: return false
        default:
            switch scalar.properties.generalCategory {
            case .format, .lineSeparator, .paragraphSeparator: return true
            default: return false
            }
        }
    }
}
