import CProcessControl
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The limits a worker process puts on itself before it loads a plugin.
public struct WorkerLimits: Sendable, Hashable {
    /// The most address space, in bytes (`RLIMIT_AS`).
    public var memoryBytes: UInt64
    /// The most CPU time, in seconds (`RLIMIT_CPU`); `nil` for none (the action deadline
    /// still stops a hung action).
    public var cpuSeconds: UInt64?
    /// The most open files (`RLIMIT_NOFILE`).
    public var openFiles: UInt64
    /// Whether the plugin may start processes, run programs and signal other processes. When
    /// not (the default), `fork`, `vfork`, `posix_spawn`, `system`, `execve` and signals to any
    /// process but the worker's own group fail with `EPERM` (a seccomp filter), so a plugin
    /// cannot fork-bomb the machine nor leave a program behind the host; threads still start.
    /// Either way, a worker has no capability and cannot trace or read another process.
    public var mayStartProcesses: Bool
    /// Whether the plugin may use files. When not (the default), a Landlock domain on the whole
    /// worker lets it open no file but to read or run the system's programs and libraries
    /// (beneath `/usr`, `/lib`, `/lib64`, `/bin`, `/sbin`, and the directories of the libraries
    /// the worker has loaded), the dynamic loader's cache and its own plugin file; it makes,
    /// writes, removes and renames nothing; what Landlock leaves open (a file's mode, owner,
    /// times and extended attributes, and watching files) fails with `EPERM` (a seccomp filter).
    /// A worker whose kernel has no Landlock loads no plugin.
    public var mayUseFiles: Bool
    /// Whether the plugin may use the network. When not (the default), `socket`, `socketpair`
    /// and `io_uring_setup` fail with `EPERM` (a seccomp filter): no socket of any family, so no
    /// connection to the network or to the machine's local services.
    public var mayUseNetwork: Bool

    /// The defaults: 4 GiB of address space, no CPU limit, 64 open files, no process started,
    /// no file but the system's libraries and programs, no network.
    public init(memoryBytes: UInt64 = 4 << 30, cpuSeconds: UInt64? = nil, openFiles: UInt64 = 64, mayStartProcesses: Bool = false,
                mayUseFiles: Bool = false, mayUseNetwork: Bool = false) {
        self.memoryBytes = memoryBytes
        self.cpuSeconds = cpuSeconds
        self.openFiles = openFiles
        self.mayStartProcesses = mayStartProcesses
        self.mayUseFiles = mayUseFiles
        self.mayUseNetwork = mayUseNetwork
    }

    /// The arguments that hand these limits to a worker.
    var arguments: [String] {
        ["--memory", "\(memoryBytes)", "--files", "\(openFiles)"] + (cpuSeconds.map { ["--cpu", "\($0)"] } ?? [])
            + (mayStartProcesses ? ["--processes", "1"] : []) + (mayUseFiles ? ["--use-files", "1"] : [])
            + (mayUseNetwork ? ["--network", "1"] : [])
    }

    /// The exit status of a worker that could not restrict itself (a kernel without seccomp
    /// filters): it loads no plugin rather than run one unconfined.
    public static let cannotRestrictStatus: Int32 = 4
    /// The exit status of a worker that could not confine itself to its files (a kernel without
    /// Landlock): it loads no plugin rather than let one use every file the host's user can.
    public static let cannotConfineFilesStatus: Int32 = 5
    /// The exit status of a worker that could not map the memory it shares with the host
    /// (descriptor 5 missing: a worker started by something else than this host).
    public static let cannotMapRingsStatus: Int32 = 6
}

/// What a worker is started with: `worker --parent PID --plugin PATH --memory BYTES
/// --files COUNT [--cpu SECONDS] [--processes 1] [--use-files 1] [--network 1]`, read by
/// ``PluginWorker/main(_:program:)`` in both executables that run workers.
public struct WorkerArguments: Sendable, Hashable {
    /// The host's process ID.
    public var parent: Int32
    /// The plugin file the worker loads (the only one it may read, with its libraries).
    public var pluginPath: String
    /// The limits it sets on itself.
    public var limits: WorkerLimits

    /// The arguments that start a worker for `pluginPath` (after the executable's name).
    static func make(parent: Int32, pluginPath: String, limits: WorkerLimits) -> [String] {
        ["worker", "--parent", "\(parent)", "--plugin", pluginPath] + limits.arguments
    }

