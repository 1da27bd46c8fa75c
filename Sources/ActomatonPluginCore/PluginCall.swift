/// One action of a plugin's vocabulary with its arguments: how a plugin names one of its own
/// actions when its reducer requests it as an effect.
///
/// Both kits (`ActomatonPluginKit` for `.so` plugins and the wasm kit) take one explicit
/// mapping from the reducer's action to a call, usually a `switch`:
///
/// ```swift
/// requests: { action in
///     switch action {
///     case .increment: PluginCall("increment")
///     case let .add(amount): PluginCall("add", .int(amount))
///     }
/// }
/// ```
///
/// The kits check the mapping when the plugin is loaded: every vocabulary entry's action must
/// map back to that entry, with arguments that fit its parameters.
public struct PluginCall: Sendable, Equatable {
    /// The vocabulary entry's name.
    public var name: String
    /// The arguments, in the entry's parameter order.
    public var arguments: [PluginValue]

    /// A call of the entry `name` with `arguments`.
    public init(_ name: String, _ arguments: PluginValue...) {
        self.name = name
        self.arguments = arguments
    }

    /// A call of the entry `name` with `arguments`.
    public init(_ name: String, arguments: [PluginValue]) {
        self.name = name
        self.arguments = arguments
    }
}
