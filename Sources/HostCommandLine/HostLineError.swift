import ActomatonHost

/// Why one input line of `actomaton-host run` or `serve` failed: the line could not be read,
/// it named no loaded plugin, or the plugin's machine refused the action.
///
/// Its description is the one line the CLI prints after `error: `, located at the line:
/// `script.txt:3: unknown action 'jump' for plugin 'counter' (its actions: ...)`.
public struct HostLineError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where: `script.txt:3`, `<stdin>:12`.
    public var location: String
    /// What failed.
    public var problem: Problem

    /// Creates an error.
    public init(_ problem: Problem, at location: String) {
        self.location = location
        self.problem = problem
    }

    /// `location: problem`.
    public var description: String { "\(location): \(problem)" }

    /// What failed on the line.
    public enum Problem: Error, Sendable, Hashable, CustomStringConvertible {
        /// The line could not be read.
        case input(InputLineError)
        /// The line names no loaded plugin.
        case host(PluginHostError)
        /// The plugin's machine refused the action, or the state could not be described.
        case call(PluginCallError)

        /// The problem, as one line.
        public var description: String {
            switch self {
            case let .input(error): error.description
            case let .host(error): error.description
            case let .call(error): error.reason.description
            }
        }
    }
}
