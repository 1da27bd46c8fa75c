/// An argument of a plugin action, before it is checked against the parameter's C type.
///
/// Input lines give numbers without a C type (`add 5`); the host checks each
/// value against its parameter (kind and range) and only then is the action built.
public enum PluginValue: Sendable, Hashable, CustomStringConvertible {
    /// `true` or `false`.
    case bool(Bool)
    /// A signed integer.
    case int(Int64)
    /// An unsigned integer too large for `Int64`.
    case uint(UInt64)
    /// A number with a fraction or an exponent.
    case float(Double)
    /// A string.
    case string(String)

    /// The value as an input line writes it: `5`, `2.5`, `true`, `"alice"`.
    public var description: String {
        switch self {
        case let .bool(value): "\(value)"
        case let .int(value): "\(value)"
        case let .uint(value): "\(value)"
        case let .float(value): "\(value)"
        case let .string(value): Self.quoted(value)
        }
    }

    /// What the value is, for messages: `the string "x"`, `the integer 5`.
    public var kindDescription: String {
        switch self {
        case .bool: "the boolean \(self)"
        case .int, .uint: "the integer \(self)"
        case .float: "the number \(self)"
        case .string: "the string \(self)"
        }
    }
}

extension PluginValue {
    /// `text` in double quotes, with `"`, `\` and control characters escaped as an input line reads them.
    public static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
