import ActomatonPluginContract
import Synchronization

/// One plugin state that lives in a worker process, seen from the host: the same calls as a
/// ``PluginInstance``, each a round trip over the worker's socket, with supervision.
///
/// When the worker crashes, exits, breaks the protocol or misses the action deadline, the
/// call in progress fails with the cause, and the worker is replaced by the
/// ``SupervisedRecovery`` the WebAssembly runtime uses too: a new worker loads the plugin,
/// restores the last snapshot (taken every ``WorkerOptions/snapshotInterval`` actions) and
/// replays the actions completed since; or the plugin is stopped when it cannot be rebuilt
/// exactly, or fails more than ``WorkerOptions/maxRestarts`` times within
/// ``WorkerOptions/restartWindow``, and every later call says so.
///
/// Like a ``PluginInstance`` it is confined to its machine: one call at a time. Its calls
/// block on the worker's socket (``callsBlock``), so its machine runs on a thread of its own.
final class IsolatedInstance: PluginRuntime, @unchecked Sendable {
    /// The plugin: its manifest and vocabulary; its library lives in the worker.
    let plugin: Plugin
    private let options: WorkerOptions
    private let loadOptions: Plugin.LoadOptions
    private let log: @Sendable (String) -> Void
    /// The effects running or waiting on the machine: the worker cannot see them, so the
    /// limit is checked here.
    private let effectBudget: EffectBudget
    /// `nil` once the plugin is stopped.
    private var worker: WorkerProcess?
    private var recovery: SupervisedRecovery

    private init(plugin: Plugin, worker: WorkerProcess, options: WorkerOptions, loadOptions: Plugin.LoadOptions,
                 log: @escaping @Sendable (String) -> Void, effectBudget: EffectBudget) {
        self.plugin = plugin
        self.worker = worker
        self.options = options
        self.loadOptions = loadOptions
        self.log = log
        self.effectBudget = effectBudget
        recovery = SupervisedRecovery(snapshotInterval: options.snapshotInterval, maxRestarts: options.maxRestarts,
                                      restartWindow: options.restartWindow)
    }

    /// Starts a worker, has it load the plugin at `path`, and returns the state it created.
    static func start(path: String, loadOptions: Plugin.LoadOptions, options: WorkerOptions, log: (@Sendable (String) -> Void)?,
                      effectBudget: EffectBudget = EffectBudget(limit: .max)) throws(PluginLoadError) -> IsolatedInstance {
        let identity = PluginFile.identity(of: path)
        // The worker reports the plugin's name with its manifest: log lines before it say "plugin".
        let name = Mutex("plugin")
        let sink = log ?? { line in printToStandardError("[\(name.withLock { $0 })] \(line)") }
        let (worker, manifest) = try launch(path: path, loadOptions: loadOptions, options: options, log: sink)
        name.withLock { $0 = manifest.name }
        guard let identity else { throw PluginLoadError(.fileNotFound, at: path) }
        let plugin = Plugin(path: path, manifest: manifest, fileIdentity: identity, code: .inWorker)
        return IsolatedInstance(plugin: plugin, worker: worker, options: options, loadOptions: loadOptions, log: sink, effectBudget: effectBudget)
    }

    /// A call blocks until the worker answers, up to the action deadline.
    var callsBlock: Bool { true }

    /// A worker with the plugin loaded, and the manifest it reported.
    private static func launch(path: String, loadOptions: Plugin.LoadOptions, options: WorkerOptions,
                               log: @escaping @Sendable (String) -> Void) throws(PluginLoadError) -> (WorkerProcess, PluginManifest) {
        let worker: WorkerProcess
        do {
            worker = try WorkerProcess.start(options)
        } catch {
            throw PluginLoadError(.workerFailed(describe(error, of: nil, timeout: options.loadTimeout)), at: path)
        }
        var load = FrameWriter(.load)
        load.string(path)
        load.string(loadOptions.entrySymbol)
        load.u64(UInt64(loadOptions.maxFileSize))
        load.bool(loadOptions.allowWritableByOthers)
        let answer: Result<PluginManifest, PluginLoadError>
        do throws(WorkerChannel.Failure) {
            try worker.channel.send(load.finished())
            let (tag, payload) = try receiveReply(from: worker, deadline: .now + options.loadTimeout, log: log)
            var reader = FrameReader(payload: payload)
            switch tag {
            case .loaded:
                answer = .success(try wrap { () throws(WorkerProtocol.Violation) in
                    let manifest = try reader.manifest()
                    try reader.finish()
                    return manifest
                })
            case .loadFailed:
                let message = try wrap { () throws(WorkerProtocol.Violation) in try reader.string(limit: 4096) }
                answer = .failure(PluginLoadError(.reportedByWorker(message), at: path))
            default:
                throw WorkerChannel.Failure.violation(.init("a \(tag) frame answered load"))
            }
        } catch {
            throw PluginLoadError(.workerFailed(describe(error, of: worker, timeout: options.loadTimeout)), at: path)
        }
        return (worker, try answer.get())
    }

