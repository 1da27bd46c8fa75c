/// A Swift type an action parameter can have, in either kit: its contract type, and the
/// conversions to and from a ``PluginValue``.
///
/// | Swift | contract type |
/// |---|---|
/// | `Bool` | `bool` |
/// | `Int8`, `Int16`, `Int32`, `Int64`, `Int` | `int8` … `int64` (`Int` is `int64`) |
/// | `UInt8`, `UInt16`, `UInt32`, `UInt64` | `uint8` … `uint64` |
/// | `Float`, `Double` | `float`, `double` |
/// | `String` | `string` (UTF-8) |
public protocol PluginParameter {
    /// The parameter's type in the contract.
    static var parameterType: PluginValueType { get }
    /// The value as a call carries it.
    var pluginValue: PluginValue { get }
    /// The value `pluginValue` carries, or `nil` when it does not fit this type.
    init?(pluginValue: PluginValue)
}

extension PluginParameter where Self: FixedWidthInteger {
    /// Reads the value out of a plugin value; `nil` when it does not fit this type.
    public init?(pluginValue: PluginValue) {
        switch pluginValue {
        case let .int(n): guard let value = Self(exactly: n) else { return nil }; self = value
        case let .uint(n): guard let value = Self(exactly: n) else { return nil }; self = value
        default: return nil
        }
    }
}

extension Bool: PluginParameter {
    /// The plugin parameter type this Swift type is sent as.
    public static var parameterType: PluginValueType { .bool }
    /// This value as a plugin value.
    public var pluginValue: PluginValue { .bool(self) }
    /// Reads the value out of a plugin value; `nil` when it does not fit this type.
    public init?(pluginValue: PluginValue) {
        guard case let .bool(value) = pluginValue else { return nil }
        self = value
    }
}

extension Int8: PluginParameter {
    /// The plugin parameter type this Swift type is sent as.
    public static var parameterType: PluginValueType { .int8 }
    /// This value as a plugin value.
    public var pluginValue: PluginValue { .int(Int64(self)) }
}

extension Int16: PluginParameter {
    /// The plugin parameter type this Swift type is sent as.
    public static var parameterType: PluginValueType { .int16 }
    /// This value as a plugin value.
    public var pluginValue: PluginValue { .int(Int64(self)) }
}

extension Int32: PluginParameter {
    /// The plugin parameter type this Swift type is sent as.
    public static var parameterType: PluginValueType { .int32 }
    /// This value as a plugin value.
    public var pluginValue: PluginValue { .int(Int64(self)) }
}

extension Int64: PluginParameter {
    /// The plugin parameter type this Swift type is sent as.
    public static var parameterType: PluginValueType { .int64 }
    /// This value as a plugin value.
    public var pluginValue: PluginValue { .int(self) }
}

extension Int: PluginParameter {
    /// The plugin parameter type this Swift type is sent as.
    public static var parameterType: PluginValueType { .int64 }
    /// This value as a plugin value.
    public var pluginValue: PluginValue { .int(Int64(self)) }
}

extension UInt8: PluginParameter {
    /// The plugin parameter type this Swift type is sent as.
    public static var parameterType: PluginValueType { .uint8 }
    /// This value as a plugin value.
    public var pluginValue: PluginValue { .uint(UInt64(self)) }
}

extension UInt16: PluginParameter {
    /// The plugin parameter type this Swift type is sent as.
    public static var parameterType: PluginValueType { .uint16 }
    /// This value as a plugin value.
    public var pluginValue: PluginValue { .uint(UInt64(self)) }
}

extension UInt32: PluginParameter {
    /// The plugin parameter type this Swift type is sent as.
    public static var parameterType: PluginValueType { .uint32 }
    /// This value as a plugin value.
    public var pluginValue: PluginValue { .uint(UInt64(self)) }
}

extension UInt64: PluginParameter {
    /// The plugin parameter type this Swift type is sent as.
    public static var parameterType: PluginValueType { .uint64 }
    /// This value as a plugin value.
    public var pluginValue: PluginValue { .uint(self) }
}

extension Float: PluginParameter {
    /// The plugin parameter type this Swift type is sent as.
    public static var parameterType: PluginValueType { .float }
    /// This value as a plugin value.
    public var pluginValue: PluginValue { .float(Double(self)) }
    /// Reads the value out of a plugin value; `nil` when it does not fit this type.
    public init?(pluginValue: PluginValue) {
        guard case let .float(value) = pluginValue else { return nil }
        self = Float(value)
    }
}

extension Double: PluginParameter {
    /// The plugin parameter type this Swift type is sent as.
    public static var parameterType: PluginValueType { .double }
    /// This value as a plugin value.
    public var pluginValue: PluginValue { .float(self) }
    /// Reads the value out of a plugin value; `nil` when it does not fit this type.
    public init?(pluginValue: PluginValue) {
        guard case let .float(value) = pluginValue else { return nil }
        self = value
    }
}

extension String: PluginParameter {
    /// The plugin parameter type this Swift type is sent as.
    public static var parameterType: PluginValueType { .string }
    /// This value as a plugin value.
    public var pluginValue: PluginValue { .string(self) }
    /// Reads the value out of a plugin value; `nil` when it does not fit this type.
    public init?(pluginValue: PluginValue) {
        guard case let .string(value) = pluginValue else { return nil }
        self = value
    }
}

extension PluginValueType {
    /// Whether `value` can fill a parameter of this type: the right kind, and an integer in
    /// the type's range.
    public func fits(_ value: PluginValue) -> Bool {
        switch (self, value) {
        case (.bool, .bool), (.string, .string), (.float, .float), (.double, .float): true
        case let (_, .int(n)): accepts(n)
        case let (_, .uint(n)): accepts(n)
        default: false
        }
    }

    /// A value of this type, for checking a vocabulary mapping: `false`, `0`, `0.0` or `""`.
    public var exampleValue: PluginValue {
        switch self {
        case .bool: .bool(false)
        case .int8, .int16, .int32, .int64: .int(0)
        case .uint8, .uint16, .uint32, .uint64: .uint(0)
        case .float, .double: .float(0)
        case .string: .string("")
        }
    }
}

/// Checks that a plugin's request mapping sends each vocabulary entry's action back to that
/// entry, with arguments that fit its parameters.
///
/// - Parameters:
///   - entries: The vocabulary, in order: each entry's name and parameter types.
///   - action: The action entry `index` makes from example arguments.
///   - requests: The plugin's mapping from an action to a call.
/// - Returns: `nil` when every entry maps back, or one line saying which does not.
public func pluginMappingProblem<Action>(
    entries: [(name: String, parameters: [PluginValueType])],
    action: (Int) -> Action,
    requests: (Action) -> PluginCall
) -> String? {
    for (index, entry) in entries.enumerated() {
        let call = requests(action(index))
        guard call.name.utf8.elementsEqual(entry.name.utf8) else {
            return "the vocabulary entry '\(entry.name)' makes an action that requests(_:) maps to '\(call.name)'"
        }
        guard call.arguments.count == entry.parameters.count else {
            return "requests(_:) maps '\(entry.name)' to \(call.arguments.count) arguments; the entry has \(entry.parameters.count) parameters"
        }
        for (position, (value, type)) in zip(call.arguments, entry.parameters).enumerated() where !type.fits(value) {
            return "requests(_:) maps '\(entry.name)' to an argument \(position + 1) that is not a \(type)"
        }
    }
    return nil
}
