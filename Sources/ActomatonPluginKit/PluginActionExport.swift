import ActomatonPluginABI

/// One action of an exported plugin's vocabulary: its name, its typed parameters, and how
/// its arguments become the reducer's action.
///
/// The parameter types come from the closure's argument types (see ``PluginArgument``):
///
/// ```swift
/// .action("place", "row", "column") { (row: UInt8, column: UInt8) in
///     .place(row: Int(row), column: Int(column))
/// }
/// ```
///
/// When the reducer requests one of its own actions as an effect, `PluginExport`'s `requests`
/// mapping names the entry; a vocabulary shared with the wasm kit is a list of
/// `PluginActionEntry` instead (``init(_:)``).
public struct PluginActionExport<Action>: @unchecked Sendable {
    let name: String
    let parameters: [(name: String, type: actomaton_type)]
    /// Makes the action from the argument slots (`slots[0]` is the first argument); `nil`
    /// when a shared vocabulary entry refuses the values.
    let decode: @Sendable (UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> Action?

    init(name: String, parameters: [(name: String, type: actomaton_type)],
         decode: @escaping @Sendable (UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> Action?) {
        self.name = name
        self.parameters = parameters
        self.decode = decode
    }

    /// The export of an entry of a vocabulary shared with the wasm kit: the arguments are read
    /// as values, then the entry makes the action.
    public init(_ entry: PluginActionEntry<Action>) {
        let types = entry.parameters.map(\.type)
        nonisolated(unsafe) let make = entry.make  // called on the plugin state's thread only
        self.init(name: entry.name, parameters: entry.parameters.map { ($0.name, $0.type.rawValue) }, decode: { slots in
            make(types.enumerated().map { index, type in pluginValue(of: type, in: slots[index]!) })
        })
    }

    /// An action without parameters.
    public static func action(_ name: String, _ make: @escaping @Sendable () -> Action) -> Self {
        Self(name: name, parameters: [], decode: { _ in make() })
    }

    /// An action with one parameter, named `a`.
    public static func action<A: PluginArgument>(
        _ name: String, _ a: String, _ make: @escaping @Sendable (A) -> Action
    ) -> Self {
        Self(name: name, parameters: [(a, A.pluginType)], decode: { slots in make(A.load(from: slots[0]!)) })
    }

    /// An action with two parameters, named `a` and `b`.
    public static func action<A: PluginArgument, B: PluginArgument>(
        _ name: String, _ a: String, _ b: String, _ make: @escaping @Sendable (A, B) -> Action
    ) -> Self {
        Self(name: name, parameters: [(a, A.pluginType), (b, B.pluginType)],
             decode: { slots in make(A.load(from: slots[0]!), B.load(from: slots[1]!)) })
    }

    /// An action with three parameters.
    public static func action<A: PluginArgument, B: PluginArgument, C: PluginArgument>(
        _ name: String, _ a: String, _ b: String, _ c: String, _ make: @escaping @Sendable (A, B, C) -> Action
    ) -> Self {
        Self(name: name, parameters: [(a, A.pluginType), (b, B.pluginType), (c, C.pluginType)],
             decode: { slots in make(A.load(from: slots[0]!), B.load(from: slots[1]!), C.load(from: slots[2]!)) })
    }

    /// An action with four parameters.
    public static func action<A: PluginArgument, B: PluginArgument, C: PluginArgument, D: PluginArgument>(
        _ name: String, _ a: String, _ b: String, _ c: String, _ d: String, _ make: @escaping @Sendable (A, B, C, D) -> Action
    ) -> Self {
        Self(name: name, parameters: [(a, A.pluginType), (b, B.pluginType), (c, C.pluginType), (d, D.pluginType)],
             decode: { slots in make(A.load(from: slots[0]!), B.load(from: slots[1]!), C.load(from: slots[2]!), D.load(from: slots[3]!)) })
    }
}