    // MARK: Calls

    /// Runs `action` in the worker.
    func perform(_ action: PluginAction) -> PluginInstance.Outcome {
        let result = call("'\(action)'") { writer in
            writer = FrameWriter(.perform)
            writer.action(name: action.name, arguments: action.arguments)
        } reply: { tag, reader throws(WorkerProtocol.Violation) -> PluginInstance.Outcome in
            switch tag {
            case .performed: return .success(try reader.requests(checkedAgainst: plugin))
            case .failed: return .failure(try reader.reason())
            default: throw WorkerProtocol.Violation("a \(tag) frame answered perform")
            }
        }
        switch result {
        case let .success(.success(requests)):
            let timed = requests.count { if case .delayed = $0 { true } else if case .repeating = $0 { true } else { false } }
            if timed > 0 && effectBudget.count + timed > effectBudget.limit {
                return .failure(.effectLimitReached(action: action.description, limit: effectBudget.limit))
            }
            completed(action)
            return .success(requests)
        case let .success(failure):
            return failure
        case let .failure(reason):
            return .failure(reason)
        }
    }

    /// The plugin's snapshot of its state.
    func snapshot() throws(PluginCallError.Reason) -> [UInt8] {
        let result = call("the snapshot") { writer in
            writer = FrameWriter(.snapshot)
        } reply: { tag, reader throws(WorkerProtocol.Violation) -> Result<[UInt8], PluginCallError.Reason> in
            switch tag {
            case .snapshotTaken: return .success(try reader.data(limit: PluginLimits.maxSnapshotBytes))
            case .failed: return .failure(try reader.reason())
            default: throw WorkerProtocol.Violation("a \(tag) frame answered snapshot")
            }
        }
        let bytes = try result.get().get()
        recovery.stateIs(bytes)
        return bytes
    }

    /// Replaces the state with one read from `bytes`.
    func restore(_ bytes: [UInt8]) throws(PluginCallError.Reason) {
        let result = call("the restore") { writer in
            writer = FrameWriter(.restore)
            writer.data(bytes)
        } reply: { tag, reader throws(WorkerProtocol.Violation) -> Result<Void, PluginCallError.Reason> in
            switch tag {
            case .restored: return .success(())
            case .failed: return .failure(try reader.reason())
            default: throw WorkerProtocol.Violation("a \(tag) frame answered restore")
            }
        }
        try result.get().get()
        recovery.stateIs(bytes)
    }

    /// The plugin's description of its state.
    func describe() throws(PluginCallError.Reason) -> String {
        let result = call("the description") { writer in
            writer = FrameWriter(.describe)
        } reply: { tag, reader throws(WorkerProtocol.Violation) -> Result<String, PluginCallError.Reason> in
            switch tag {
            case .described: return .success(try reader.string(limit: PluginLimits.maxDescriptionBytes))
            case .failed: return .failure(try reader.reason())
            default: throw WorkerProtocol.Violation("a \(tag) frame answered describe")
            }
        }
        return try result.get().get()
    }

    /// The worker's process ID, if one runs (for tests that kill it from outside).
    var workerProcessID: Int32? { worker?.pid }

    // MARK: Supervision

    /// One round trip: sends what `request` writes, reads the answer with `reply`. When the
    /// worker fails, recovers and returns why the call failed.
    private func call<T>(
        _ what: String,
        request: (inout FrameWriter) -> Void,
        reply: (WorkerProtocol.Tag, inout FrameReader) throws(WorkerProtocol.Violation) -> T
    ) -> Result<T, PluginCallError.Reason> {
        guard let worker else { return .failure(recovery.stopped ?? .pluginStopped("its worker could not be restarted")) }
        var writer = FrameWriter(.describe)
        request(&writer)
        do throws(WorkerChannel.Failure) {
            try worker.channel.send(writer.finished())
            let (tag, payload) = try Self.receiveReply(from: worker, deadline: .now + options.actionTimeout, log: log)
            var reader = FrameReader(payload: payload)
            let value = try Self.wrap { () throws(WorkerProtocol.Violation) in
                let value = try reply(tag, &reader)
                try reader.finish()
                return value
            }
            return .success(value)
        } catch {
            let cause = Self.describe(error, of: worker, timeout: options.actionTimeout)
            return .failure(.workerFailed(call: what, cause: cause, recovery: recover()))
        }
    }

