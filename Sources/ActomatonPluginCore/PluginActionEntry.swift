/// One action of a plugin's vocabulary: its name, its typed parameters, and the action its
/// arguments make. The one way to declare a vocabulary, for both kits.
///
/// A plugin declares its vocabulary once, as an array of entries, in a file that imports only
/// `ActomatonCore` and this module; the very same value is then handed to the `.so` export
/// (`PluginExport(…, actions:)`, in `ActomatonPluginKit`) and to the `.wasm` export
/// (`WasmPlugin(…, actions:)`, in the wasm kit):
///
/// ```swift
/// enum LampAction: Sendable {
///     case toggle
///     case dim(level: UInt8)
///     case label(text: String, size: Int32)
/// }
///
/// let lampVocabulary: [PluginActionEntry<LampAction>] = [
///     .action("toggle") { .toggle },
///     .action("dim", "level") { (level: UInt8) in .dim(level: level) },
///     .action("label", "text", "size") { (text: String, size: Int32) in .label(text: text, size: size) },
/// ]
/// ```
///
/// The parameter types come from the closure's argument types (see ``PluginParameter``): the
/// `action(…)` builders take up to four parameters. An action with more is declared with
/// ``init(name:parameters:make:)``, up to ``PluginVocabularyLimits/maxParameters`` (the contract's
/// `ACTOMATON_MAX_PARAMETERS`); both kits refuse a vocabulary with an entry past it, and say
/// which (``pluginVocabularyProblem(_:)``).
public struct PluginActionEntry<Action> {
    /// The action's name in the vocabulary.
    public let name: String
    /// Its parameters, in order.
    public let parameters: [(name: String, type: PluginValueType)]
    /// The action `arguments` make, or `nil` when they do not fit the parameters.
    public let make: ([PluginValue]) -> Action?

    /// An entry of any number of parameters; prefer the `action(…)` builders, which type the
    /// parameters from the closure.
    ///
    /// - Parameters:
    ///   - name: The action's name in the vocabulary.
    ///   - parameters: Its parameters' names and types, in order; at most
    ///     ``PluginVocabularyLimits/maxParameters``.
    ///   - make: The action the arguments make (one value per parameter, each of its type), or
    ///     `nil` when they do not fit.
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

    /// An action with three parameters, named `a`, `b` and `c`.
    public static func action<A: PluginParameter, B: PluginParameter, C: PluginParameter>(
        _ name: String, _ a: String, _ b: String, _ c: String, _ make: @escaping (A, B, C) -> Action
    ) -> PluginActionEntry {
        PluginActionEntry(name: name, parameters: [(a, A.parameterType), (b, B.parameterType), (c, C.parameterType)], make: { values in
            guard values.count == 3, let first = A(pluginValue: values[0]), let second = B(pluginValue: values[1]),
                  let third = C(pluginValue: values[2]) else { return nil }
            return make(first, second, third)
        })
    }

    /// An action with four parameters, named `a`, `b`, `c` and `d`.
    public static func action<A: PluginParameter, B: PluginParameter, C: PluginParameter, D: PluginParameter>(
        _ name: String, _ a: String, _ b: String, _ c: String, _ d: String, _ make: @escaping (A, B, C, D) -> Action
    ) -> PluginActionEntry {
        PluginActionEntry(
            name: name, parameters: [(a, A.parameterType), (b, B.parameterType), (c, C.parameterType), (d, D.parameterType)],
            make: { values in
                guard values.count == 4, let first = A(pluginValue: values[0]), let second = B(pluginValue: values[1]),
                      let third = C(pluginValue: values[2]), let fourth = D(pluginValue: values[3]) else { return nil }
                return make(first, second, third, fourth)
            })
    }
}

/// The limits of the plugin contract that a vocabulary meets, the same numbers as the C
/// header's `#define`s (`actomaton_plugin.h`, and the wasm contract's
/// `actomaton_wasm_plugin.h`); a test holds them equal.
public enum PluginVocabularyLimits {
    /// The most parameters one action has: `ACTOMATON_MAX_PARAMETERS`.
    public static var maxParameters: Int { 16 }
    /// The most actions one vocabulary has: `ACTOMATON_MAX_ACTIONS`.
    public static var maxActions: Int { 256 }
}

/// Checks a vocabulary against the contract's limits, as both kits do before they export it.
///
/// - Parameter vocabulary: The plugin's entries, in order.
/// - Returns: `nil` when it is within ``PluginVocabularyLimits``, or one line naming what is not.
public func pluginVocabularyProblem<Action>(_ vocabulary: [PluginActionEntry<Action>]) -> String? {
    guard !vocabulary.isEmpty else { return "the vocabulary has no actions" }
    guard vocabulary.count <= PluginVocabularyLimits.maxActions else {
        return "the vocabulary has \(vocabulary.count) actions; at most \(PluginVocabularyLimits.maxActions)"
    }
    for entry in vocabulary where entry.parameters.count > PluginVocabularyLimits.maxParameters {
        return "the vocabulary entry '\(entry.name)' has \(entry.parameters.count) parameters; at most \(PluginVocabularyLimits.maxParameters)"
    }
    return nil
}

extension PluginActionEntry: @unchecked Sendable where Action: Sendable {}

/// Checks that a plugin's request mapping sends each entry's example action back to that
/// entry; see ``pluginMappingProblem(entries:action:requests:)``.
///
/// - Parameters:
///   - vocabulary: The plugin's entries, in order.
///   - requests: The plugin's mapping from an action to a call.
/// - Returns: `nil` when every entry maps back, or one line saying which does not.
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
