import ActomatonPluginABI
import ActomatonPluginContract

/// A Swift type an exported action's parameter can have; each maps to one C type of the
/// plugin contract.
///
/// | Swift | C |
/// |---|---|
/// | `Bool` | `bool` |
/// | `Int8`, `Int16`, `Int32`, `Int64`, `Int` | `int8_t` … `int64_t` (`Int` is `int64_t`) |
/// | `UInt8`, `UInt16`, `UInt32`, `UInt64` | `uint8_t` … `uint64_t` |
/// | `Float`, `Double` | `float`, `double` |
/// | `String` | `const char *` (UTF-8) |
public protocol PluginArgument: Sendable {
    /// The contract's type code (`ACTOMATON_TYPE_*`).
    static var pluginType: actomaton_type { get }
    /// Reads the value from the storage libffi hands a typed entry point.
    static func load(from slot: UnsafeRawPointer) -> Self
}

extension Bool: PluginArgument {
    public static var pluginType: actomaton_type { ACTOMATON_TYPE_BOOL }
    public static func load(from slot: UnsafeRawPointer) -> Bool { slot.load(as: UInt8.self) != 0 }
}

extension Int8: PluginArgument {
    public static var pluginType: actomaton_type { ACTOMATON_TYPE_INT8 }
    public static func load(from slot: UnsafeRawPointer) -> Int8 { slot.load(as: Int8.self) }
}

extension Int16: PluginArgument {
    public static var pluginType: actomaton_type { ACTOMATON_TYPE_INT16 }
    public static func load(from slot: UnsafeRawPointer) -> Int16 { slot.load(as: Int16.self) }
}

extension Int32: PluginArgument {
    public static var pluginType: actomaton_type { ACTOMATON_TYPE_INT32 }
    public static func load(from slot: UnsafeRawPointer) -> Int32 { slot.load(as: Int32.self) }
}

extension Int64: PluginArgument {
    public static var pluginType: actomaton_type { ACTOMATON_TYPE_INT64 }
    public static func load(from slot: UnsafeRawPointer) -> Int64 { slot.load(as: Int64.self) }
}

extension Int: PluginArgument {
    public static var pluginType: actomaton_type { ACTOMATON_TYPE_INT64 }
    public static func load(from slot: UnsafeRawPointer) -> Int { Int(slot.load(as: Int64.self)) }
}

extension UInt8: PluginArgument {
    public static var pluginType: actomaton_type { ACTOMATON_TYPE_UINT8 }
    public static func load(from slot: UnsafeRawPointer) -> UInt8 { slot.load(as: UInt8.self) }
}

extension UInt16: PluginArgument {
    public static var pluginType: actomaton_type { ACTOMATON_TYPE_UINT16 }
    public static func load(from slot: UnsafeRawPointer) -> UInt16 { slot.load(as: UInt16.self) }
}

extension UInt32: PluginArgument {
    public static var pluginType: actomaton_type { ACTOMATON_TYPE_UINT32 }
    public static func load(from slot: UnsafeRawPointer) -> UInt32 { slot.load(as: UInt32.self) }
}

extension UInt64: PluginArgument {
    public static var pluginType: actomaton_type { ACTOMATON_TYPE_UINT64 }
    public static func load(from slot: UnsafeRawPointer) -> UInt64 { slot.load(as: UInt64.self) }
}

extension Float: PluginArgument {
    public static var pluginType: actomaton_type { ACTOMATON_TYPE_FLOAT }
    public static func load(from slot: UnsafeRawPointer) -> Float { slot.load(as: Float.self) }
}

extension Double: PluginArgument {
    public static var pluginType: actomaton_type { ACTOMATON_TYPE_DOUBLE }
    public static func load(from slot: UnsafeRawPointer) -> Double { slot.load(as: Double.self) }
}

extension String: PluginArgument {
    public static var pluginType: actomaton_type { ACTOMATON_TYPE_STRING }
    public static func load(from slot: UnsafeRawPointer) -> String {
        guard let pointer = slot.load(as: UnsafePointer<CChar>?.self) else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)), as: UTF8.self)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A Swift value from a reducer's action as the contract's typed value for `type`, for an
/// effect request; strings are copied with `strdup` into `strings`, which the caller frees.
/// `nil` when the value does not fit the type.
func contractValue(_ value: Any, type: actomaton_type, strings: inout [UnsafeMutablePointer<CChar>]) -> actomaton_value? {
    var result = actomaton_value()
    result.type = type
    switch type {
    case ACTOMATON_TYPE_BOOL:
        guard let b = value as? Bool else { return nil }
        result.as.b = b
    case ACTOMATON_TYPE_INT8, ACTOMATON_TYPE_INT16, ACTOMATON_TYPE_INT32, ACTOMATON_TYPE_INT64:
        guard let integer = value as? any BinaryInteger, let n = Int64(exactly: integer),
              PluginValueType(abiType: type)?.accepts(n) == true else { return nil }
        result.as.i = n
    case ACTOMATON_TYPE_UINT8, ACTOMATON_TYPE_UINT16, ACTOMATON_TYPE_UINT32, ACTOMATON_TYPE_UINT64:
        guard let integer = value as? any BinaryInteger, let n = UInt64(exactly: integer),
              PluginValueType(abiType: type)?.accepts(n) == true else { return nil }
        result.as.u = n
    case ACTOMATON_TYPE_FLOAT, ACTOMATON_TYPE_DOUBLE:
        if let x = value as? Double { result.as.f = x }
        else if let x = value as? Float { result.as.f = Double(x) }
        else if let integer = value as? any BinaryInteger { result.as.f = Double(integer) }
        else { return nil }
    case ACTOMATON_TYPE_STRING:
        guard let s = value as? String else { return nil }
        let copy = strdup(s)!
        strings.append(copy)
        result.as.s = UnsafePointer(copy)
    default:
        return nil
    }
    return result
}
