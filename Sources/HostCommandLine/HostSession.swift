import ActomatonPluginContract
import ActomatonHost

/// Runs input lines against a ``PluginHost``: what `actomaton-host run` and `serve` do with
/// each line of a script or of standard input.
///
/// Each action line is checked against the addressed plugin's vocabulary and sent to its
/// machine; transitions are printed by the host's observer (see ``format(_:)``). A line that
/// cannot be run throws a ``HostLineError`` located at the line (`script.txt:3`).
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

    /// Runs one line from an ``InputLineReader``; `source` names the input in errors
    /// (`script.txt`, `<stdin>`), with the line's number.
    public func handle(_ line: InputLineReader.Line, from source: String) async throws(HostLineError) {
        let location = "\(source):\(line.number)"
        switch line.text {
        case let .success(text): try await handle(text, at: location)
        case let .failure(error): throw HostLineError(.input(error), at: location)
        }
    }

    /// Runs one input line; `location` names it in errors (`script.txt:3`).
    public func handle(_ line: String, at location: String) async throws(HostLineError) {
        let parsed: InputLine
        do {
            parsed = try InputLine.parse(line, namesPlugin: defaultPlugin == nil)
        } catch {
            throw HostLineError(.input(error), at: location)
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
                do {
                    let machine = try await host.machine(named: name)
                    output("\(name): \(try await machine.describe())")
                } catch let error as PluginCallError {
                    throw HostLineError(.call(error), at: location)
                } catch {
                    continue // unloaded meanwhile
                }
            }
        case let .action(plugin, name, arguments):
            let machine: PluginMachine
            do {
                machine = try await host.machine(named: plugin ?? defaultPlugin ?? "")
            } catch {
                throw HostLineError(.host(error), at: location)
            }
            do throws(PluginCallError) {
                let action = try machine.plugin.action(name, try Self.positional(arguments, for: name, of: machine.plugin))
                try await machine.send(action)
            } catch {
                throw HostLineError(.call(error), at: location)
            }
        }
    }

    /// Waits until no effect is running, for the end of the input.
    public func finish() async {
        await host.waitUntilIdle()
    }

    /// Orders named (JSON object) arguments by the action's parameters.
    static func positional(_ arguments: InputLine.Arguments, for name: String, of plugin: Plugin) throws(PluginCallError) -> [PluginValue] {
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
                    throw PluginCallError(.missingArgument(action: name, parameter: parameter.name, signature: signature.description), plugin: plugin.name)
                }
                ordered.append(value)
            }
            if let extra = values.keys.sorted().first(where: { key in !signature.parameters.contains { $0.name == key } }) {
                throw PluginCallError(.unknownParameter(action: name, parameter: extra, signature: signature.description), plugin: plugin.name)
            }
            return ordered
        }
    }

    /// A transition as `run` and `serve` print it, one line:
    /// `counter: add 5 => {"count":5}`, with the effects it requested and where it came from:
    /// `counter: increment (every ticker) => {"count":6}`. A state description longer than
    /// `stateLimit` bytes is cut, with a note saying how much was left out.
    /// The action itself is cut after ``actionEchoLimit`` bytes.
    public static func format(_ transition: PluginTransition, stateLimit: Int = .max) -> String {
        var line = "\(transition.plugin): \(cut(transition.action.description, to: actionEchoLimit, note: ""))"
        switch transition.origin {
        case .input: break
        case .next: line += " (next)"
        case let .delayed(id): line += " (delayed\(id.map { " " + $0 } ?? ""))"
        case let .repeating(id): line += " (every\(id.map { " " + $0 } ?? ""))"
        }
        switch transition.outcome {
        case let .success(requests):
            switch transition.state {
            case let .success(state)?: line += " => " + cut(state, to: stateLimit)
            case .failure?: line += " => (the state cannot be described)"
            case nil: break
            }
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

    /// The longest action echoed on a transition line, in bytes.
    public static let actionEchoLimit = 1024

    /// `text`, or its first `limit` bytes (whole characters) and a note.
    static func cut(_ text: String, to limit: Int, note: String = "; `:state` prints it whole") -> String {
        guard text.utf8.count > limit else { return text }
        var kept = 0
        var end = text.startIndex
        for index in text.indices {
            let next = text.index(after: index)
            let size = text.utf8.distance(from: index, to: next)
            if kept + size > limit { break }
            kept += size
            end = next
        }
        return "\(text[..<end]) … (\(text.utf8.count - kept) more bytes\(note))"
    }
}