    /// Reads `arguments` (the executable's name first); one line saying why when they are not a
    /// worker's.
    public static func parse(_ arguments: [String]) -> Result<WorkerArguments, WorkerArgumentError> {
        var rest = arguments.dropFirst()
        guard rest.first == "worker" else { return .failure(WorkerArgumentError("the first argument must be `worker`")) }
        rest = rest.dropFirst()
        let names = ["--parent", "--plugin", "--memory", "--files", "--cpu", "--processes", "--use-files", "--network"]
        var values: [String: String] = [:]
        while let name = rest.first {
            guard names.contains(name), rest.count >= 2 else { return .failure(WorkerArgumentError("unexpected argument '\(name)'")) }
            values[name] = rest.dropFirst().first
            rest = rest.dropFirst(2)
        }
        guard let parent = values["--parent"].flatMap(Int32.init), let memory = values["--memory"].flatMap(UInt64.init),
              let files = values["--files"].flatMap(UInt64.init), let pluginPath = values["--plugin"], !pluginPath.isEmpty else {
            return .failure(WorkerArgumentError("--parent, --plugin, --memory and --files are required (numbers but --plugin)"))
        }
        var cpu: UInt64?
        if let text = values["--cpu"] {
            guard let seconds = UInt64(text) else { return .failure(WorkerArgumentError("--cpu must be a number")) }
            cpu = seconds
        }
        for flag in ["--processes", "--use-files", "--network"] where values[flag] != nil && values[flag] != "1" {
            return .failure(WorkerArgumentError("\(flag) takes only 1"))
        }
        let limits = WorkerLimits(memoryBytes: memory, cpuSeconds: cpu, openFiles: files, mayStartProcesses: values["--processes"] == "1",
                                  mayUseFiles: values["--use-files"] == "1", mayUseNetwork: values["--network"] == "1")
        return .success(WorkerArguments(parent: parent, pluginPath: pluginPath, limits: limits))
    }
}

/// Why a worker's arguments were refused.
public struct WorkerArgumentError: Error, Sendable, Hashable {
    /// One line.
    public let message: String

    init(_ message: String) {
        self.message = message
    }
}

/// The worker side of process isolation: what `actomaton-host worker` runs. It loads one
/// plugin, as the host would in-process, and serves the host's requests until the host closes
/// the socket on descriptor 3 (see `WorkerProtocol`): the frames travel through the rings in the
/// memory of descriptor 5, the socket wakes a side that sleeps. Descriptors 0, 1 and 2 are
/// /dev/null; descriptor 4 is the lifeline (see `WorkerProcess`).
public enum PluginWorker {
    /// The descriptor of the worker's end of the socket pair.
    public static let channelDescriptor: Int32 = 3
    /// The descriptor of the lifeline pipe: it hangs up when the host process ends.
    public static let lifelineDescriptor: Int32 = 4
    /// The descriptor of the memory the worker shares with the host: the rings its frames
    /// travel through (see `WorkerChannel`).
    public static let ringsDescriptor: Int32 = 5

    /// Sets `PR_SET_NO_NEW_PRIVS`, which only the calling thread and the threads it starts
    /// afterwards get: the executable calls this first thing in worker mode, before anything
    /// starts a thread, so that no thread of the worker can gain privileges.
    public static func restrictBeforeThreads() {
        _ = actomaton_set_no_new_privileges()
    }

    /// Runs a worker from its command line (``WorkerArguments``); never returns. Arguments that
    /// are not a worker's end it with status 2 after one line on its standard error, naming
    /// `program`.
    ///
    /// Call ``restrictBeforeThreads()`` first, before any other thread starts.
    public static func main(_ arguments: [String], program: String) -> Never {
        switch WorkerArguments.parse(arguments) {
        case let .success(worker):
            run(parent: worker.parent, pluginPath: worker.pluginPath, limits: worker.limits)
        case let .failure(error):
            let line = "\(program): \(error.message) (a plugin worker, started by actomaton-host; not for users)\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
            exit(2)
        }
    }

    /// Restricts the process, then serves the host; never returns.
    ///
    /// Call ``restrictBeforeThreads()`` first, before any other thread starts.
    ///
    /// - Parameters:
    ///   - parent: The host's process ID: the worker ends if the host is gone.
    ///   - pluginPath: The plugin file it loads: unless `limits` let it use files, the only file
    ///     beside the system's libraries and programs it can read.
    ///   - limits: The resource limits to set.
    public static func run(parent: Int32, pluginPath: String, limits: WorkerLimits) -> Never {
        // Idempotent; covers this thread if the caller did not.
        restrictBeforeThreads()
        // Files, first: a Landlock domain holds for the thread that makes it and the threads it
        // starts afterwards, so it comes before the lifeline's thread.
        if !limits.mayUseFiles {
            guard actomaton_confine_files(pluginPath) == 0 else { exit(WorkerLimits.cannotConfineFilesStatus) }
        }
        // The memory shared with the host, mapped before the limits are set. Its descriptor
        // stays open: it gives a plugin nothing it could not find in its own address space,
        // and the host sealed its size.
        guard case let .success(rings) = SharedRings.map(ringsDescriptor, as: .worker) else { exit(WorkerLimits.cannotMapRingsStatus) }
        // A worker's private copy of the plugin is a memory file: it may write no file.
        PluginFile.copiesInMemory.store(true, ordering: .relaxed)
        // No worker outlives the host: the lifeline hangs up when the host process ends.
        guard actomaton_watch_lifeline(lifelineDescriptor) == 0, getppid() == parent else { exit(3) }
        // A crash ends the worker at once, by its signal, which the host reports; Swift's
        // backtracer would print pages into the host's output (and, for a raised signal,
        // can let the process go on).
        for signal in [SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGABRT, SIGSYS] { Glibc.signal(signal, SIG_DFL) }
        setLimit(Int32(RLIMIT_AS.rawValue), limits.memoryBytes)
        setLimit(Int32(RLIMIT_NOFILE.rawValue), limits.openFiles)
        setLimit(Int32(RLIMIT_CORE.rawValue), 0)
        if let seconds = limits.cpuSeconds { setLimit(Int32(RLIMIT_CPU.rawValue), seconds) }
        // No capability, and a seccomp filter: nothing of another process; unless allowed, no
        // process started, no program run, no signal but to itself.
        guard actomaton_restrict_worker(limits.mayStartProcesses ? 1 : 0, limits.mayUseNetwork ? 1 : 0, limits.mayUseFiles ? 1 : 0) == 0 else {
            exit(WorkerLimits.cannotRestrictStatus)
        }

        let server = Server(channel: WorkerChannel(descriptor: channelDescriptor, yieldsWhileSpinning: true, rings: rings), pluginPath: pluginPath)
        exit(server.serve())
    }

