import CProcessControl
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How plugins run: in the host's process, or each in a worker process of its own.
public enum PluginIsolation: Sendable, Hashable {
    /// In the host's process: the fastest path, but a plugin that crashes takes the host down.
    case none
    /// Each plugin in a supervised worker process (see ``WorkerOptions``).
    case process(WorkerOptions)
}

/// How plugin workers are started, limited and supervised.
public struct WorkerOptions: Sendable, Hashable {
    /// The executable started as `EXECUTABLE worker …`: `actomaton-worker`, or
    /// `actomaton-host` (which has the same `worker` mode).
    public var executable: String
    /// The resource limits each worker sets on itself.
    public var limits: WorkerLimits
    /// How long an action (or a snapshot, a restore, a description) may take before the
    /// worker is killed.
    public var actionTimeout: Duration
    /// How long loading a plugin may take.
    public var loadTimeout: Duration
    /// After how many actions the host takes a snapshot; a restarted worker is restored from
    /// the last one and replays the actions since.
    public var snapshotInterval: Int
    /// How many restarts are allowed within ``restartWindow`` before the plugin is stopped.
    public var maxRestarts: Int
    /// See ``maxRestarts``.
    public var restartWindow: Duration

    /// Creates options; the defaults are what `actomaton-host serve` uses.
    public init(
        executable: String,
        limits: WorkerLimits = WorkerLimits(),
        actionTimeout: Duration = .seconds(2),
        loadTimeout: Duration = .seconds(10),
        snapshotInterval: Int = 16,
        maxRestarts: Int = 5,
        restartWindow: Duration = .seconds(60)
    ) {
        self.executable = executable
        self.limits = limits
        self.actionTimeout = actionTimeout
        self.loadTimeout = loadTimeout
        self.snapshotInterval = max(1, snapshotInterval)
        self.maxRestarts = maxRestarts
        self.restartWindow = restartWindow
    }
}

extension WorkerProcess {
    /// Makes the host undumpable, once, before its first worker starts.
    static let undumpable: Int32 = actomaton_set_undumpable()
}

/// One running worker process and the host's end of its socket.
///
/// What the host guarantees about a worker (see `actomaton_spawn_worker`):
/// - it reads /dev/null and writes to /dev/null: its logs reach the host only as frames;
/// - it leads a process group of its own, and the whole group is killed when the worker is
///   stopped or replaced, so what it forked goes with it (a fork that leaves the group with
///   `setpgid` or `setsid` escapes: only a PID namespace or a cgroup would hold it);
/// - it ends with the host process, whichever thread started it: it watches a lifeline pipe
///   whose write end only the host holds, and kills its group when that hangs up.
///   (`PR_SET_PDEATHSIG` is not used: it fires when the *thread* that started the worker
///   ends, and the host's threads come and go.)
final class WorkerProcess: @unchecked Sendable {
    let pid: pid_t
    let channel: WorkerChannel
    private var reaped: String?

    /// How long a worker that closed its connection may take to end before it is killed: the
    /// kernel closes a dying process's socket a moment before its status can be read.
    static let exitGrace: Duration = .seconds(2)

    private init(pid: pid_t, channel: WorkerChannel) {
        self.pid = pid
        self.channel = channel
    }

    deinit {
        _ = stop()
        SystemCall.close(channel.descriptor)
        if channel.processDescriptor >= 0 { SystemCall.close(channel.processDescriptor) }
    }

