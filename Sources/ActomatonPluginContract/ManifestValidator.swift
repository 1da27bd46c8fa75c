import ActomatonPluginABI

/// The contract's limits on a manifest, each a `#define` of `actomaton_plugin.h` and nothing else.
public enum ManifestLimits {
    /// The most bytes in a plugin, action or parameter name: `ACTOMATON_MAX_NAME_LENGTH`.
    public static let maxNameBytes = Int(ACTOMATON_MAX_NAME_LENGTH)
    /// The most bytes in the plugin's version: `ACTOMATON_MAX_VERSION_LENGTH`.
    public static let maxVersionBytes = Int(ACTOMATON_MAX_VERSION_LENGTH)
    /// The most bytes in the plugin's summary: `ACTOMATON_MAX_SUMMARY_LENGTH`.
    public static let maxSummaryBytes = Int(ACTOMATON_MAX_SUMMARY_LENGTH)
    /// The most actions in one manifest: `ACTOMATON_MAX_ACTIONS`.
    public static let maxActions = Int(ACTOMATON_MAX_ACTIONS)
    /// The most parameters of one action: `ACTOMATON_MAX_PARAMETERS`.
    public static let maxParameters = Int(ACTOMATON_MAX_PARAMETERS)
    /// The most bytes of the diagram (since ABI version 2): `ACTOMATON_MAX_DIAGRAM_SIZE`.
    public static let maxDiagramBytes = Int(ACTOMATON_MAX_DIAGRAM_SIZE)
}

/// One field of a manifest, as ``ManifestValidator`` asks a ``ManifestSource`` for it.
/// Indices count from 0.
public enum ManifestField: Sendable, Hashable {
    /// The plugin's name.
    case name
    /// The plugin's version.
    case version
    /// The plugin's summary (it may be absent).
    case summary
    /// How many actions the manifest declares.
    case actionCount
    /// The name of an action.
    case actionName(action: Int)
    /// How many parameters an action declares.
    case parameterCount(action: Int)
    /// The name of one parameter of an action.
    case parameterName(action: Int, parameter: Int)
    /// The type code (`ACTOMATON_TYPE_*`) of one parameter of an action.
    case parameterType(action: Int, parameter: Int)
    /// The plugin's state diagram, Graphviz DOT (since ABI version 2; it may be absent).
    case diagram
    /// Whether the plugin names the active nodes of a state: 1 when it has an `active`
    /// function, 0 when not (since ABI version 2).
    case activeFunction
}

/// A text field as a ``ManifestSource`` found it, before ``ManifestValidator`` judges it.
public enum ManifestText: Sendable, Hashable {
    /// There is none (`NULL`, `{0, 0}`, a flag saying none).
    case absent
    /// Valid UTF-8 of at most the limit's bytes.
    case text(String)
    /// More bytes than the limit (the source read no more than the limit and one).
    case tooLong
    /// Bytes that are not UTF-8.
    case invalidUTF8
}

/// Where a manifest's raw fields come from: a C struct in memory, a WebAssembly module's
/// memory, a worker's frame. ``ManifestValidator`` asks for the fields in manifest order and
/// judges each one; a source only fetches them, within the limit it is given.
///
/// The hooks (``checkOwnRules()``, ``willReadActions(count:)``,
/// ``willReadParameters(ofAction:named:count:)``) check what belongs to one kind of manifest
/// alone, such as function pointers or table bounds; they do nothing by default.
public protocol ManifestSource {
    /// The text of `field`, reading no more than `limit` bytes and one; `what` names the
    /// field for a message of the source's own ("the plugin name").
    mutating func text(_ field: ManifestField, limit: Int, what: String) throws(PluginManifestError) -> ManifestText
    /// The number in `field` (a count or a type code); `what` names it for a message.
    mutating func number(_ field: ManifestField, what: String) throws(PluginManifestError) -> UInt32
    /// Checks the source's own rules; called after the summary, before the actions.
    mutating func checkOwnRules() throws(PluginManifestError)
    /// Called before the first action is read, `count` already within 1...``ManifestLimits/maxActions``.
    mutating func willReadActions(count: Int) throws(PluginManifestError)
    /// Called before the parameters of action `index` are read, `count` already within
    /// 0...``ManifestLimits/maxParameters``.
    mutating func willReadParameters(ofAction index: Int, named name: String, count: Int) throws(PluginManifestError)
}

extension ManifestSource {
    /// Nothing to check.
    public mutating func checkOwnRules() throws(PluginManifestError) {}
    /// Nothing to check.
    public mutating func willReadActions(count: Int) throws(PluginManifestError) {}
    /// Nothing to check.
    public mutating func willReadParameters(ofAction index: Int, named name: String, count: Int) throws(PluginManifestError) {}
}

