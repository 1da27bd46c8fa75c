import ActomatonCluster
import ActomatonHost
import ArgumentParser
import HostCommandLine
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The entry point. In worker mode (`actomaton-host worker …`, started by the host, not for
/// users) it restricts the process before anything starts a thread (`PR_SET_NO_NEW_PRIVS` and
/// Landlock hold only for threads started after them) and runs the worker; otherwise the
/// command line runs.
@main
enum Entry {
    static func main() async {
        if CommandLine.arguments.dropFirst().first == "worker" {
            PluginWorker.restrictBeforeThreads()
            PluginWorker.main(CommandLine.arguments, program: "actomaton-host worker")
        }
        // A reader that closed the output (`| head -2`) is a write that fails, said in one line
        // with status 1 (``writeLine(_:to:)``), not a death by SIGPIPE without a word.
        signal(SIGPIPE, SIG_IGN)
        // ActomatonHostCommand.main(), but a stop by signal under way (StopSignals) exits the
        // process itself, with its own status, once the journal is closed: the command's own
        // end, which the stop hastens, must not exit first.
        var command: any ParsableCommand
        do {
            let arguments = NegativeNumberArguments.joined(Array(CommandLine.arguments.dropFirst()))
            try RepeatedOptions.refuse(in: arguments)
            command = try ActomatonHostCommand.parseAsRoot(arguments)
        } catch {
            ActomatonHostCommand.exit(withError: error)
        }
        do {
            if var asynchronous = command as? AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch let error as ValidationError {
            // An option refused once the command runs: its own usage follows, as for one
            // refused while parsing (ArgumentParser gave the root's, `actomaton-host <subcommand>`).
            let usage = ActomatonHostCommand.usageString(for: type(of: command))
            // The command's path, `actomaton-host cluster status`: the usage's words before its options.
            let name = usage.split(separator: " ").prefix { !$0.hasPrefix("[") && !$0.hasPrefix("<") && !$0.hasPrefix("-") }
                .joined(separator: " ")
            var text = "Error: \(error.message)\nUsage: \(usage)\n  See '\(name) --help' for more information.\n"
            text.withUTF8 { bytes in _ = try? SystemCall.writeAll(HostDescriptors.errorDescriptor, UnsafeRawBufferPointer(bytes)) }
            exit(ExitCode.validationFailure.rawValue)
        } catch {
            await StopSignals.waitIfStopping()
            ActomatonHostCommand.exit(withError: error)
        }
        await StopSignals.waitIfStopping()
    }
}

/// `actomaton-host`: loads reducer plugins (`.so`, or `.wasm` in a sandbox) and runs them on Actomaton machines.
struct ActomatonHostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "actomaton-host",
        abstract: "Load Actomaton reducer plugins (.so, or .wasm in a WebAssembly sandbox) and run them on the async effect manager.",
        subcommands: [Inspect.self, Run.self, Serve.self, Journal.self, Cluster.self, ServeBaseline.self]
    )
}

/// Where plugins run, and how their workers are limited and supervised.
struct IsolationOptions: ParsableArguments {
    @Option(help: ArgumentHelp("none: plugins run inside the host (fastest; a crash ends the host); "
                                + "process: each plugin runs in a supervised worker process (default: process for serve, none for run).",
                                valueName: "mode"))
    var isolation: IsolationMode?

    // The worker options are optional, so that one given without workers can be refused.
    @Option(help: ArgumentHelp("Seconds an isolated plugin may take for one action before its worker is killed (0.001 to 3600; "
                               + "default: 2).", valueName: "seconds"))
    var actionTimeout: Double?

    @Option(help: ArgumentHelp("The address space each worker may use (K, M and G suffixes allowed; at least 256M; default: 4G).",
                               valueName: "size"),
            transform: parseSize)
    var workerMemory: Int64?

    /// The least address space a worker is given: a worker needs about 30 MiB to start (its
    /// runtime and the loader), twice that leaves room for the plugin.
    static let minWorkerMemory: Int64 = 256 << 20

    @Option(help: ArgumentHelp("The CPU time each worker may use in all, in seconds (1 to 315360000, 10 years; default: no limit).", valueName: "seconds"))
    var workerCPUSeconds: UInt64?

