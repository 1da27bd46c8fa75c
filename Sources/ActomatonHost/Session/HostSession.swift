/// Runs input lines against a ``PluginHost``: what `actomaton-host run` and `serve` do with
/// each line of a script or of standard input.
///
/// Each action line is checked against the addressed plugin's vocabulary and sent to its
/// machine; transitions are printed by the host's observer (see ``format(_:)``). A line that
/// cannot be run throws a ``PluginError`` located at the line (`script.txt:3`), and changes
/// nothing.
public struct HostSession: Sendable {
    /// The plugins.
    public let host: PluginHost
    /// The plugin action lines go to when they do not name one (`run`), or `nil` when every
    /// line names its plugin (`serve`).
    public let defaultPlugin: String?
    private let clock: any Clock<Duration>
    private let output: @Sendable (String) -> Void

    /// Creates a session.
    ///
    /// - Parameters:
    ///   - defaultPlugin: Under `run`, the one plugin's name: lines then do not name it.
    ///   - clock: What `:sleep` sleeps on: the machines' clock.
    ///   - output: Where `:state` prints.
    public init(host: PluginHost, defaultPlugin: String?, clock: some Clock<Duration>, output: @escaping @Sendable (String) -> Void) {
        self.host = host
        self.defaultPlugin = defaultPlugin
        self.clock = clock
        self.output = output
    }

    /// Runs one input line; `location` names it in errors (`script.txt:3`).
    public func handle(_ line: String, at location: String) async throws(PluginError) {
        let parsed: InputLine
        do {
            parsed = try InputLine.parse(line, namesPlugin: defaultPlugin == nil)
        } catch {
            throw PluginError(error, at: location)
        }
        switch parsed {
        case .skip:
            return
        case let .sleep(duration):
            try? await clock.sleep(for: duration)
        case .idle:
            await host.waitUntilIdle()
        case .state:
            for name in await host.names {
                let machine = try await host.machine(named: name)
                output("\(name): \(await machine.describe())")
            }
        case let .action(plugin, name, arguments):
            do throws(PluginError) {
                let machine = try await host.machine(named: plugin ?? defaultPlugin ?? "")
                let action = try machine.plugin.action(name, try Self.positional(arguments, for: name, of: machine.plugin))
                try await machine.send(action)
            } catch {
                throw error.at(location)
            }
        }
    }

    /// Waits until no effect is running, for the end of the input.
    public func finish() async {
        await host.waitUntilIdle()
    }

    /// Orders named (JSON object) arguments by the action's parameters.
    static func positional(_ arguments: InputLine.Arguments, for name: String, of plugin: Plugin) throws(PluginError) -> [PluginValue] {
        switch arguments {
        case let .positional(values):
            return values
        case let .named(values):
            guard let signature = plugin.manifest.actions.first(where: { $0.name == name }) else {
                return [] // the unknown action is reported by `Plugin.action`
            }
            var ordered: [PluginValue] = []
            for parameter in signature.parameters {
                guard let value = values[parameter.name] else {
                    throw PluginError(.syntax("'\(name)' needs argument \"\(parameter.name)\": \(signature)"), at: "plugin \(plugin.name)")
                }
                ordered.append(value)
            }
            if let extra = values.keys.sorted().first(where: { key in !signature.parameters.contains { $0.name == key } }) {
                throw PluginError(.syntax("'\(name)' has no parameter \"\(extra)\": \(signature)"), at: "plugin \(plugin.name)")
            }
            return ordered
        }
    }

    /// A transition as `run` and `serve` print it, one line:
    /// `counter: add 5 => {"count":5}`, with the effects it requested and where it came from:
    /// `counter: increment (every ticker) => {"count":6}`.
    public static func format(_ transition: PluginTransition) -> String {
        var line = "\(transition.plugin): \(transition.action)"
        switch transition.origin {
        case .input: break
        case .next: line += " (next)"
        case let .delayed(id): line += " (delayed\(id.map { " " + $0 } ?? ""))"
        case let .repeating(id): line += " (every\(id.map { " " + $0 } ?? ""))"
        }
        switch transition.outcome {
        case let .success(requests):
            if let state = transition.state { line += " => \(state)" }
            for request in requests {
                switch request {
                case let .cancel(id): line += "; cancelled \(id)"
                default: line += "; started \(request)"
                }
            }
        case let .failure(error):
            line += " => refused: \(error.reason)"
        }
        return line
    }
}
