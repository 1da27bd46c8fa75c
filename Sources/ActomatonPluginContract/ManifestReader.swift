import ActomatonPluginABI

/// Reads a plugin's C manifest into a ``PluginManifest``, checking every rule of the contract
/// before trusting a value: a manifest comes from code the host does not control.
///
/// The ABI version is checked first and alone (``checkABIVersion(_:)``): when it differs,
/// the layout of everything after it may differ too, so nothing else is read.
public enum ManifestReader {
    /// The version of the contract this host speaks.
    public static let supportedABIVersion = UInt32(ACTOMATON_PLUGIN_ABI_VERSION)

    /// Reads only the manifest's first field, the ABI version, and checks it.
    public static func checkABIVersion(_ manifest: UnsafeRawPointer) throws(PluginManifestError) {
        let found = manifest.load(as: UInt32.self)
        guard found == supportedABIVersion else {
            throw .unsupportedABIVersion(found: found, supported: supportedABIVersion)
        }
    }

    /// Reads and validates the whole manifest; the ABI version must already be checked.
    public static func read(_ pointer: UnsafePointer<actomaton_manifest>) throws(PluginManifestError) -> PluginManifest {
        let raw = pointer.pointee
        let name = try readName(raw.name, what: "the plugin name")
        guard let version = try readText(raw.version, maxLength: 64, what: "the plugin version") else {
            throw .invalid("the plugin version is missing")
        }
        let summary = try readText(raw.summary, maxLength: 200, what: "the summary")

        guard raw.create != nil else { throw .invalid("the function `create` is missing") }
        guard raw.destroy != nil else { throw .invalid("the function `destroy` is missing") }
        guard raw.snapshot != nil else { throw .invalid("the function `snapshot` is missing") }
        guard raw.restore != nil else { throw .invalid("the function `restore` is missing") }
        guard raw.describe != nil else { throw .invalid("the function `describe` is missing") }

        let count = Int(raw.action_count)
        guard count >= 1 else { throw .invalid("the plugin declares no actions") }
        guard count <= Int(ACTOMATON_MAX_ACTIONS) else {
            throw .invalid("the plugin declares \(count) actions, more than the limit of \(ACTOMATON_MAX_ACTIONS)")
        }
        guard let actions = raw.actions else { throw .invalid("action_count is \(count) but actions is NULL") }

        var result: [PluginManifest.Action] = []
        var seen: Set<String> = []
        for index in 0..<count {
            let action = actions[index]
            let actionName = try readName(action.name, what: "the name of action \(index + 1)")
            guard seen.insert(actionName).inserted else {
                throw .invalid("action '\(actionName)' is declared twice")
            }
            guard action.entry != nil else { throw .invalid("action '\(actionName)' has no entry point") }
            let parameterCount = Int(action.parameter_count)
            guard parameterCount <= Int(ACTOMATON_MAX_PARAMETERS) else {
                throw .invalid("action '\(actionName)' has \(parameterCount) parameters, more than the limit of \(ACTOMATON_MAX_PARAMETERS)")
            }
            var parameters: [PluginManifest.Parameter] = []
            if parameterCount > 0 {
                guard let raw = action.parameters else {
                    throw .invalid("action '\(actionName)' has parameter_count \(parameterCount) but parameters is NULL")
                }
                var parameterNames: Set<String> = []
                for position in 0..<parameterCount {
                    let parameter = raw[position]
                    let parameterName = try readName(parameter.name, what: "parameter \(position + 1) of action '\(actionName)'")
                    guard parameterNames.insert(parameterName).inserted else {
                        throw .invalid("action '\(actionName)' has two parameters named '\(parameterName)'")
                    }
                    guard let type = PluginValueType(rawValue: parameter.type) else {
                        throw .invalid("parameter '\(parameterName)' of action '\(actionName)' has unknown type \(parameter.type) (known: \(PluginValueType.allCases.map { "\($0.rawValue) = \($0)" }.joined(separator: ", ")))")
                    }
                    parameters.append(.init(name: parameterName, type: type))
                }
            }
            result.append(.init(name: actionName, parameters: parameters))
        }
        return PluginManifest(abiVersion: raw.abi_version, name: name, version: version, summary: summary, actions: result)
    }

    /// A name: 1...64 bytes of `[A-Za-z0-9_]`, not starting with a digit.
    private static func readName(_ pointer: UnsafePointer<CChar>?, what: String) throws(PluginManifestError) -> String {
        guard let text = try readText(pointer, maxLength: Int(ACTOMATON_MAX_NAME_LENGTH), what: what) else {
            throw .invalid("\(what) is missing")
        }
        guard isValidName(text) else {
            throw .invalid("\(what) \(PluginValue.quoted(text)) is not a valid name (letters, digits and _, not starting with a digit)")
        }
        return text
    }

    /// Whether `text` is a valid plugin, action or parameter name.
    public static func isValidName(_ text: String) -> Bool {
        guard let first = text.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return text.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }

    /// A NUL-terminated UTF-8 string of at most `maxLength` bytes, or `nil` for `NULL`;
    /// never reads more than `maxLength + 1` bytes.
    private static func readText(_ pointer: UnsafePointer<CChar>?, maxLength: Int, what: String) throws(PluginManifestError) -> String? {
        do {
            return try CString.read(pointer, limit: maxLength)
        } catch .tooLong {
            throw .invalid("\(what) is longer than \(maxLength) bytes")
        } catch {
            throw .invalid("\(what) is not valid UTF-8")
        }
    }
}