    @Option(help: ArgumentHelp("How many files each worker may have open (\(Self.minWorkerOpenFiles) to \(Self.maxWorkerOpenFiles); default: 64).",
                               valueName: "count"))
    var workerOpenFiles: UInt64?

    /// The fewest open files a worker loads a plugin with: its standard descriptors, its socket
    /// and lifeline, the plugin file and its private copy, and room for the loader's own.
    static let minWorkerOpenFiles: UInt64 = 16

    /// The most open files a worker may be given: Linux's own ceiling (`fs.nr_open`'s default).
    static let maxWorkerOpenFiles: UInt64 = 1 << 20

    /// The most CPU seconds a worker may be given: 10 years, well short of RLIM_INFINITY.
    static let maxWorkerCPUSeconds: UInt64 = 10 * 365 * 24 * 3600

    @Flag(help: ArgumentHelp("Let plugins in worker processes start processes (fork, posix_spawn, system), run programs "
                             + "(execve) and signal other processes. By default these fail with EPERM in a worker; threads "
                             + "start either way."))
    var workerMayStartProcesses = false

    @Flag(help: ArgumentHelp("Let plugins in worker processes use files. By default a worker opens no file but to read "
                             + "its plugin and the system's libraries and programs (Landlock), and makes, writes or "
                             + "removes none."))
    var workerMayUseFiles = false

    @Flag(help: ArgumentHelp("Let plugins in worker processes use the network. By default a worker makes no socket "
                             + "(socket, socketpair and io_uring fail with EPERM): no connection, to the network or to a "
                             + "local service."))
    var workerMayUseNetwork = false

    @Option(help: ArgumentHelp("After how many actions the host snapshots an isolated plugin's state "
                                + "(a restarted worker replays the actions since; 1 to 1000000, default: 16).", valueName: "count"))
    var snapshotEvery: Int?

    func validate() throws {
        // A timeout is kept in whole milliseconds: one that rounds to 0 would kill every worker.
        if let actionTimeout, !(actionTimeout >= 0.001 && actionTimeout <= 3600) {
            throw ValidationError("--action-timeout must be from 0.001 to 3600 seconds")
        }
        if let snapshotEvery, !(1...1_000_000).contains(snapshotEvery) {
            throw ValidationError(countRangeMessage("--snapshot-every", 1...1_000_000))
        }
        // Linux takes a limit of 0 seconds as 1; at the top, 2^64 - 1 is RLIM_INFINITY, no limit.
        if let workerCPUSeconds, !(1...Self.maxWorkerCPUSeconds).contains(workerCPUSeconds) {
            throw ValidationError("--worker-cpu-seconds must be from 1 to \(Self.maxWorkerCPUSeconds) (10 years)")
        }
        // Below it, a worker crashed while loading, and the error blamed the plugin.
        if let workerMemory, workerMemory < Self.minWorkerMemory { throw ValidationError("--worker-memory must be at least 256M") }
        if let workerOpenFiles, !(Self.minWorkerOpenFiles...Self.maxWorkerOpenFiles).contains(workerOpenFiles) {
            throw ValidationError("--worker-open-files must be from \(Self.minWorkerOpenFiles) to \(Self.maxWorkerOpenFiles)")
        }
    }

    /// The worker options given on the command line, by flag.
    private var workerFlagsGiven: [String] {
        [("--action-timeout", actionTimeout != nil), ("--worker-memory", workerMemory != nil), ("--worker-cpu-seconds", workerCPUSeconds != nil),
         ("--worker-open-files", workerOpenFiles != nil), ("--snapshot-every", snapshotEvery != nil),
         ("--worker-may-start-processes", workerMayStartProcesses), ("--worker-may-use-files", workerMayUseFiles),
         ("--worker-may-use-network", workerMayUseNetwork)].filter(\.1).map(\.0)
    }

