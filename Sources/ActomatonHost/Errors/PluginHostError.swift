/// Why a ``PluginHost`` refused a request about its set of plugins.
public enum PluginHostError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No loaded plugin has that name.
    case unknownPlugin(String, known: [String])
    /// The plugin directory is not a directory.
    case notADirectory(String)

    /// The error, as one line.
    public var description: String {
        switch self {
        case let .unknownPlugin(name, known):
            return "no plugin named '\(name)' is loaded (loaded: \(known.isEmpty ? "none" : known.joined(separator: ", ")))"
        case let .notADirectory(path):
            return "\(path): no such directory"
        }
    }
}
