import ActomatonHost
import ArgumentParser
import Foundation

/// `actomaton-host`: loads reducer plugins (`.so`) and runs them on Actomaton machines.
@main
struct ActomatonHostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "actomaton-host",
        abstract: "Load Actomaton reducer plugins (.so) and run them on the async effect manager.",
        subcommands: [Inspect.self, Run.self, Serve.self]
    )
}

/// Options every subcommand that loads plugins takes.
struct LoadingOptions: ParsableArguments {
    @Flag(help: "Load plugin files that group or other users can write (refused by default: whoever can write a plugin can run code in the host).")
    var allowWritable = false

    var loadOptions: Plugin.LoadOptions { .init(allowWritableByOthers: allowWritable) }
}

struct Inspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a plugin's manifest: name, version, ABI, and actions with their parameter types.")

    @Argument(help: "The plugin file (.so).")
    var plugin: String

    @OptionGroup var loading: LoadingOptions

    func run() async throws {
        let loaded = try orExit { () throws(PluginError) in try Plugin.load(path: plugin, options: loading.loadOptions) }
        emit(loaded.manifest.text)
    }
}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one plugin: read actions, one per line, and print every transition.",
        discussion: """
            Lines are `ACTION ARGS...` (e.g. `login "alice"`, `add 5`) or JSON \
            ({"action": "add", "args": [5]}). `#` starts a comment; `:sleep SECONDS`, `:idle` \
            and `:state` are directives. Exits when the input ends and no effect is running.
            """
    )

    @Argument(help: "The plugin file (.so).")
    var plugin: String

    @Option(help: "Read actions from this file instead of standard input.")
    var script: String?

    @Flag(help: "Report a bad line and go on, instead of stopping at it.")
    var keepGoing = false

    @OptionGroup var loading: LoadingOptions

    func run() async throws {
        let host = PluginHost(loadOptions: loading.loadOptions, describesState: true, observer: printTransition)
        let machine = try await orExitAsync { () async throws(PluginError) in try await host.load(path: plugin) }
        emit("loaded plugin \(machine.name) \(machine.plugin.manifest.version) from \(plugin)")
        let session = HostSession(host: host, defaultPlugin: machine.name, clock: ContinuousClock(), output: { emit($0) })
        var failed = false
        for try await (number, line) in try lines(from: script) {
            do {
                try await session.handle(line, at: "\(script ?? "<stdin>"):\(number)")
            } catch {
                printError(error)
                failed = true
                if !keepGoing { throw ExitCode.failure }
            }
        }
        await session.finish()
        if failed { throw ExitCode.failure }
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run every plugin of a directory, each on its own machine; reload replaced plugin files with their state.",
        discussion: """
            Lines address a plugin by name: `counter add 5`, `counter.add 5`, or JSON \
            ({"plugin": "counter", "action": "add", "args": [5]}). The directory is scanned \
            before each line and every half second: new plugin files are loaded, and a replaced \
            file is reloaded with its state carried over through snapshot / restore.
            """
    )

    @Option(help: "The directory of plugin files (*.so).")
    var plugins: String

    @Option(help: "Read actions from this file instead of standard input.")
    var script: String?

    @OptionGroup var loading: LoadingOptions

    func run() async throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: plugins, isDirectory: &isDirectory), isDirectory.boolValue else {
            printError(PluginError(.notADirectory, at: plugins))
            throw ExitCode.failure
        }
        let host = PluginHost(loadOptions: loading.loadOptions, describesState: true, observer: printTransition)
        for event in await host.scan(directory: plugins) { report(event) }
        let session = HostSession(host: host, defaultPlugin: nil, clock: ContinuousClock(), output: { emit($0) })
        let directory = plugins
        let watcher = Task {
            while !Task.isCancelled {
                try await Task.sleep(for: .milliseconds(500))
                for event in await host.scan(directory: directory) { report(event) }
            }
        }
        for try await (number, line) in try lines(from: script) {
            for event in await host.scan(directory: directory) { report(event) }
            do {
                try await session.handle(line, at: "\(script ?? "<stdin>"):\(number)")
            } catch {
                printError(error)
            }
        }
        await session.finish()
        watcher.cancel()
    }
}

/// Prints a transition (the machines' observer).
@Sendable func printTransition(_ transition: PluginTransition) {
    if case let .failure(error) = transition.outcome {
        // Input lines report their own failures, with the line.
        if transition.origin != .input { printError(error) }
        return
    }
    emit(HostSession.format(transition))
}

func report(_ event: PluginHost.Event) {
    if case let .failed(error) = event { printError(error) } else { emit(event.description) }
}

/// Prints `error: <what and where>` to standard error.
func printError(_ error: Error) {
    writeLine("error: \(error)", to: 2)
}

/// Prints a line to standard output at once (unbuffered, so it interleaves with errors in order).
@Sendable func emit(_ line: String) {
    writeLine(line, to: 1)
}

func writeLine(_ line: String, to descriptor: Int32) {
    var text = line + "\n"
    text.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written <= 0 { return }
            offset += written
        }
    }
}

/// Runs `body`, or prints its error and exits with status 1.
func orExit<T>(_ body: () throws(PluginError) -> T) throws -> T {
    do {
        return try body()
    } catch {
        printError(error)
        throw ExitCode.failure
    }
}

/// Runs `body`, or prints its error and exits with status 1.
func orExitAsync<T>(_ body: () async throws(PluginError) -> T) async throws -> T {
    do {
        return try await body()
    } catch {
        printError(error)
        throw ExitCode.failure
    }
}

/// The lines of `path` (or of standard input), numbered from 1, read on a thread of their own
/// so a blocking read never holds up the machines.
func lines(from path: String?) throws -> AsyncStream<(Int, String)> {
    let file: UnsafeMutablePointer<FILE>
    if let path {
        guard let opened = fopen(path, "r") else {
            printError(Message("\(path): cannot open the script: \(String(cString: strerror(errno)))"))
            throw ExitCode.failure
        }
        file = opened
    } else {
        file = fdopen(0, "r")
    }
    let handle = UncheckedFile(file: file)
    return AsyncStream { continuation in
        let thread = Thread {
            var number = 0
            var line: UnsafeMutablePointer<CChar>?
            var capacity = 0
            while getline(&line, &capacity, handle.file) >= 0 {
                number += 1
                var text = String(cString: line!)
                while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
                continuation.yield((number, text))
            }
            free(line)
            continuation.finish()
        }
        thread.start()
    }
}

/// A `FILE *` read by one thread only.
struct UncheckedFile: @unchecked Sendable {
    let file: UnsafeMutablePointer<FILE>
}

/// An error that is just its message.
struct Message: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