    /// The isolation `mode` asks for, or `defaultMode` when the user did not choose. Throws
    /// when a worker option is given without workers: it would be ignored.
    func isolation(default defaultMode: IsolationMode) throws(ValidationError) -> PluginIsolation {
        switch isolation ?? defaultMode {
        case .none:
            if let flag = workerFlagsGiven.first {
                throw ValidationError("\(flag) applies to plugins in worker processes (--isolation process); "
                                      + "here plugins run in the host (--isolation none\(isolation == nil ? ", the default" : ""))")
            }
            return .none
        case .process:
            let limits = WorkerLimits(memoryBytes: UInt64(workerMemory ?? 4 << 30), cpuSeconds: workerCPUSeconds, openFiles: workerOpenFiles ?? 64,
                                      mayStartProcesses: workerMayStartProcesses, mayUseFiles: workerMayUseFiles,
                                      mayUseNetwork: workerMayUseNetwork)
            let timeout = Duration.milliseconds(Int64(((actionTimeout ?? 2) * 1000).rounded()))
            return .process(WorkerOptions(executable: workerExecutable(), limits: limits, actionTimeout: timeout,
                                          snapshotInterval: snapshotEvery ?? 16))
        }
    }
}

/// `--isolation`.
enum IsolationMode: String, ExpressibleByArgument, CaseIterable {
    case none, process
}

/// What workers are started from: `actomaton-worker` beside this executable (built with it;
/// no command line or service linked in), else this executable in its `worker` mode.
func workerExecutable() -> String {
    let host = currentExecutable()
    guard let slash = host.lastIndex(of: "/") else { return host }
    let worker = String(host[...slash]) + "actomaton-worker"
    return access(worker, X_OK) == 0 ? worker : host
}

/// This executable's path.
func currentExecutable() -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard length > 0 else { return CommandLine.arguments[0] }
    return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Options every subcommand that loads plugins takes.
struct LoadingOptions: ParsableArguments {
    @Flag(help: ArgumentHelp(
        "Load plugin files that other users could change.",
        discussion: "By default a plugin file must belong to root or to you, must not be writable by group or others, "
            + "and every directory above it must be as safe (or sticky, like /tmp); whoever can change a plugin file "
            + "can run code in the host. This flag turns those checks off."))
    var allowWritable = false

    @Option(help: ArgumentHelp("The largest plugin file to load, in bytes (K, M and G suffixes allowed; default 256M).", valueName: "size"),
            transform: parseSize)
    var maxPluginSize: Int64 = PluginLimits.defaultMaxFileSize

    @Option(help: .hidden)
    var entrySymbol: String = "actomaton_plugin_entry"

    @Option(help: ArgumentHelp(
        "Fuel per call into a .wasm plugin (about one unit per WebAssembly instruction), or off.",
        discussion: "An action that runs out fails with one line, and the plugin's state stays as it was; a module whose start "
            + "function runs out is refused. off runs every call unmetered, start functions included. Default: \(WasmLimits.defaultFuel).",
        valueName: "units"), transform: parseFuel)
    var fuel: UInt64? = WasmLimits.defaultFuel

    @Option(help: ArgumentHelp("The most linear memory a .wasm plugin may use, in bytes (K, M and G suffixes allowed); "
                                + "a module that asks for more is refused, or its memory.grow fails (default 64M).", valueName: "size"),
            transform: parseSize)
    var wasmMemoryLimit: Int64 = Int64(WasmLimits.defaultMemoryLimit)

    @Option(help: ArgumentHelp(
        "The most linear memory all .wasm instances of the host may have together, in bytes (K, M, G and T suffixes allowed; default 4G).",
        discussion: "Each instance counts the memory it declares and grows to. Past it no instance is made, and a memory.grow fails: "
            + "serve answers 429 and passivates idle .wasm instances to make room. Between --wasm-memory-limit and 1T.",
        valueName: "size"), transform: parseSize)
    var wasmMemoryTotal: Int64 = Int64(WasmMemoryBudget.defaultLimit)

    func validate() throws {
        guard (65_536...(4 << 30)).contains(wasmMemoryLimit) else {
            throw ValidationError("--wasm-memory-limit must be between 64K and 4G (one WebAssembly page to the whole 32-bit space)")
        }
        guard wasmMemoryTotal <= 1 << 40 else { throw ValidationError("--wasm-memory-total must be at most 1T") }
        guard wasmMemoryTotal >= wasmMemoryLimit else {
            throw ValidationError("--wasm-memory-total (\(wasmMemoryTotal) bytes) must be at least --wasm-memory-limit (\(wasmMemoryLimit) bytes), "
                                  + "the memory one instance may have")
        }
    }

