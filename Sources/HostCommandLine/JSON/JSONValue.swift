/// A JSON value (RFC 8259), as ``JSONParser`` reads it.
///
/// Numbers keep their kind: a number whose text writes a nonzero integer — `5`, but also `5.0`,
/// `5e0` or `1.5e3`, read from its digits — is ``int(_:)`` or, when it does not fit an `Int64`,
/// ``uint(_:)``; any other number (with a fraction, zero written with a fraction or an exponent,
/// or past `UInt64.max`) is ``float(_:)``. Object members keep their order.
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer that fits an `Int64`.
    case int(Int64)
    /// An integer above `Int64.max` that fits a `UInt64`.
    case uint(UInt64)
    /// Any other number: one with a fraction, past `UInt64.max`, or zero written with a fraction or an exponent.
    case float(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object's members, in order; keys are unique.
    case object([(key: String, value: JSONValue)])

    /// Whether both are the same JSON value (objects compared key by key, in order).
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.int(a), .int(b)): a == b
        case let (.uint(a), .uint(b)): a == b
        case let (.float(a), .float(b)): a == b
        case let (.string(a), .string(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)): a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    /// Hashes the same parts `==` compares.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case let .bool(value): hasher.combine(value)
        case let .int(value): hasher.combine(value)
        case let .uint(value): hasher.combine(value)
        case let .float(value): hasher.combine(value)
        case let .string(value): hasher.combine(value)
        case let .array(values): hasher.combine(values)
        case let .object(members):
            for member in members {
                hasher.combine(member.key)
                hasher.combine(member.value)
            }
        }
    }

    /// What kind of value this is, for messages: "a string", "an array".
    public var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .uint, .float: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
