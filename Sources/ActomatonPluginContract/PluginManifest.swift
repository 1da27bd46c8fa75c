/// What a plugin is and does, copied out of its C manifest once the host has validated it.
///
/// `actomaton-host inspect` prints it; `ActomatonHost`'s `Plugin.action(_:_:)` checks actions against it.
public struct PluginManifest: Sendable, Hashable {
    /// One parameter of an action.
    public struct Parameter: Sendable, Hashable {
        /// The parameter's name, for messages and JSON lines with named arguments.
        public var name: String
        /// The C type the action's entry point takes.
        public var type: PluginValueType

        /// Creates a parameter.
        public init(name: String, type: PluginValueType) {
            self.name = name
            self.type = type
        }
    }

    /// One action of the plugin's vocabulary.
    public struct Action: Sendable, Hashable, CustomStringConvertible {
        /// The action's name, unique within the manifest.
        public var name: String
        /// Its parameters, in call order.
        public var parameters: [Parameter]

        /// Creates an action.
        public init(name: String, parameters: [Parameter]) {
            self.name = name
            self.parameters = parameters
        }

        /// The signature as `inspect` prints it: `place(row: int32, column: int32)`.
        public var description: String {
            "\(name)(\(parameters.map { "\($0.name): \($0.type)" }.joined(separator: ", ")))"
        }
    }

    /// The ABI version the plugin was built against.
    public var abiVersion: UInt32
    /// The plugin's name; `serve` addresses the plugin by it.
    public var name: String
    /// The plugin's version, free text.
    public var version: String
    /// One line saying what the plugin does, if it says.
    public var summary: String?
    /// The action vocabulary, in manifest order.
    public var actions: [Action]

    /// Creates a manifest.
    public init(abiVersion: UInt32, name: String, version: String, summary: String?, actions: [Action]) {
        self.abiVersion = abiVersion
        self.name = name
        self.version = version
        self.summary = summary
        self.actions = actions
    }

    /// The manifest as `actomaton-host inspect` prints it.
    public var text: String { lines.joined(separator: "\n") }

    /// The lines of ``text``, each to be printed (and escaped) on its own: a newline inside
    /// the plugin's own text stays inside its line.
    public var lines: [String] {
        var lines = ["plugin \(name) \(version) (ABI \(abiVersion))"]
        if let summary { lines.append("  \(summary)") }
        lines.append("actions:")
        for action in actions { lines.append("  \(action)") }
        return lines
    }
}