    var loadOptions: Plugin.LoadOptions {
        .init(allowWritableByOthers: allowWritable, maxFileSize: maxPluginSize, entrySymbol: entrySymbol,
              wasmLimits: WasmLimits(fuel: fuel, memoryLimit: Int(wasmMemoryLimit), memoryTotal: .hostWide(limit: Int(wasmMemoryTotal))))
    }
}

/// `--fuel`: a positive count of units, or `off`.
func parseFuel(_ text: String) throws -> UInt64? {
    if text == "off" { return nil }
    guard let units = UInt64(text), units >= 1 else {
        throw ValidationError("--fuel takes a number of units of at least 1, or off; got '\(text)'")
    }
    return units
}

/// The one line that refuses a count flag outside its range: `--max-effects must be from 1 to
/// 1000000`, with what 0 means when it is allowed.
func countRangeMessage(_ name: String, _ range: ClosedRange<Int>) -> String {
    "\(name) must be from \(range.lowerBound) to \(range.upperBound)" + (range.lowerBound == 0 ? " (0: no limit)" : "")
}

/// Options of the commands that run machines.
struct MachineOptions: ParsableArguments {
    @Option(help: ArgumentHelp("How many delayed and repeating actions one machine may have running or waiting; "
                                + "an action asking for more fails (1 to 1000000).", valueName: "count"))
    var maxEffects = PluginLimits.defaultMaxEffects

    @Option(name: .customLong("print"), help: ArgumentHelp(
        "What to print after each transition: state (the action and the plugin's description of the state, "
            + "cut after \(stateLineLimit) bytes), summary (the action and its effects), or none (errors only).",
        valueName: "what"))
    var printMode: PrintMode = .state

    func validate() throws {
        guard (1...1_000_000).contains(maxEffects) else { throw ValidationError(countRangeMessage("--max-effects", 1...1_000_000)) }
    }
}

/// Where machines' state is kept across restarts (`--state`), and how durably.
struct StateOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Keep every machine's state in this SQLite database: accepted actions, snapshots and "
                                + "pending timers are journaled, and a restarted host brings every machine back. With serve "
                                + "--listen, postgres://USER@HOST:PORT/DATABASE instead joins a cluster of hosts sharing that "
                                + "database (with --advertise).", valueName: "file"))
    var state: String?

    @Option(help: ArgumentHelp("When an action counts as acknowledged (printed): always (committed and synced to disk "
                                + "first; nothing acknowledged is lost), batch (at once, synced within 100 ms: a crash loses at "
                                + "most the actions of one window, and never more than 5,000), off (committed without syncing: "
                                + "a host crash loses nothing, a power loss may).", valueName: "policy"))
    var sync: JournalSyncPolicy = .always

    @Option(help: ArgumentHelp("The most the state database may hold (e.g. 512M, at least 64K; its write-ahead log aside). Past "
                                + "it, as on a full disk, the host stops with one line: nothing unacknowledged is lost.", valueName: "size"))
    var stateMaxSize: String?

    /// The least `--state-max-size`: an empty state database takes 52 KiB; a smaller limit was
    /// raised to the database's size without a word.
    static let minStateMaxSize: Int64 = 64 << 10

    @Option(help: ArgumentHelp("After how many journaled actions of a plugin its state is snapshotted and the journal "
                                + "before the previous snapshot pruned (1 to 1000000000).", valueName: "count"))
    var journalSnapshotEvery = 1000

    /// The journal's options these flags ask for.
    func journalOptions() throws -> JournalOptions {
        JournalOptions(sync: sync, snapshotInterval: journalSnapshotEvery, maxDatabaseSize: try stateMaxSize.map(parseSize))
    }

    func validate() throws {
        guard (1...1_000_000_000).contains(journalSnapshotEvery) else {
            throw ValidationError(countRangeMessage("--journal-snapshot-every", 1...1_000_000_000))
        }
        if stateMaxSize != nil && state == nil { throw ValidationError("--state-max-size limits the database --state names; give --state too") }
        if let stateMaxSize, try parseSize(stateMaxSize) < Self.minStateMaxSize {
            throw ValidationError("--state-max-size must be at least 64K (an empty state database takes 52K)")
        }
    }

    /// What the line of a failed commit says was lost: under `--sync batch`, the actions
    /// printed before their commit (at most one window's) when there are any.
    static func whatAFailedCommitLost(_ lost: Int) -> String {
        lost == 0 ? "no action after the last one printed was acknowledged"
            : "the last \(lost) action\(lost == 1 ? "" : "s") acknowledged (printed, or answered) under --sync batch before "
                + "\(lost == 1 ? "its" : "their") commit \(lost == 1 ? "is" : "are") lost, and none after was acknowledged"
    }

    /// The journal `--state` names, opened; or `nil` without `--state`. Exits with one line
    /// when the database cannot be used.
    ///
    /// When a commit fails (a full disk, `--state-max-size`), the host stops at once with one
    /// line and status 1: the actions after the last durable one were never acknowledged, and
    /// a restart resumes from what is durable.
    func openJournal(printer: TransitionPrinter) throws -> PluginJournal? {
        guard let state else { return nil }
        if PostgresAddress.isAddress(state) {
            printError(Message("--state postgres://… is for serve --listen, where hosts share the database; run and serve "
                               + "take a SQLite file"))
            throw ExitCode.validationFailure
        }
        do {
            let options = try journalOptions()
            let journal = Mutex<PluginJournal?>(nil)
            let opened = try PluginJournal(path: state, options: options) { error in
                printer.printAcknowledged()
                writeLine("error: \(error); stopping: \(Self.whatAFailedCommitLost(journal.withLock { $0 }?.acknowledgedButLost ?? 0))", to: 2)
                _exit(1)
            }
            journal.withLock { $0 = opened }
            return opened
        } catch let error as PluginJournalError {
            printError(error)
            throw ExitCode.failure
        }
    }
}