    private static func setLimit(_ resource: Int32, _ value: UInt64) {
        var limit = rlimit(rlim_cur: rlim_t(value), rlim_max: rlim_t(value))
        _ = setrlimit(__rlimit_resource_t(UInt32(resource)), &limit)
    }

    /// Serves one host.
    private final class Server: Sendable {
        private let channel: WorkerChannel
        /// Sends are locked: a plugin thread may log while the main thread replies.
        private let sendLock = Mutex(())
        /// The plugin it was started for: the only one it loads.
        private let pluginPath: String

        init(channel: WorkerChannel, pluginPath: String) {
            self.channel = channel
            self.pluginPath = pluginPath
        }

        private func send(_ reply: WorkerReply) {
            sendLock.withLock { _ in
                do { try channel.send(reply) } catch { exit(0) } // the host is gone
            }
        }

        /// Serves until the host closes the socket; the exit status. A request that breaks the
        /// protocol ends the worker with status 2, after one log line saying how.
        func serve() -> Int32 {
            send(.hello(version: WorkerProtocol.version))
            var instance: PluginInstance?
            while true {
                let request: WorkerRequest
                do {
                    request = try channel.receiveRequest(deadline: nil)
                } catch .closed {
                    return 0
                } catch .violation(let violation) {
                    send(.log("worker: the host broke the worker protocol: \(violation)"))
                    return 2
                } catch {
                    return 2
                }
                if case let .load(path, entrySymbol, maxFileSize, allowWritableByOthers) = request {
                    guard path == pluginPath else {
                        send(.log("worker: the host broke the worker protocol: it asked for \(Self.cut(path, to: 256)), "
                                  + "the worker was started for \(Self.cut(pluginPath, to: 256))"))
                        return 2
                    }
                    instance = load(path: path, options: .init(allowWritableByOthers: allowWritableByOthers, maxFileSize: maxFileSize,
                                                                entrySymbol: entrySymbol))
                    continue
                }
                guard let instance else {
                    send(.log("worker: the host broke the worker protocol: a \(request.tag) frame came before a plugin was loaded"))
                    return 2
                }
                send(reply(to: request, from: instance))
            }
        }

        /// What `instance` answers to `request` (anything but `load`).
        private func reply(to request: WorkerRequest, from instance: PluginInstance) -> WorkerReply {
            do throws(PluginCallError.Reason) {
                switch request {
                case let .perform(name, arguments):
                    switch instance.perform(try instance.plugin.checkedAction(name, arguments)) {
                    case let .success(requests): return .performed(requests)
                    case let .failure(reason): return .failed(reason)
                    }
                case .snapshot:
                    return .snapshotTaken(try instance.snapshot())
                case let .restore(bytes):
                    try instance.restore(bytes)
                    return .restored
                case .describe:
                    return .described(try instance.describe())
                case .active:
                    return .activeNodes(try instance.activeNodes())
                case .load:
                    return .failed(.invalidRequest(action: "", message: "the plugin is loaded already"))
                }
            } catch {
                return .failed(error)
            }
        }

        /// `text` if it fits in `limit` bytes; else its first whole characters and a note, within
        /// `limit` (cut inside a character, the text became empty, and the cut went unsaid).
        static func cut(_ text: String, to limit: Int) -> String {
            guard text.utf8.count > limit else { return text }
            let note = " … (cut at \(limit) bytes)"
            return text.prefix(utf8Bytes: limit - note.utf8.count) + note
        }

        private func load(path: String, options: Plugin.LoadOptions) -> PluginInstance? {
            do {
                let plugin = try Plugin.load(path: path, options: options)
                // The host limits the lines it passes on, and counts those it leaves out.
                let instance = try PluginInstance(plugin: plugin, log: { [self] line in
                    send(.log(Self.cut(line, to: WorkerProtocol.maxLogLineBytes)))
                }, limitsLogLines: false)
                send(.loaded(plugin.manifest))
                return instance
            } catch {
                send(.loadFailed(Self.cut(error.reason.description, to: WorkerProtocol.maxLoadFailureBytes)))
                return nil
            }
        }
    }
}
