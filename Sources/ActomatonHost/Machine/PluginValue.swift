/// An argument of a plugin action, before it is checked against the parameter's C type.
///
/// Input lines give numbers without a C type (`add 5`); ``Plugin/action(_:_:)`` checks each
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
        case let .string(value): quoted(value)
        }
    }

    /// What the value is, for messages: `the string "x"`, `the integer 5`.
    var kindDescription: String {
        switch self {
        case .bool: "the boolean \(self)"
        case .int, .uint: "the integer \(self)"
        case .float: "the number \(self)"
        case .string: "the string \(self)"
        }
    }
}

/// `s` in double quotes, with `"`, `\` and control characters escaped as an input line reads them.
func quoted(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
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

/// An action of one plugin's vocabulary with arguments checked against its parameters: what
/// the host sends to a plugin's machine.
///
/// Make one with ``Plugin/action(_:_:)``, which refuses unknown actions and wrong arguments.
/// It remembers its index in the vocabulary of the plugin it was checked against; sent to a
/// newer version of that plugin (after a reload) it is checked again, by name.
public struct PluginAction: Sendable, Hashable, CustomStringConvertible {
    /// Everything in one object, so copying an action (as a machine does on every send)
    /// retains one reference, not a string and an array.
    private final class Storage: Sendable {
        let name: String
        let arguments: [PluginValue]
        let index: Int
        let vocabulary: UInt64

        init(name: String, arguments: [PluginValue], index: Int, vocabulary: UInt64) {
            self.name = name
            self.arguments = arguments
            self.index = index
            self.vocabulary = vocabulary
        }
    }

    private let storage: Storage

    /// The action's name.
    public var name: String { storage.name }
    /// The arguments, one per parameter, each of its parameter's kind and within its range.
    public var arguments: [PluginValue] { storage.arguments }
    /// The index of the action in the vocabulary of the plugin ``vocabulary`` identifies.
    var index: Int { storage.index }
    /// Identifies the loaded plugin the action was checked against.
    var vocabulary: UInt64 { storage.vocabulary }

    init(name: String, arguments: [PluginValue], index: Int, vocabulary: UInt64) {
        storage = Storage(name: name, arguments: arguments, index: index, vocabulary: vocabulary)
    }

    /// Equal when the name and arguments are equal.
    public static func == (lhs: PluginAction, rhs: PluginAction) -> Bool {
        lhs.name == rhs.name && lhs.arguments == rhs.arguments
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(arguments)
    }

    /// The action as an input line writes it: `place 1 2`, `login "alice"`.
    public var description: String {
        ([name] + arguments.map(\.description)).joined(separator: " ")
    }
}