extension JournalSyncPolicy: ExpressibleByArgument {}

/// `actomaton-host journal`: what a state database holds.
struct Journal: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what a state database (--state) holds: each plugin's journal, last snapshot and pending timers.")

    @Argument(help: "The state database.")
    var state: String

    /// How many instances a `--plugin` naming their plugin lists.
    static let instancesShown = 10

    @Option(help: ArgumentHelp("Print the journaled actions of this plugin, oldest first; of one instance, PLUGIN/KEY "
                                + "(serve journals each instance under its own name).", valueName: "name"))
    var plugin: String?

    func run() throws {
        do {
            let journal = try PluginJournal(readingAt: state)
            defer { journal.close() }
            if let plugin {
                let actions = try journal.journaledActions(of: plugin)
                if actions.isEmpty {
                    // A service's instances are journaled under `plugin/key`: the plugin's name
                    // alone said "no journaled actions" and nothing more (client review).
                    let instances = try journal.summaries().map(\.plugin).filter { $0.hasPrefix(plugin + "/") }
                    if let first = instances.first {
                        let shown = instances.prefix(Self.instancesShown).joined(separator: ", ")
                        let more = instances.count > Self.instancesShown ? ", … (\(instances.count) in all)" : ""
                        emit("\(plugin): no journaled actions under this name; it holds instances of it, each under its own name: "
                             + "\(shown)\(more); name one, as in --plugin \(first)")
                    } else {
                        emit("\(plugin): no journaled actions")
                    }
                }
                for action in actions { emit("#\(action.sequence) \(action.text)  (version \(action.version))") }
                return
            }
            let summaries = try journal.summaries()
            if summaries.isEmpty { emit("\(state): empty") }
            for summary in summaries {
                let snapshot = summary.lastSnapshot.map { "last snapshot after action #\($0.sequence) (\($0.bytes) bytes)" } ?? "no snapshot"
                emit("\(summary.plugin): \(summary.actionCount) journaled actions, \(snapshot), \(summary.timerCount) pending timers")
            }
        } catch where error.reason == .emptyFile {
            // What `run --state` starts a new database in: nothing journaled.
            emit("\(state): empty (no host has written to it yet)")
        } catch {
            printError(Message(error.readingDescription))
            throw ExitCode.failure
        }
    }
}

/// What `run` and `serve` print after each transition.
enum PrintMode: String, ExpressibleByArgument, CaseIterable {
    case state, summary, none
}

/// The longest state description printed on a transition line; `:state` prints it whole.
let stateLineLimit = 4096

