/// The type of an action parameter, as a plugin's manifest declares it (`ACTOMATON_TYPE_*`; the raw value is that code).
///
/// Each type is the C type the action's entry point takes, so it decides the libffi type of
/// that argument and the range of values it accepts.
public enum PluginValueType: UInt32, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// C `bool`.
    case bool = 1
    /// C `int8_t`.
    case int8 = 2
    /// C `int16_t`.
    case int16 = 3
    /// C `int32_t`.
    case int32 = 4
    /// C `int64_t`.
    case int64 = 5
    /// C `uint8_t`.
    case uint8 = 6
    /// C `uint16_t`.
    case uint16 = 7
    /// C `uint32_t`.
    case uint32 = 8
    /// C `uint64_t`.
    case uint64 = 9
    /// C `float`.
    case float = 10
    /// C `double`.
    case double = 11
    /// C `const char *`: UTF-8, NUL-terminated.
    case string = 12

    /// The name used in messages and by `inspect` (`int32`, `string`).
    public var description: String {
        switch self {
        case .bool: "bool"
        case .int8: "int8"
        case .int16: "int16"
        case .int32: "int32"
        case .int64: "int64"
        case .uint8: "uint8"
        case .uint16: "uint16"
        case .uint32: "uint32"
        case .uint64: "uint64"
        case .float: "float"
        case .double: "double"
        case .string: "string"
        }
    }

    /// The smallest and largest value of a signed integer type.
    public var signedRange: ClosedRange<Int64>? {
        switch self {
        case .int8: Int64(Int8.min)...Int64(Int8.max)
        case .int16: Int64(Int16.min)...Int64(Int16.max)
        case .int32: Int64(Int32.min)...Int64(Int32.max)
        case .int64: Int64.min...Int64.max
        default: nil
        }
    }

    /// The largest value of an unsigned integer type.
    public var unsignedMax: UInt64? {
        switch self {
        case .uint8: UInt64(UInt8.max)
        case .uint16: UInt64(UInt16.max)
        case .uint32: UInt64(UInt32.max)
        case .uint64: UInt64.max
        default: nil
        }
    }

    /// Whether `value`, a signed integer, fits the type (an integer type).
    public func accepts(_ value: Int64) -> Bool {
        if let range = signedRange { return range.contains(value) }
        if let max = unsignedMax { return value >= 0 && UInt64(value) <= max }
        return false
    }

    /// Whether `value`, an unsigned integer, fits the type (an integer type).
    public func accepts(_ value: UInt64) -> Bool {
        if let range = signedRange { return value <= UInt64(range.upperBound) }
        if let max = unsignedMax { return value <= max }
        return false
    }
}
