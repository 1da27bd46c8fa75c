/// Builds JSON text without Foundation, for plugin descriptions that read the same whether
/// the plugin is a `.so` or a `.wasm` module.
///
/// Strings are escaped as Foundation's `JSONEncoder` escapes them (`"`, `\`, `/` and control
/// characters), so a description written with it matches one written with `JSONEncoder`.
public enum JSONText {
    /// `text` as a JSON string, quotes included.
    public static func string(_ text: String) -> String {
        var out: [UInt8] = [UInt8(ascii: "\"")]
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [92, 34]
            case UInt8(ascii: "\\"): out += [92, 92]
            case UInt8(ascii: "/"): out += [92, 47]
            case 0x0A: out += [92, UInt8(ascii: "n")]
            case 0x0D: out += [92, UInt8(ascii: "r")]
            case 0x09: out += [92, UInt8(ascii: "t")]
            case 0x08: out += [92, UInt8(ascii: "b")]
            case 0x0C: out += [92, UInt8(ascii: "f")]
            case 0..<0x20:
                let digits: [UInt8] = Array("0123456789abcdef".utf8)
                out += Array("\\u00".utf8) + [digits[Int(byte >> 4)], digits[Int(byte & 15)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
        return String(decoding: out, as: UTF8.self)
    }

    /// `items`, already JSON, as a JSON array.
    public static func array(_ items: [String]) -> String {
        var out = "["
        for (index, item) in items.enumerated() {
            if index > 0 { out += "," }
            out += item
        }
        return out + "]"
    }

    /// `members`, values already JSON, as a JSON object with keys in the order given.
    public static func object(_ members: [(key: String, value: String)]) -> String {
        var out = "{"
        for (index, member) in members.enumerated() {
            if index > 0 { out += "," }
            out += string(member.key) + ":" + member.value
        }
        return out + "}"
    }
}