/// Reads `256M`, `1G`, `4096`.
func parseSize(_ text: String) throws -> Int64 {
    let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
    var digits = Substring(text)
    var unit: Int64 = 1
    if let last = digits.last, let factor = units[Character(last.uppercased())] {
        unit = factor
        digits = digits.dropLast()
    }
    guard let number = Int64(digits), number <= Int64.max / unit else {
        throw ValidationError("'\(text)' is not a size: write a number of bytes, optionally with K, M, G or T, as in 512M")
    }
    // `0` read as no number at all said "write a number of bytes" (client review).
    guard number > 0 else { throw ValidationError("'\(text)' is not a size: a size is at least 1 byte") }
    return number * unit
}

struct Inspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a plugin's manifest: name, version, ABI, and actions with their parameter types.")

    @Argument(help: "The plugin file (.so or .wasm).")
    var plugin: String

    @OptionGroup var loading: LoadingOptions

    func run() async throws {
        // Loading runs the plugin's initializers in this process: a crash there is one line too.
        CrashReport.install()
        HostDescriptors.takePrivateCopies()
        let loaded = try orExit { () throws(PluginLoadError) in try Plugin.load(path: plugin, options: loading.loadOptions) }
        for line in loaded.manifest.lines { emit(line) }
        emit(loaded.isWebAssembly ? "runs in: the WebAssembly sandbox (fuel and memory limits apply)" : "runs in: this process (native code), or a worker with --isolation process")
    }
}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one plugin: read actions, one per line, and print every transition.",
        discussion: """
            Lines are `ACTION ARGS...` (e.g. `login "alice"`, `add 5`) or JSON \
            ({"action": "add", "args": [5]}). A line starting with `#` is a comment; `:sleep SECONDS`, `:idle` \
            and `:state` are directives. Exits when the input ends and no effect is running: \
            with status 0 if every line and every action succeeded, 1 otherwise. At the end of \
            the input the host waits for the delayed and repeating actions still running or \
            waiting; one that keeps re-arming itself keeps the host running until it stops or \
            the host is interrupted (Ctrl-C). An error repeated by such a loop is printed at \
            most once a second, with the count of repeats not printed.
            """
    )

    @Argument(help: "The plugin file (.so or .wasm).")
    var plugin: String

    @Option(help: "Read actions from this file instead of standard input.")
    var script: String?

    @Flag(help: "Report a bad line and go on, instead of stopping at it.")
    var keepGoing = false

    @OptionGroup var loading: LoadingOptions
    @OptionGroup var machines: MachineOptions
    @OptionGroup var isolation: IsolationOptions
    @OptionGroup var persistence: StateOptions

    func run() async throws {
        CrashReport.install()
        HostDescriptors.takePrivateCopies()
        let isolation = try isolation.isolation(default: .none)
        let stopTarget = StopTarget.installed()
        // A script that cannot be read is said before anything is loaded or journaled.
        let input = try lines(from: script)
        let printer = TransitionPrinter(print: transitionPrinter(machines.printMode))
        let journal = try persistence.openJournal(printer: printer)
        stopTarget.set(input: input, journal: journal, printer: printer)
        let host = PluginHost(loadOptions: loading.loadOptions, describesState: machines.printMode == .state,
                              observer: printer.observer, maxEffects: machines.maxEffects,
                              isolation: isolation, journal: journal)
        // Closed while the machines still exist: timers they drop at exit stay journaled.
        defer { journal?.close(); withExtendedLifetime(host) {} }
        let machine = try await orExitAsync { () async throws(PluginLoadError) in try await host.load(path: plugin) }
        emit("loaded plugin \(machine.name) \(machine.plugin.manifest.version) from \(plugin)")
        for line in await host.takeJournalReports() { printError(Message(line)) }
        let session = HostSession(host: host, defaultPlugin: machine.name, clock: ContinuousClock(), output: { emit($0) }, printer: printer)
        // One machine in a worker or in the sandbox: the loop runs on the machine's thread, so a
        // line's send and its answer wake no other thread (the input is read on a thread of its own).
        let failed = try await withTaskExecutorPreference(machine.taskExecutor) {
            var failed = false
            for await line in input {
                do {
                    try await session.handle(line, from: script ?? "<stdin>")
                } catch {
                    printError(error)
                    failed = true
                    if !keepGoing {
                        // Said, not dropped without a word: the delayed and repeating actions a
                        // run at its end would wait for.
                        let pending = await machine.runningEffectCount
                        if pending > 0 {
                            let kept = journal == nil ? "" : "; their timers stay in the journal, armed again at the next start"
                            printError(Message("stopped at this line (--keep-going goes on past a bad line): \(pending) effect\(pending == 1 ? "" : "s") "
                                               + "still running or waiting \(pending == 1 ? "is" : "are") not run\(kept)"))
                        }
                        finishErrors()
                        throw ExitCode.failure
                    }
                }
            }
            do {
                try await session.finish()
            } catch {
                printError(error)
                finishErrors()
                throw ExitCode.failure
            }
            return failed
        }
        finishErrors()
        if failed || ErrorCount.any { throw ExitCode.failure }
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run every plugin of a directory, each on its own machine; reload replaced plugin files with their state. "
            + "With --listen, serve keyed instances of each plugin over HTTP and WebSocket instead.",
        discussion: """
            Lines address a plugin by name: `counter add 5`, `counter.add 5`, or JSON \
            ({"plugin": "counter", "action": "add", "args": [5]}); or one of its keyed instances, \
            each a machine of its own started by its first action: `counter/room-1 add 5` (a key \
            is 1 to 128 bytes of letters, digits and . _ : -). The directory is scanned \
            before each line and every half second: new plugin files are loaded, and a replaced \
            file is reloaded with its state carried over through snapshot / restore. At the \
            end of the input it waits, as `run` does, until no effect is running or waiting. \
            With --listen, the directory is read once, at start: a plugin file added or \
            replaced later is served after a restart (with --state, each instance comes back \
            from the journal).
            """
    )

    @Option(help: "The directory of plugin files (*.so and *.wasm).")
    var plugins: String

    @Option(help: "Read actions from this file instead of standard input.")
    var script: String?

    @OptionGroup var loading: LoadingOptions
    @OptionGroup var machines: MachineOptions
    @OptionGroup var isolation: IsolationOptions
    @OptionGroup var persistence: StateOptions
    @OptionGroup(title: "Network service (--listen)") var network: NetworkOptions
    @OptionGroup(title: "Cluster (--listen with --state postgres://…)") var cluster: ClusterOptions

    func validate() throws {
        try refuseFlagsOfTheOtherMode(in: Array(CommandLine.arguments.dropFirst()))
        try validateListening()
    }

    func run() async throws {
        CrashReport.install()
        do {
            _ = try PluginDirectory.read(plugins)
        } catch {
            printError(error)
            throw ExitCode.failure
        }
        let chosen = try isolation.isolation(default: .process)
        if let listen = network.listen { return try await runService(listen: listen, isolation: chosen) }
        HostDescriptors.takePrivateCopies()
        let stopTarget = StopTarget.installed()
        let input = try lines(from: script)
        let printer = TransitionPrinter(print: transitionPrinter(machines.printMode))
        let journal = try persistence.openJournal(printer: printer)
        stopTarget.set(input: input, journal: journal, printer: printer)
        let host = PluginHost(loadOptions: loading.loadOptions, describesState: machines.printMode == .state,
                              observer: printer.observer, maxEffects: machines.maxEffects,
                              isolation: chosen, journal: journal,
                              maxInstancesPerPlugin: network.maxInstancesPerPlugin ?? PluginHost.defaultMaxInstancesPerPlugin)
        defer { journal?.close(); withExtendedLifetime(host) {} }
        for event in await host.scan(directory: plugins) { report(event) }
        let session = HostSession(host: host, defaultPlugin: nil, clock: ContinuousClock(), output: { emit($0) }, printer: printer)
        let directory = plugins
        let watcher = Task {
            while !Task.isCancelled {
                try await Task.sleep(for: .milliseconds(500))
                for event in await host.scan(directory: directory) { report(event) }
            }
        }
        for await line in input {
            for event in await host.scan(directory: directory) { report(event) }
            do {
                try await session.handle(line, from: script ?? "<stdin>")
            } catch {
                printError(error)
            }
        }
        do {
            try await session.finish()
        } catch {
            printError(error)
        }
        finishErrors()
        watcher.cancel()
    }
}

