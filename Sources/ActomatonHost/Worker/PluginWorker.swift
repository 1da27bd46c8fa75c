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

    /// The defaults: 4 GiB of address space, no CPU limit, 64 open files.
    public init(memoryBytes: UInt64 = 4 << 30, cpuSeconds: UInt64? = nil, openFiles: UInt64 = 64) {
        self.memoryBytes = memoryBytes
        self.cpuSeconds = cpuSeconds
        self.openFiles = openFiles
    }

    /// The arguments that hand these limits to a worker.
    var arguments: [String] {
        ["--memory", "\(memoryBytes)", "--files", "\(openFiles)"] + (cpuSeconds.map { ["--cpu", "\($0)"] } ?? [])
    }
}

/// The worker side of process isolation: what `actomaton-host worker` runs. It loads one
/// plugin, as the host would in-process, and serves the host's requests over descriptor 3
/// until the host closes it (see `WorkerProtocol`). Descriptors 0, 1 and 2 are /dev/null;
/// descriptor 4 is the lifeline (see `WorkerProcess`).
public enum PluginWorker {
    /// The descriptor of the worker's end of the socket pair.
    public static let channelDescriptor: Int32 = 3
    /// The descriptor of the lifeline pipe: it hangs up when the host process ends.
    public static let lifelineDescriptor: Int32 = 4

    /// Sets `PR_SET_NO_NEW_PRIVS`, which only the calling thread and the threads it starts
    /// afterwards get: the executable calls this first thing in worker mode, before anything
    /// starts a thread, so that no thread of the worker can gain privileges.
    public static func restrictBeforeThreads() {
        _ = actomaton_set_no_new_privileges()
    }

    /// Restricts the process, then serves the host; never returns.
    ///
    /// Call ``restrictBeforeThreads()`` first, before any other thread starts.
    ///
    /// - Parameters:
    ///   - parent: The host's process ID: the worker ends if the host is gone.
    ///   - limits: The resource limits to set.
    public static func run(parent: Int32, limits: WorkerLimits) -> Never {
        // Idempotent; covers this thread if the caller did not.
        restrictBeforeThreads()
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

        let server = Server(channel: WorkerChannel(descriptor: channelDescriptor))
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

        init(channel: WorkerChannel) {
            self.channel = channel
        }

        private func send(_ frame: FrameWriter) {
            let bytes = frame.finished()
            sendLock.withLock { _ in
                do { try channel.send(bytes) } catch { exit(0) } // the host is gone
            }
        }

        /// Serves until the host closes the socket; the exit status.
        func serve() -> Int32 {
            var hello = FrameWriter(.hello)
            hello.u32(WorkerProtocol.version)
            send(hello)
            var instance: PluginInstance?
            while true {
                let frame: (tag: WorkerProtocol.Tag, payload: [UInt8])
                do {
                    frame = try channel.receive(deadline: nil)
                } catch .closed {
                    return 0
                } catch {
                    return 2
                }
                var reader = FrameReader(payload: frame.payload)
                do {
                    switch frame.tag {
                    case .load:
                        let path = try reader.string(limit: 4096)
                        let entry = try reader.string(limit: 256)
                        let maxFileSize = Int64(clamping: try reader.u64())
                        let allowUntrusted = try reader.bool()
                        try reader.finish()
                        instance = load(path: path, options: .init(allowWritableByOthers: allowUntrusted, maxFileSize: maxFileSize, entrySymbol: entry))
                    case .perform:
                        let (name, arguments) = try reader.action()
                        try reader.finish()
                        guard let instance else { return 2 }
                        let outcome: PluginInstance.Outcome
                        do {
                            outcome = instance.perform(try instance.plugin.checkedAction(name, arguments))
                        } catch {
                            outcome = .failure(error)
                        }
                        switch outcome {
                        case let .success(requests):
                            var reply = FrameWriter(.performed)
                            reply.requests(requests)
                            send(reply)
                        case let .failure(reason):
                            sendFailure(reason)
                        }
                    case .snapshot:
                        try reader.finish()
                        guard let instance else { return 2 }
                        do {
                            var reply = FrameWriter(.snapshotTaken)
                            reply.data(try instance.snapshot())
                            send(reply)
                        } catch {
                            sendFailure(error)
                        }
                    case .restore:
                        let bytes = try reader.data(limit: PluginLimits.maxSnapshotBytes)
                        try reader.finish()
                        guard let instance else { return 2 }
                        do {
                            try instance.restore(bytes)
                            send(FrameWriter(.restored))
                        } catch {
                            sendFailure(error)
                        }
                    case .describe:
                        try reader.finish()
                        guard let instance else { return 2 }
                        do {
                            var reply = FrameWriter(.described)
                            reply.string(try instance.describe())
                            send(reply)
                        } catch {
                            sendFailure(error)
                        }
                    default:
                        return 2
                    }
                } catch {
                    return 2
                }
            }
        }

        private func sendFailure(_ reason: PluginCallError.Reason) {
            var reply = FrameWriter(.failed)
            reply.reason(reason)
            send(reply)
        }

        private func load(path: String, options: Plugin.LoadOptions) -> PluginInstance? {
            do {
                let plugin = try Plugin.load(path: path, options: options)
                let instance = try PluginInstance(plugin: plugin, log: { [self] line in
                    var frame = FrameWriter(.log)
                    frame.string(String(line.utf8.prefix(PluginLimits.maxMessageBytes + 64)) ?? "")
                    send(frame)
                })
                var reply = FrameWriter(.loaded)
                reply.manifest(plugin.manifest)
                send(reply)
                return instance
            } catch {
                var reply = FrameWriter(.loadFailed)
                reply.string(error.reason.description)
                send(reply)
                return nil
            }
        }
    }
}