/// The one place the contract's manifest rules are checked, whichever reader found the fields:
/// names (1...``ManifestLimits/maxNameBytes`` bytes of `[A-Za-z0-9_]`, not a digit first, unique
/// per manifest and per action), the version and the summary within their limits, 1...
/// ``ManifestLimits/maxActions`` actions of at most ``ManifestLimits/maxParameters`` parameters,
/// and known type codes; from ABI version 2, the diagram within ``ManifestLimits/maxDiagramBytes``
/// and whether the plugin names active nodes. The ABI version is the reader's to check first:
/// it decides the layout, and no field past those of that version is asked for.
public enum ManifestValidator {
    /// Reads every field of `source` in manifest order and returns the manifest, or throws the
    /// first rule it breaks.
    public static func read<Source: ManifestSource>(_ source: inout Source, abiVersion: UInt32) throws(PluginManifestError) -> PluginManifest {
        let name = try self.name(.name, from: &source, what: "the plugin name")
        guard let version = try text(.version, from: &source, limit: ManifestLimits.maxVersionBytes, what: "the plugin version") else {
            throw .invalid("the plugin version is missing")
        }
        let summary = try text(.summary, from: &source, limit: ManifestLimits.maxSummaryBytes, what: "the summary")
        try source.checkOwnRules()

        let count = Int(try source.number(.actionCount, what: "the action count"))
        guard count >= 1 else { throw .invalid("the plugin declares no actions") }
        guard count <= ManifestLimits.maxActions else {
            throw .invalid("the plugin declares \(count) actions, more than the limit of \(ManifestLimits.maxActions)")
        }
        try source.willReadActions(count: count)

        var actions: [PluginManifest.Action] = []
        actions.reserveCapacity(count)
        var actionNames: Set<String> = []
        for index in 0..<count {
            let actionName = try self.name(.actionName(action: index), from: &source, what: "the name of action \(index + 1)")
            guard actionNames.insert(actionName).inserted else { throw .invalid("action '\(actionName)' is declared twice") }
            let parameterCount = Int(try source.number(.parameterCount(action: index), what: "the parameter count of action '\(actionName)'"))
            guard parameterCount <= ManifestLimits.maxParameters else {
                throw .invalid("action '\(actionName)' has \(parameterCount) parameters, more than the limit of \(ManifestLimits.maxParameters)")
            }
            try source.willReadParameters(ofAction: index, named: actionName, count: parameterCount)
            var parameters: [PluginManifest.Parameter] = []
            var parameterNames: Set<String> = []
            for position in 0..<parameterCount {
                let parameterName = try self.name(.parameterName(action: index, parameter: position), from: &source,
                                                  what: "parameter \(position + 1) of action '\(actionName)'")
                guard parameterNames.insert(parameterName).inserted else {
                    throw .invalid("action '\(actionName)' has two parameters named '\(parameterName)'")
                }
                let code = try source.number(.parameterType(action: index, parameter: position),
                                             what: "the type of parameter '\(parameterName)' of action '\(actionName)'")
                parameters.append(.init(name: parameterName, type: try type(code, of: parameterName, in: actionName)))
            }
            actions.append(.init(name: actionName, parameters: parameters))
        }
        var diagram: String?
        var namesActiveNodes = false
        if abiVersion >= 2 {
            diagram = try text(.diagram, from: &source, limit: ManifestLimits.maxDiagramBytes, what: "the diagram")
            if let text = diagram, text.utf8.contains(0) { throw .invalid("the diagram contains a NUL byte") }
            if diagram?.isEmpty == true { diagram = nil }
            let flag = try source.number(.activeFunction, what: "the active-nodes flag")
            guard flag <= 1 else { throw .invalid("the active-nodes flag is \(flag), not 0 or 1") }
            namesActiveNodes = flag == 1
        }
        return PluginManifest(abiVersion: abiVersion, name: name, version: version, summary: summary, actions: actions,
                              diagram: diagram, namesActiveNodes: namesActiveNodes)
    }

    /// Whether `text` is a valid plugin, action or parameter name: 1...``ManifestLimits/maxNameBytes``
    /// bytes of `[A-Za-z0-9_]`, not starting with a digit.
    public static func isValidName(_ text: String) -> Bool {
        guard text.utf8.count <= ManifestLimits.maxNameBytes,
              let first = text.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return text.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }

    /// The type a parameter's code names (`ACTOMATON_TYPE_*`), or the error naming the code and
    /// the known ones: the one mapping of type codes every reader uses.
    public static func type(_ code: UInt32, of parameter: String, in action: String) throws(PluginManifestError) -> PluginValueType {
        guard let type = PluginValueType(abiType: code) else {
            let known = PluginValueType.allCases.map { "\($0.abiType) = \($0)" }.joined(separator: ", ")
            throw .invalid("parameter '\(parameter)' of action '\(action)' has unknown type \(code) (known: \(known))")
        }
        return type
    }

    private static func name<Source: ManifestSource>(_ field: ManifestField, from source: inout Source, what: String) throws(PluginManifestError) -> String {
        guard let text = try text(field, from: &source, limit: ManifestLimits.maxNameBytes, what: what) else {
            throw .invalid("\(what) is missing")
        }
        guard isValidName(text) else {
            throw .invalid("\(what) \(PluginValue.quoted(text)) is not a valid name (letters, digits and _, not starting with a digit)")
        }
        return text
    }

    private static func text<Source: ManifestSource>(_ field: ManifestField, from source: inout Source, limit: Int,
                                                     what: String) throws(PluginManifestError) -> String? {
        switch try source.text(field, limit: limit, what: what) {
        case .absent: return nil
        case let .text(text) where text.utf8.count <= limit: return text
        case .text, .tooLong: throw .invalid("\(what) is longer than \(limit) bytes")
        case .invalidUTF8: throw .invalid("\(what) is not valid UTF-8")
        }
    }
}