/// The machines' observer: prints each transition as `mode` says, and every failure.
func transitionPrinter(_ mode: PrintMode) -> PluginMachine.Observer {
    { transition in
        if case let .failure(error) = transition.outcome {
            // Input lines report their own failures, with the line.
            if transition.origin != .input { printError(error) }
            return
        }
        if mode != .none { emit(HostSession.format(transition, stateLimit: stateLineLimit)) }
        if case let .failure(error)? = transition.state { printError(error) }
    }
}

/// Prints what a scan did: loads on standard output, every problem (a file refused, the
/// directory unreadable, what the journal could not bring back) on standard error.
func report(_ event: PluginHost.Event) {
    switch event {
    case .loaded, .reloaded: emit(event.description)
    case let .failed(error): printError(error)
    case let .directoryUnreadable(error): printError(error)
    case let .journalReport(line), let .skipped(line): printError(Message(line))
    }
}

/// Prints `error: <what and where>` to standard error, and counts it. A line identical to the
/// one before it is printed at most once a second, with how often it was suppressed
/// (``RepeatedLineFilter``): an effect failing in a loop cannot flood the terminal.
func printError(_ error: Error) {
    ErrorCount.record()
    let line = "error: \(error)"
    errorLines.withLock { filter in
        for text in filter.admit(line, at: .now) { writeLine(text, to: 2) }
    }
}

