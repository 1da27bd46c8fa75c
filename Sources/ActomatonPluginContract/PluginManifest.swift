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
    /// The plugin's state diagram as Graphviz DOT text (since ABI version 2), at most
    /// ``ManifestLimits/maxDiagramBytes``; `nil` when it has none. Its node IDs are the names
    /// the plugin's active nodes use (``namesActiveNodes``).
    public var diagram: String?
    /// Whether the plugin names the diagram's nodes active in a state (it has an `active`
    /// function; since ABI version 2). When it does, each transition of a machine that
    /// describes states carries them (`PluginTransition.activeNodes` in `ActomatonHost`).
    public var namesActiveNodes: Bool

    /// Creates a manifest.
    ///
    /// - Parameters:
    ///   - abiVersion: The ABI version the plugin was built against.
    ///   - name: The plugin's name.
    ///   - version: Its version, free text.
    ///   - summary: One line saying what it does.
    ///   - actions: The action vocabulary.
    ///   - diagram: Its state diagram, Graphviz DOT (ABI version 2).
    ///   - namesActiveNodes: Whether it names the active nodes of a state (ABI version 2).
    public init(abiVersion: UInt32, name: String, version: String, summary: String?, actions: [Action],
                diagram: String? = nil, namesActiveNodes: Bool = false) {
        self.abiVersion = abiVersion
        self.name = name
        self.version = version
        self.summary = summary
        self.actions = actions
        self.diagram = diagram
        self.namesActiveNodes = namesActiveNodes
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
        if let diagram {
            let nodes = DiagramText.nodeCount(of: diagram)
            lines.append("diagram: \(nodes) \(nodes == 1 ? "node" : "nodes") (DOT, \(DiagramText.grouped(diagram.utf8.count)) bytes)")
        }
        if namesActiveNodes { lines.append("active nodes: named by the plugin after each transition") }
        return lines
    }
}
