/// Why a ``PluginHost`` refused a request about its set of plugins.
public enum PluginHostError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No loaded plugin has that name.
    case unknownPlugin(String, known: [String])
    /// The plugin directory cannot be read: its path, and why (`no such directory`, `not a
    /// directory`, the system's reason).
    case directoryUnreadable(String, reason: String)
    /// An instance's address whose key breaks ``InstanceKeyRule``: the address, and what is wrong.
    case badInstanceKey(String, problem: String)
    /// The plugin has as many instances as its limit allows.
    case tooManyInstances(plugin: String, limit: Int)
    /// An instance could not be started, or brought back from the journal: its address, and why.
    case instanceNotStarted(String, reason: String)

    /// The error, as one line.
    public var description: String {
        switch self {
        case let .unknownPlugin(name, known):
            return "no plugin named '\(name)' is loaded (loaded: \(known.isEmpty ? "none" : known.joined(separator: ", ")))"
        case let .directoryUnreadable(path, reason):
            return "\(path): cannot read the plugin directory: \(reason)"
        case let .badInstanceKey(address, problem):
            return "'\(address)' is not an instance of a plugin: \(problem)"
        case let .tooManyInstances(plugin, limit):
            return "plugin \(plugin) already has \(limit) instances, its limit (--max-instances-per-plugin)"
        case let .instanceNotStarted(address, reason):
            return "\(address) could not be started: \(reason)"
        }
    }
}
