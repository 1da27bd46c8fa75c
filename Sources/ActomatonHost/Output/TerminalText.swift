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
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                result.append(scalar)
                continue
            }
            let escaped: String = switch scalar {
            case "\n": "\\n"
            case "\r": "\\r"
            case "\t": "\\t"
            default: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            }
            result.append(contentsOf: escaped.unicodeScalars)
        }
        return String(result)
    }

    /// `bytes` as UTF-8, with each byte that is not part of a valid sequence shown as `\xHH`.
    public static func decoding(_ bytes: some Collection<UInt8>) -> String {
        if let valid = String(validating: bytes, as: UTF8.self) { return valid }
        let bytes = Array(bytes)
        var result = String.UnicodeScalarView()
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case let .valid(encoded):
                result.append(Unicode.UTF8.decode(encoded))
                offset += encoded.count
            case let .error(length):
                for byte in bytes[offset..<offset + length] {
                    let hex = String(byte, radix: 16, uppercase: true)
                    result.append(contentsOf: "\\x\(hex.count == 1 ? "0" : "")\(hex)".unicodeScalars)
                }
                offset += length
            case .emptyInput:
                return String(result)
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
