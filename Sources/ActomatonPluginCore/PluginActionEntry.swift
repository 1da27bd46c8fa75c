/// One action of a plugin's vocabulary, declared once for both kits: its name, its typed
/// parameters, and the action its arguments make.
///
/// A plugin's shared source declares its vocabulary with these, and both the `.so` export
/// (`PluginExport`) and the `.wasm` export (`WasmPlugin`) take it:
///
/// ```swift
/// static let vocabulary: [PluginActionEntry<CounterAction>] = [
///     .action("add", "amount") { (amount: Int64) in .add(amount) },
///     .action("reset") { .reset },
/// ]
/// ```
///
/// The parameter types come from the closure's argument types (see ``PluginParameter``).
public struct PluginActionEntry<Action> {
    /// The action's name in the vocabulary.
    public let name: String
    /// Its parameters, in order.
    public let parameters: [(name: String, type: PluginValueType)]
    /// The action `arguments` make, or `nil` when they do not fit the parameters.
    public let make: ([PluginValue]) -> Action?

    /// An entry; prefer the `action(…)` builders, which type the parameters from the closure.
    public init(name: String, parameters: [(name: String, type: PluginValueType)], make: @escaping ([PluginValue]) -> Action?) {
        self.name = name
        self.parameters = parameters
        self.make = make
    }

    /// The action made from example arguments (`0`, `false`, `""`), for checking a mapping.
    public var example: Action? {
        make(parameters.map { $0.type.exampleValue })
    }

    /// An action without parameters.
    public static func action(_ name: String, _ make: @escaping () -> Action) -> PluginActionEntry {
        PluginActionEntry(name: name, parameters: [], make: { values in values.isEmpty ? make() : nil })
    }

    /// An action with one parameter, named `a`.
    public static func action<A: PluginParameter>(_ name: String, _ a: String, _ make: @escaping (A) -> Action) -> PluginActionEntry {
        PluginActionEntry(name: name, parameters: [(a, A.parameterType)], make: { values in
            guard values.count == 1, let first = A(pluginValue: values[0]) else { return nil }
            return make(first)
        })
    }

    /// An action with two parameters, named `a` and `b`.
    public static func action<A: PluginParameter, B: PluginParameter>(
        _ name: String, _ a: String, _ b: String, _ make: @escaping (A, B) -> Action
    ) -> PluginActionEntry {
        PluginActionEntry(name: name, parameters: [(a, A.parameterType), (b, B.parameterType)], make: { values in
            guard values.count == 2, let first = A(pluginValue: values[0]), let second = B(pluginValue: values[1]) else { return nil }
            return make(first, second)
        })
    }

    /// An action with three parameters.
    public static func action<A: PluginParameter, B: PluginParameter, C: PluginParameter>(
        _ name: String, _ a: String, _ b: String, _ c: String, _ make: @escaping (A, B, C) -> Action
    ) -> PluginActionEntry {
        PluginActionEntry(name: name, parameters: [(a, A.parameterType), (b, B.parameterType), (c, C.parameterType)], make: { values in
            guard values.count == 3, let first = A(pluginValue: values[0]), let second = B(pluginValue: values[1]),
                  let third = C(pluginValue: values[2]) else { return nil }
            return make(first, second, third)
        })
    }
}

extension PluginActionEntry: @unchecked Sendable where Action: Sendable {}

/// Checks that a plugin's request mapping sends each entry's example action back to that
/// entry; see ``pluginMappingProblem(entries:action:requests:)``.
public func pluginMappingProblem<Action>(_ vocabulary: [PluginActionEntry<Action>], requests: (Action) -> PluginCall) -> String? {
    for entry in vocabulary where entry.example == nil {
        return "the vocabulary entry '\(entry.name)' makes no action from its example arguments"
    }
    return pluginMappingProblem(
        entries: vocabulary.map { entry in (name: entry.name, parameters: entry.parameters.map { $0.type }) },
        action: { vocabulary[$0].example! },
        requests: requests
    )
}