    /// Counts a completed action; takes a snapshot every ``WorkerOptions/snapshotInterval``.
    private func completed(_ action: PluginAction) {
        guard recovery.completed(action) else { return }
        // A failure here was handled by `call`; the actions stay for a replay.
        do { _ = try snapshot() } catch {
            // The host's own finding, not the plugin's log: an error line of its own.
            printToStandardError("error: plugin \(plugin.name): the snapshot after '\(action)' failed: \(error); "
                                 + "the actions since the last one are kept for a replay")
        }
    }

    /// Replaces the failed worker (``SupervisedRecovery``), or stops the plugin; says which.
    private func recover() -> String {
        worker = nil
        let (path, loadOptions, options, log) = (plugin.path, self.loadOptions, self.options, self.log)
        let (replacement, words) = recovery.recover(
            rebuiltWords: "restarted from its last state",
            start: { () throws(PluginLoadError) in try Self.launch(path: path, loadOptions: loadOptions, options: options, log: log).0 },
            restore: { (worker: WorkerProcess, bytes) throws(PluginCallError.Reason) in
                try Self.roundTrip(worker, options: options, log: log, expecting: .restored) { $0 = FrameWriter(.restore); $0.data(bytes) }
            },
            replay: { (worker: WorkerProcess, action) throws(PluginCallError.Reason) in
                // Effects were started the first time; a replay only rebuilds the state.
                try Self.roundTrip(worker, options: options, log: log, expecting: .performed) { writer in
                    writer = FrameWriter(.perform)
                    writer.action(name: action.name, arguments: action.arguments)
                }
            }
        )
        if replacement == nil { _ = worker?.stop() }
        worker = replacement
        return words
    }

    /// One request to a new worker during a rebuild; throws unless it answers with `expected`.
    private static func roundTrip(_ worker: WorkerProcess, options: WorkerOptions, log: @Sendable (String) -> Void,
                                  expecting expected: WorkerProtocol.Tag, request: (inout FrameWriter) -> Void) throws(PluginCallError.Reason) {
        var writer = FrameWriter(.describe)
        request(&writer)
        let tag: WorkerProtocol.Tag
        var reader: FrameReader
        do throws(WorkerChannel.Failure) {
            try worker.channel.send(writer.finished())
            let reply = try receiveReply(from: worker, deadline: .now + options.actionTimeout, log: log)
            (tag, reader) = (reply.0, FrameReader(payload: reply.1))
        } catch {
            throw .workerFailed(call: "a call", cause: describe(error, of: worker, timeout: options.actionTimeout), recovery: "not retried")
        }
        if tag == expected { return }
        if tag == .failed, let reason = try? reader.reason() { throw reason }
        _ = worker.stop()
        throw .workerFailed(call: "a call", cause: "broke the worker protocol (a \(tag) frame answered) and was killed", recovery: "not retried")
    }

    /// The next frame that is not a log line; log lines go to `log` on the way.
    private static func receiveReply(from worker: WorkerProcess, deadline: ContinuousClock.Instant,
                                     log: @Sendable (String) -> Void) throws(WorkerChannel.Failure) -> (WorkerProtocol.Tag, [UInt8]) {
        while true {
            let (tag, payload) = try worker.channel.receive(deadline: deadline)
            guard tag == .log else { return (tag, payload) }
            var reader = FrameReader(payload: payload)
            let line = try wrap { () throws(WorkerProtocol.Violation) in try reader.string(limit: PluginLimits.maxMessageBytes + 64) }
            log(line)
        }
    }

    private static func wrap<T>(_ body: () throws(WorkerProtocol.Violation) -> T) throws(WorkerChannel.Failure) -> T {
        do { return try body() } catch { throw .violation(error) }
    }

    /// What happened to the worker, in words: `crashed (SIGSEGV)`, `did not answer within 2s`.
    private static func describe(_ failure: WorkerChannel.Failure, of worker: WorkerProcess?, timeout: Duration) -> String {
        switch failure {
        case .closed:
            return worker?.stopAfterClosing() ?? "closed its connection"
        case let .ended(how):
            return how
        case .timedOut:
            _ = worker?.stop()
            return "did not answer within \(seconds(timeout)) and was killed"
        case let .violation(violation):
            _ = worker?.stop()
            return "broke the worker protocol (\(violation)) and was killed"
        case let .system(message):
            _ = worker?.stop()
            return "could not be reached (\(message))"
        }
    }
}
