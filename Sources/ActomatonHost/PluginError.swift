/// Why the host refused a plugin file, an action or an input line: what went wrong, and where.
///
/// Its description is the one line the CLI prints after `error: `, written for someone who has
/// never seen the project, e.g.
/// `/srv/plugins/x.so: plugin ABI version 3 is not supported (this host speaks 1)`.
/// Whatever the error, nothing changed: no plugin state, no other plugin.
public struct PluginError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where it went wrong: a plugin file's path, `script.txt:3`, or `plugin counter`.
    public var location: String
    /// What went wrong.
    public var reason: Reason

    /// Creates an error.
    public init(_ reason: Reason, at location: String) {
        self.location = location
        self.reason = reason
    }

    /// The same error, reported at `location` instead (a script line rather than a plugin).
    public func at(_ location: String) -> PluginError {
        PluginError(reason, at: location)
    }

    /// `location: reason`.
    public var description: String { "\(location): \(reason)" }

    /// What went wrong.
    public enum Reason: Error, Sendable, Hashable, CustomStringConvertible {
        /// The path names no file.
        case fileNotFound
        /// The path names something other than a regular file.
        case notARegularFile
        /// The file could not be read; the system's message.
        case unreadable(String)
        /// The file is writable by users other than its owner; refused unless allowed.
        case writableByOthers(mode: UInt32)
        /// `dlopen` refused the file; its message.
        case notASharedLibrary(String)
        /// The library does not export the entry symbol.
        case missingEntrySymbol(String)
        /// The entry symbol returned `NULL`.
        case noManifest
        /// The manifest was built for another ABI version.
        case unsupportedABIVersion(found: UInt32, supported: UInt32)
        /// The manifest breaks a rule of the contract.
        case invalidManifest(String)
        /// libffi could not prepare a call or a closure.
        case libffi(String)
        /// The plugin's `create` returned `NULL`.
        case stateCreationFailed
        /// No action of that name in the plugin's vocabulary.
        case unknownAction(String, plugin: String, known: [String])
        /// The action was given the wrong number of arguments.
        case wrongArgumentCount(action: String, signature: String, expected: Int, got: Int)
        /// An argument has the wrong type for its parameter.
        case wrongArgumentType(action: String, index: Int, parameter: String, expected: PluginValueType, got: String)
        /// An integer argument does not fit its parameter's type.
        case integerOutOfRange(action: String, index: Int, parameter: String, type: PluginValueType, value: String)
        /// The plugin refused the action; its message. The state is unchanged.
        case transitionFailed(action: String, message: String)
        /// The plugin refused a snapshot in `restore`; its message. The state is unchanged.
        case restoreFailed(String)
        /// An input line could not be read.
        case syntax(String)
        /// No loaded plugin has that name.
        case unknownPlugin(String, known: [String])
        /// Two plugin files declare the same name.
        case duplicatePlugin(String, otherPath: String)
        /// The path names no directory.
        case notADirectory

        /// The reason, as one line.
        public var description: String {
            switch self {
            case .fileNotFound:
                return "no such file"
            case .notARegularFile:
                return "not a regular file"
            case let .unreadable(message):
                return "cannot read the file: \(message)"
            case let .writableByOthers(mode):
                return "refusing to load a plugin file that other users can write (mode \(String(mode & 0o7777, radix: 8))); "
                    + "run `chmod go-w` on it, or pass --allow-writable to load it anyway"
            case let .notASharedLibrary(message):
                return "not a shared library this host can load (\(message))"
            case let .missingEntrySymbol(symbol):
                return "no entry symbol `\(symbol)`: this shared library is not an Actomaton plugin"
            case .noManifest:
                return "the plugin's entry symbol returned no manifest"
            case let .unsupportedABIVersion(found, supported):
                return "plugin ABI version \(found) is not supported (this host speaks \(supported))"
            case let .invalidManifest(message):
                return "invalid manifest: \(message)"
            case let .libffi(message):
                return "libffi: \(message)"
            case .stateCreationFailed:
                return "the plugin could not create its state (create returned NULL)"
            case let .unknownAction(name, plugin, known):
                return "unknown action '\(name)' for plugin '\(plugin)' (its actions: \(known.joined(separator: ", ")))"
            case let .wrongArgumentCount(action, signature, expected, got):
                return "'\(action)' takes \(expected) argument\(expected == 1 ? "" : "s"), got \(got): \(signature)"
            case let .wrongArgumentType(action, index, parameter, expected, got):
                return "argument \(index) (\(parameter)) of '\(action)' must be \(article(expected)) \(expected), got \(got)"
            case let .integerOutOfRange(action, index, parameter, type, value):
                return "argument \(index) (\(parameter)) of '\(action)' is \(value), out of range for \(type) (\(range(type)))"
            case let .transitionFailed(action, message):
                return "'\(action)' failed: \(message) (state unchanged)"
            case let .restoreFailed(message):
                return "the plugin refused the snapshot: \(message) (state unchanged)"
            case let .syntax(message):
                return message
            case let .unknownPlugin(name, known):
                return "no plugin named '\(name)' is loaded (loaded: \(known.isEmpty ? "none" : known.joined(separator: ", ")))"
            case let .duplicatePlugin(name, otherPath):
                return "a plugin named '\(name)' is already loaded from \(otherPath)"
            case .notADirectory:
                return "no such directory"
            }
        }
    }
}

private func article(_ type: PluginValueType) -> String {
    switch type {
    case .int8, .int16, .int32, .int64: "an"
    default: "a"
    }
}

private func range(_ type: PluginValueType) -> String {
    if let range = type.signedRange { return "\(range.lowerBound)...\(range.upperBound)" }
    if let max = type.unsignedMax { return "0...\(max)" }
    return "-"
}