/// Says how many repeats of the last error were not printed, if any, and how many of each
/// plugin's last log lines were left out over its rate: at the end of `run` and `serve`.
func finishErrors() {
    PluginLogLines.sayWhatWasLeftOut()
    errorLines.withLock { filter in
        for text in filter.finish() { writeLine(text, to: 2) }
    }
}

private let errorLines = Mutex(RepeatedLineFilter())

/// Whether any error was printed: `run` then exits with status 1.
enum ErrorCount {
    private static let count = Atomic<Int>(0)

    static func record() { count.add(1, ordering: .relaxed) }
    static var any: Bool { count.load(ordering: .relaxed) > 0 || HostErrorLines.count > 0 }
}

/// Prints a line to standard output at once (unbuffered, so it interleaves with errors in order).
@Sendable func emit(_ line: String) {
    writeLine(line, to: 1)
}

/// Writes one line, with control characters and invalid UTF-8 escaped (``TerminalText``): no
/// text from outside can forge another line or drive the terminal.
///
/// Descriptors 1 and 2 stand for the host's output and errors (``HostDescriptors``). A line the
/// output cannot take (a full disk, a closed descriptor) stops the host with one line and status
/// 1: it went on, printing nothing, and exited 0. A lost error line has nowhere left to be said.
func writeLine(_ line: String, to descriptor: Int32) {
    var text = TerminalText.escaping(line) + "\n"
    let target = switch descriptor {
    case 1: HostDescriptors.outputDescriptor
    case 2: HostDescriptors.errorDescriptor
    default: descriptor
    }
    var failure: (any Error)?
    text.withUTF8 { bytes in
        do { try SystemCall.writeAll(target, UnsafeRawBufferPointer(bytes)) } catch { failure = error }
    }
    if descriptor == 1, let failure {
        var stop = "error: the output cannot be written (\(failure)); stopping\n"
        stop.withUTF8 { bytes in _ = try? SystemCall.writeAll(HostDescriptors.errorDescriptor, UnsafeRawBufferPointer(bytes)) }
        _exit(1)
    }
}

/// Runs `body`, or prints its error and exits with status 1.
func orExit<T>(_ body: () throws(PluginLoadError) -> T) throws -> T {
    do {
        return try body()
    } catch {
        printError(error)
        throw ExitCode.failure
    }
}

/// Runs `body`, or prints its error and exits with status 1.
func orExitAsync<T>(_ body: () async throws(PluginLoadError) -> T) async throws -> T {
    do {
        return try await body()
    } catch {
        printError(error)
        throw ExitCode.failure
    }
}

/// The lines of `path` (or of standard input), read with limits and back-pressure
/// (``InputLineReader``); a script that cannot be opened, or is a directory, ends the command.
func lines(from path: String?) throws -> InputLineReader {
    guard let path else { return InputLineReader(descriptor: HostDescriptors.inputDescriptor) }
    do {
        return try InputLineReader(path: path)
    } catch {
        printError(error)
        throw ExitCode.failure
    }
}

/// An error that is just its message.
struct Message: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