    /// Starts a worker for the plugin at `pluginPath` and waits for its greeting.
    static func start(_ options: WorkerOptions, pluginPath: String) throws(WorkerChannel.Failure) -> WorkerProcess {
        // A worker has no capability: undumpable, the host's /proc files (its memory, its
        // environment, its tokens) are closed to it.
        _ = WorkerProcess.undumpable
        let lifeline = actomaton_worker_lifeline()
        guard lifeline >= 0 else { throw .system("cannot make the workers' lifeline: \(systemMessage(-lifeline))") }
        var descriptors: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &descriptors) == 0 else {
            throw .system(systemMessage(errno))
        }
        let rings: SharedRings
        let ringsDescriptor: Int32
        switch SharedRings.makeForWorker() {
        case let .success(made): (ringsDescriptor, rings) = made
        case let .failure(error):
            close(descriptors[0])
            close(descriptors[1])
            throw .system("cannot make the memory shared with a worker: \(error)")
        }
        let arguments = ["actomaton-host"] + WorkerArguments.make(parent: getpid(), pluginPath: pluginPath, limits: options.limits)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let pid = actomaton_spawn_worker(options.executable, &argv, descriptors[1], lifeline, ringsDescriptor)
        close(descriptors[1])
        close(ringsDescriptor)
        guard pid > 0 else {
            close(descriptors[0])
            throw .system("cannot start \(options.executable): \(systemMessage(-pid))")
        }
        let process = actomaton_open_process(pid)
        let worker = WorkerProcess(pid: pid, channel: WorkerChannel(descriptor: descriptors[0], processDescriptor: process >= 0 ? process : -1,
                                                                    rings: rings))
        let greeting: WorkerReply
        do {
            greeting = try worker.channel.receiveReply(deadline: .now + options.loadTimeout, vocabulary: nil)
        } catch .closed {
            throw .ended(worker.stopAfterClosing())
        } catch .timedOut {
            // A worker of protocol 2 says hello on the socket, which is only a doorbell now; one
            // that says nothing was too slow to start (a loaded machine, a large plugin).
            let otherVersion = worker.channel.sawBytesOtherThanDoorbells()
            _ = worker.stop()
            throw .ended(otherVersion
                ? "did not say hello within \(seconds(options.loadTimeout)) and was killed: it wrote its frames on the socket, as "
                    + "workers before protocol \(WorkerProtocol.version) did (an actomaton-worker of another version than this host)"
                : "did not say hello within \(seconds(options.loadTimeout)) and was killed: it said nothing (too slow to start: a "
                    + "loaded machine, or a plugin whose loading takes that long)")
        }
        guard case let .hello(version) = greeting else { throw .violation(.init("the worker did not say hello")) }
        guard version == WorkerProtocol.version else {
            throw .violation(.init("the worker speaks protocol \(version), not \(WorkerProtocol.version)"))
        }
        return worker
    }

    /// Kills the worker's process group (if it still runs), reaps the worker and says how it
    /// ended: `crashed (SIGSEGV)`, `exited with status 42`, `was killed (SIGKILL)`.
    func stop() -> String {
        if let reaped { return reaped }
        // The group outlives a worker that ended (its zombie keeps the ID until reaped below).
        kill(-pid, SIGKILL)
        kill(pid, SIGKILL)
        // ECHILD (reaped already) reads as status 0, as it did before.
        let status = (try? SystemCall.waitForProcess(pid)) ?? 0
        let cause: String
        if status & 0x7F == 0 {
            let code = (status >> 8) & 0xFF
            switch code {
            case WorkerLimits.cannotRestrictStatus:
                cause = "exited with status \(code): it could not restrict itself (no seccomp filters in this kernel?), and runs no plugin unconfined"
            case WorkerLimits.cannotMapRingsStatus:
                cause = "exited with status \(code): it could not map the memory it shares with the host (an actomaton-worker of another version?)"
            case WorkerLimits.cannotConfineFilesStatus:
                cause = "exited with status \(code): it could not confine its plugin to its files (no Landlock in this kernel?); "
                    + "--worker-may-use-files runs plugins in workers without that rule"
            default:
                cause = "exited with status \(code)"
            }
        } else {
            let signal = status & 0x7F
            cause = signal == SIGKILL || signal == SIGTERM || signal == SIGINT || signal == SIGHUP
                ? "was killed (\(signalName(signal)))" : "crashed (\(signalName(signal)))"
        }
        reaped = cause
        return cause
    }

    /// After the worker closed its connection: how it ended, if it ends within ``exitGrace``
    /// (`crashed (SIGSEGV)`, `exited with status 0`); otherwise it is killed, and says so.
    func stopAfterClosing() -> String {
        if let reaped { return reaped }
        if actomaton_wait_for_exit(pid, Int32(clamping: Self.exitGrace.components.seconds * 1000)) == 1 { return stop() }
        _ = stop()
        let cause = "closed its connection and was killed"
        reaped = cause
        return cause
    }
}

/// `SIGSEGV`, `SIGABRT`, …
package func signalName(_ signal: Int32) -> String {
    switch signal {
    case SIGSEGV: "SIGSEGV"
    case SIGABRT: "SIGABRT"
    case SIGBUS: "SIGBUS"
    case SIGILL: "SIGILL"
    case SIGFPE: "SIGFPE"
    case SIGTRAP: "SIGTRAP"
    case SIGKILL: "SIGKILL"
    case SIGTERM: "SIGTERM"
    case SIGINT: "SIGINT"
    case SIGHUP: "SIGHUP"
    case SIGXCPU: "SIGXCPU, out of CPU time"
    case SIGSYS: "SIGSYS"
    default: "signal \(signal)"
    }
}
