import ActomatonPluginContract
import ActomatonHost
import Synchronization

/// Runs input lines against an `ActomatonHost` `PluginHost`: what `actomaton-host run` and `serve` do with
/// each line of a script or of standard input.
///
/// Each action line is checked against the addressed plugin's vocabulary and submitted to its
/// machine; the transitions its submission returns, and those the machines make on their own,
/// go to a ``TransitionPrinter``, which prints them
/// (see ``format(_:stateLimit:)``) in order, once they are acknowledged. A line that cannot be run throws a ``HostLineError`` located at the line
/// (`script.txt:3`).
///
/// With a journal, the session does not wait for each action's acknowledgement before the
/// next line: it goes on while the journal commits, so the actions of one stream share commits
/// (`JournalSyncPolicy`). At most ``maxUnacknowledgedActions`` wait at a time; a line that
/// fails, a directive and ``finish()`` first wait for every action before them, so what is
/// printed keeps the order of the input.
public struct HostSession: Sendable {
    /// The most actions submitted and not yet acknowledged.
    public static let maxUnacknowledgedActions = 512

    /// The submissions not known to be acknowledged: the newest, and one from up to
    /// ``maxUnacknowledgedActions`` / 2 actions before it.
    private struct Pipeline {
        var newest: PluginSubmission?
        var checkpoint: PluginSubmission?
        var sinceCheckpoint = 0
    }

    private let pipeline = PipelineBox()

    private final class PipelineBox: Sendable {
        let state = Mutex(Pipeline())
    }

    /// The plugins.
    public let host: PluginHost
    /// The plugin action lines go to when they do not name one (`run`), or `nil` when every
    /// line names its plugin (`serve`).
    public let defaultPlugin: String?
    private let clock: any Clock<Duration>
    private let output: @Sendable (String) -> Void
    private let printer: TransitionPrinter?

    /// Creates a session.
    ///
    /// - Parameters:
    ///   - host: The plugins the lines address.
    ///   - defaultPlugin: Under `run`, the one plugin's name: lines then do not name it.
    ///   - clock: What `:sleep` sleeps on: the machines' clock.
    ///   - output: Where `:state` prints.
    ///   - printer: What prints the machines' transitions, flushed before a directive runs
    ///     and at the end, so that what is printed keeps the order of the input.
    public init(host: PluginHost, defaultPlugin: String?, clock: some Clock<Duration>, output: @escaping @Sendable (String) -> Void,
                printer: TransitionPrinter? = nil) {
        self.host = host
        self.printer = printer
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
            try await waitUntilAcknowledged(at: location)
            throw HostLineError(.input(error), at: location)
        }
        if case .action = parsed {} else if case .skip = parsed {} else { try await waitUntilAcknowledged(at: location) }
        switch parsed {
        case .skip:
            return
        case let .sleep(duration):
            try? await clock.sleep(for: duration)
        case .idle:
            await host.waitUntilIdle()
        case .state:
            for name in await host.addresses {
                do {
                    let machine = try await host.machine(at: name)
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
                machine = try await host.machine(at: plugin ?? defaultPlugin ?? "")
            } catch {
                try await waitUntilAcknowledged(at: location)
                throw HostLineError(.host(error), at: location)
            }
            let submission: PluginSubmission
            do throws(PluginCallError) {
                let action = try machine.plugin.action(name, try Self.positional(arguments, for: name, of: machine.plugin))
                if let printer {
                    submission = try await printer.printing(sendTo: machine.journalName) { () async throws(PluginCallError) in
                        try await machine.submit(action)
                    }
                } else {
                    submission = try await machine.submit(action)
                }
            } catch {
                try await waitUntilAcknowledged(at: location)
                throw HostLineError(.call(error), at: location)
            }
            let earlier: PluginSubmission? = pipeline.state.withLock { pipeline in
                pipeline.newest = submission
                pipeline.sinceCheckpoint += 1
                guard pipeline.sinceCheckpoint >= Self.maxUnacknowledgedActions / 2 else { return nil }
                defer {
                    pipeline.checkpoint = submission
                    pipeline.sinceCheckpoint = 0
                }
                return pipeline.checkpoint
            }
            do throws(PluginCallError) {
                try await earlier?.acknowledged()
            } catch {
                throw HostLineError(.call(error), at: location)
            }
        }
    }

    /// Waits until every action submitted so far is acknowledged; throws, located at
    /// `location`, if one never will be.
    public func waitUntilAcknowledged(at location: String) async throws(HostLineError) {
        let newest = pipeline.state.withLock { pipeline in
            defer { pipeline = Pipeline() }
            return pipeline.newest
        }
        do throws(PluginCallError) {
            try await newest?.acknowledged()
        } catch {
            await printer?.flush()
            throw HostLineError(.call(error), at: location)
        }
        await printer?.flush()
    }

    /// Waits until every action is acknowledged and no effect is running, for the end of the
    /// input; throws if an action never will be acknowledged.
    public func finish() async throws(HostLineError) {
        try await waitUntilAcknowledged(at: "end of input")
        await host.waitUntilIdle()
        await printer?.flush()
    }

    /// Orders named (JSON object) arguments by the action's parameters; throws, as the command
    /// line does, for a missing or unknown parameter. An unknown action gets no error here:
    /// `Plugin.action(_:_:)` reports it.
    public static func positional(_ arguments: InputLine.Arguments, for name: String, of plugin: Plugin) throws(PluginCallError) -> [PluginValue] {
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

    /// A transition as `run` and `serve` print it, one line, after its machine's address:
    /// `counter: add 5 => {"count":5}` (`counter/room-1: …` for an instance), with the effects it requested and where it came from:
    /// `counter: increment (every ticker) => {"count":6}`. A state description longer than
    /// `stateLimit` bytes is cut, with a note saying how much was left out.
    /// The action itself is cut after `PluginLimits.maxEchoedActionBytes` bytes.
    public static func format(_ transition: PluginTransition, stateLimit: Int = .max) -> String {
        var line = "\(transition.address): \(PluginLimits.echo(transition.action.description))"
        switch transition.origin {
        case .input: break
        case .next: line += " (next)"
        case let .delayed(id): line += " (delayed\(id.map { " " + $0 } ?? ""))"
        case let .repeating(id): line += " (every\(id.map { " " + $0 } ?? ""))"
        }
        switch transition.outcome {
        case let .success(requests):
            switch transition.state {
            case let .success(state)?: line += " => " + state.cut(utf8Bytes: stateLimit, note: "; `:state` prints it whole")
            case .failure?: line += " => (the state cannot be described)"
            case nil: break
            }
            // Requests in order; a cancel is printed only when it found an effect to cancel.
            var found = transition.cancelled[...]
            for request in requests {
                switch request {
                case let .cancel(id):
                    if let index = found.firstIndex(of: id) {
                        line += "; cancelled \(id)"
                        found.remove(at: index)
                    }
                default: line += "; started \(PluginLimits.echo(request.description))"
                }
            }
        case let .failure(error):
            line += " => refused: \(error.reason)"
        }
        return line
    }
}
