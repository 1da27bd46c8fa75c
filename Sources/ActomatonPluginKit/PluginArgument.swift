import ActomatonPluginABI
import ActomatonPluginContract

/// How the kit reads an argument of each parameter type from the storage libffi hands a typed
/// entry point (the types of `PluginParameter`); each maps to one C type of the plugin contract.
///
/// | Swift | C |
/// |---|---|
/// | `Bool` | `bool` |
/// | `Int8`, `Int16`, `Int32`, `Int64`, `Int` | `int8_t` … `int64_t` (`Int` is `int64_t`) |
/// | `UInt8`, `UInt16`, `UInt32`, `UInt64` | `uint8_t` … `uint64_t` |
/// | `Float`, `Double` | `float`, `double` |
/// | `String` | `const char *` (UTF-8) |
protocol PluginArgument: PluginParameter, Sendable {
    /// The contract's type code (`ACTOMATON_TYPE_*`).
    static var pluginType: actomaton_type { get }
    /// Reads the value from the storage libffi hands a typed entry point.
    static func load(from slot: UnsafeRawPointer) -> Self
}

extension Bool: PluginArgument {
    /// The contract's type tag for an argument of this type.
    static var pluginType: actomaton_type { ACTOMATON_TYPE_BOOL }
    /// Reads an argument of this type from its libffi argument slot.
    static func load(from slot: UnsafeRawPointer) -> Bool { slot.load(as: UInt8.self) != 0 }
}

extension Int8: PluginArgument {
    /// The contract's type tag for an argument of this type.
    static var pluginType: actomaton_type { ACTOMATON_TYPE_INT8 }
    /// Reads an argument of this type from its libffi argument slot.
    static func load(from slot: UnsafeRawPointer) -> Int8 { slot.load(as: Int8.self) }
}

extension Int16: PluginArgument {
    /// The contract's type tag for an argument of this type.
    static var pluginType: actomaton_type { ACTOMATON_TYPE_INT16 }
    /// Reads an argument of this type from its libffi argument slot.
    static func load(from slot: UnsafeRawPointer) -> Int16 { slot.load(as: Int16.self) }
}

extension Int32: PluginArgument {
    /// The contract's type tag for an argument of this type.
    static var pluginType: actomaton_type { ACTOMATON_TYPE_INT32 }
    /// Reads an argument of this type from its libffi argument slot.
    static func load(from slot: UnsafeRawPointer) -> Int32 { slot.load(as: Int32.self) }
}

extension Int64: PluginArgument {
    /// The contract's type tag for an argument of this type.
    static var pluginType: actomaton_type { ACTOMATON_TYPE_INT64 }
    /// Reads an argument of this type from its libffi argument slot.
    static func load(from slot: UnsafeRawPointer) -> Int64 { slot.load(as: Int64.self) }
}

extension Int: PluginArgument {
    /// The contract's type tag for an argument of this type.
    static var pluginType: actomaton_type { ACTOMATON_TYPE_INT64 }
    /// Reads an argument of this type from its libffi argument slot.
    static func load(from slot: UnsafeRawPointer) -> Int { Int(slot.load(as: Int64.self)) }
}

extension UInt8: PluginArgument {
    /// The contract's type tag for an argument of this type.
    static var pluginType: actomaton_type { ACTOMATON_TYPE_UINT8 }
    /// Reads an argument of this type from its libffi argument slot.
    static func load(from slot: UnsafeRawPointer) -> UInt8 { slot.load(as: UInt8.self) }
}

extension UInt16: PluginArgument {
    /// The contract's type tag for an argument of this type.
    static var pluginType: actomaton_type { ACTOMATON_TYPE_UINT16 }
    /// Reads an argument of this type from its libffi argument slot.
    static func load(from slot: UnsafeRawPointer) -> UInt16 { slot.load(as: UInt16.self) }
}

extension UInt32: PluginArgument {
    /// The contract's type tag for an argument of this type.
    static var pluginType: actomaton_type { ACTOMATON_TYPE_UINT32 }
    /// Reads an argument of this type from its libffi argument slot.
    static func load(from slot: UnsafeRawPointer) -> UInt32 { slot.load(as: UInt32.self) }
}

extension UInt64: PluginArgument {
    /// The contract's type tag for an argument of this type.
    static var pluginType: actomaton_type { ACTOMATON_TYPE_UINT64 }
    /// Reads an argument of this type from its libffi argument slot.
    static func load(from slot: UnsafeRawPointer) -> UInt64 { slot.load(as: UInt64.self) }
}

extension Float: PluginArgument {
    /// The contract's type tag for an argument of this type.
    static var pluginType: actomaton_type { ACTOMATON_TYPE_FLOAT }
    /// Reads an argument of this type from its libffi argument slot.
    static func load(from slot: UnsafeRawPointer) -> Float { slot.load(as: Float.self) }
}

extension Double: PluginArgument {
    /// The contract's type tag for an argument of this type.
    static var pluginType: actomaton_type { ACTOMATON_TYPE_DOUBLE }
    /// Reads an argument of this type from its libffi argument slot.
    static func load(from slot: UnsafeRawPointer) -> Double { slot.load(as: Double.self) }
}

extension String: PluginArgument {
    /// The contract's type tag for an argument of this type.
    static var pluginType: actomaton_type { ACTOMATON_TYPE_STRING }
    /// Reads an argument of this type from its libffi argument slot.
    static func load(from slot: UnsafeRawPointer) -> String {
        guard let pointer = slot.load(as: UnsafePointer<CChar>?.self) else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)), as: UTF8.self)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `value` as an `actomaton_value` of `type`; strings are copied into `strings`, which the
/// caller frees. `nil` when the value does not fit the type.
func contractValue(_ value: PluginValue, type: actomaton_type, strings: inout [UnsafeMutablePointer<CChar>]) -> actomaton_value? {
    guard let valueType = PluginValueType(abiType: type), valueType.fits(value) else { return nil }
    var result = actomaton_value()
    result.type = type
    switch value {
    case let .bool(b): result.as.b = b
    case let .int(n):
        if valueType.signedRange != nil { result.as.i = n } else { result.as.u = UInt64(n) }
    case let .uint(n): result.as.u = n
    case let .float(x): result.as.f = x
    case let .string(text):
        guard !text.utf8.contains(0), let copy = strdup(text) else { return nil }
        strings.append(copy)
        result.as.s = UnsafePointer(copy)
    }
    return result
}

/// The value of `type` a typed entry point received in `slot`.
func pluginValue(of type: PluginValueType, in slot: UnsafeRawPointer) -> PluginValue {
    switch type {
    case .bool: .bool(Bool.load(from: slot))
    case .int8: .int(Int64(Int8.load(from: slot)))
    case .int16: .int(Int64(Int16.load(from: slot)))
    case .int32: .int(Int64(Int32.load(from: slot)))
    case .int64: .int(Int64.load(from: slot))
    case .uint8: .uint(UInt64(UInt8.load(from: slot)))
    case .uint16: .uint(UInt64(UInt16.load(from: slot)))
    case .uint32: .uint(UInt64(UInt32.load(from: slot)))
    case .uint64: .uint(UInt64.load(from: slot))
    case .float: .float(Double(Float.load(from: slot)))
    case .double: .float(Double.load(from: slot))
    case .string: .string(String.load(from: slot))
    }
}
