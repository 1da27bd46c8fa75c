import ActomatonPluginContract

/// One plugin state that lives in a worker process, seen from the host: the same calls as a
/// ``PluginInstance``, each a round trip over the worker's socket, with supervision.
///
/// When the worker crashes, exits, breaks the protocol or misses the action deadline, the
/// call in progress fails with the cause, and the worker is replaced: a new one loads the
/// plugin, restores the last snapshot and replays the actions completed since (their effects
/// are not started again: they already were). The host takes a snapshot every
/// ``WorkerOptions/snapshotInterval`` actions, so a replay is at most that long. A plugin that
/// fails more than ``WorkerOptions/maxRestarts`` times within ``WorkerOptions/restartWindow``
/// is stopped instead, and every later call says so.
///
/// Like a ``PluginInstance`` it is confined to its machine's actor: one call at a time.
final class IsolatedInstance: @unchecked Sendable {
    /// The plugin: its manifest and vocabulary; its library lives in the worker.
    let plugin: Plugin
    private let options: WorkerOptions
    private let loadOptions: Plugin.LoadOptions
    private let log: @Sendable (String) -> Void
    private var worker: WorkerProcess?
    /// The state to restart from (`nil`: the state `create` makes), and the actions since.
    private var lastSnapshot: [UInt8]?
    private var actionsSinceSnapshot: [PluginAction] = []
    private var restarts: [ContinuousClock.Instant] = []
    private var stoppedBecause: String?

    private init(plugin: Plugin, worker: WorkerProcess, options: WorkerOptions, loadOptions: Plugin.LoadOptions,
                 log: @escaping @Sendable (String) -> Void) {
        self.plugin = plugin
        self.worker = worker
        self.options = options
        self.loadOptions = loadOptions
        self.log = log
    }

    /// Starts a worker, has it load the plugin at `path`, and returns the state it created.
    static func start(path: String, loadOptions: Plugin.LoadOptions, options: WorkerOptions,
                      log: @escaping @Sendable (String) -> Void) throws(PluginLoadError) -> IsolatedInstance {
        let identity = PluginFile.identity(of: path)
        let (worker, manifest) = try launch(path: path, loadOptions: loadOptions, options: options, log: log)
        guard let identity else { throw PluginLoadError(.fileNotFound, at: path) }
        let plugin = Plugin(path: path, manifest: manifest, fileIdentity: identity, actions: [], functions: nil)
        return IsolatedInstance(plugin: plugin, worker: worker, options: options, loadOptions: loadOptions, log: log)
    }

    /// A worker with the plugin loaded, and the manifest it reported.
    private static func launch(path: String, loadOptions: Plugin.LoadOptions, options: WorkerOptions,
                               log: @escaping @Sendable (String) -> Void) throws(PluginLoadError) -> (WorkerProcess, PluginManifest) {
        let worker: WorkerProcess
        do {
            worker = try WorkerProcess.start(options)
        } catch {
            throw PluginLoadError(.workerFailed(describe(error, of: nil, timeout: options.loadTimeout)), at: path)
        }
        let load = WorkerRequest.load(path: path, entrySymbol: loadOptions.entrySymbol, maxFileSize: loadOptions.maxFileSize,
                                      allowWritableByOthers: loadOptions.allowWritableByOthers)
        let answer: Result<PluginManifest, PluginLoadError>
        do throws(WorkerChannel.Failure) {
            switch try roundTrip(load, on: worker, vocabulary: nil, deadline: .now + options.loadTimeout, log: log) {
            case let .loaded(manifest): answer = .success(manifest)
            case let .loadFailed(message): answer = .failure(PluginLoadError(.reportedByWorker(message), at: path))
            case let other: throw .violation(.unexpected(other, answering: .load))
            }
        } catch {
            throw PluginLoadError(.workerFailed(describe(error, of: worker, timeout: options.loadTimeout)), at: path)
        }
        return (worker, try answer.get())
    }

    // MARK: Calls

    /// Runs `action` in the worker.
    func perform(_ action: PluginAction) -> PluginInstance.Outcome {
        let result = call("'\(action)'", .perform(name: action.name, arguments: action.arguments)) { reply throws(WorkerProtocol.Violation) in
            switch reply {
            case let .performed(requests): return PluginInstance.Outcome.success(requests)
            case let .failed(reason): return .failure(reason)
            default: throw .unexpected(reply, answering: .perform)
            }
        }
        switch result {
        case let .success(outcome):
            if case .success = outcome { completed(action) }
            return outcome
        case let .failure(reason):
            return .failure(reason)
        }
    }

    /// The plugin's snapshot of its state.
    func snapshot() throws(PluginCallError.Reason) -> [UInt8] {
        let result = call("the snapshot", .snapshot) { reply throws(WorkerProtocol.Violation) in
            switch reply {
            case let .snapshotTaken(bytes): return Result<[UInt8], PluginCallError.Reason>.success(bytes)
            case let .failed(reason): return .failure(reason)
            default: throw .unexpected(reply, answering: .snapshot)
            }
        }
        let bytes = try result.get().get()
        lastSnapshot = bytes
        actionsSinceSnapshot.removeAll(keepingCapacity: true)
        return bytes
    }

    /// Replaces the state with one read from `bytes`.
    func restore(_ bytes: [UInt8]) throws(PluginCallError.Reason) {
        let result = call("the restore", .restore(bytes)) { reply throws(WorkerProtocol.Violation) in
            switch reply {
            case .restored: return Result<Void, PluginCallError.Reason>.success(())
            case let .failed(reason): return .failure(reason)
            default: throw .unexpected(reply, answering: .restore)
            }
        }
        try result.get().get()
        lastSnapshot = bytes
        actionsSinceSnapshot.removeAll(keepingCapacity: true)
    }

    /// The plugin's description of its state.
    func describe() throws(PluginCallError.Reason) -> String {
        let result = call("the description", .describe) { reply throws(WorkerProtocol.Violation) in
            switch reply {
            case let .described(text): return Result<String, PluginCallError.Reason>.success(text)
            case let .failed(reason): return .failure(reason)
            default: throw .unexpected(reply, answering: .describe)
            }
        }
        return try result.get().get()
    }

    /// One round trip with the current worker: sends `request` and returns its reply; log lines
    /// on the way go to the log. Throws when there is no worker (`closed`) or it fails; the
    /// caller decides what a failure means for the worker (see `describe(_:of:timeout:)`).
    func roundTrip(_ request: WorkerRequest, deadline: ContinuousClock.Instant) throws(WorkerChannel.Failure) -> WorkerReply {
        guard let worker else { throw .closed }
        return try Self.roundTrip(request, on: worker, vocabulary: plugin, deadline: deadline, log: log)
    }

    /// The worker's process ID, if one runs (for tests that kill it from outside).
    var workerProcessID: Int32? { worker?.pid }

    // MARK: Supervision

    /// One round trip: sends `request`, reads the answer with `reply`. When the worker fails,
    /// recovers and returns why the call failed.
    private func call<T>(
        _ what: String,
        _ request: WorkerRequest,
        reply: (WorkerReply) throws(WorkerProtocol.Violation) -> T
    ) -> Result<T, PluginCallError.Reason> {
        if let stoppedBecause { return .failure(.pluginStopped(stoppedBecause)) }
        guard let worker else { return .failure(.pluginStopped("its worker could not be restarted")) }
        do throws(WorkerChannel.Failure) {
            let answer = try roundTrip(request, deadline: .now + options.actionTimeout)
            do { return .success(try reply(answer)) } catch { throw .violation(error) }
        } catch {
            let cause = Self.describe(error, of: worker, timeout: options.actionTimeout)
            return .failure(.workerFailed(call: what, cause: cause, recovery: recover()))
        }
    }

    /// Counts a completed action; takes a snapshot every ``WorkerOptions/snapshotInterval``.
    private func completed(_ action: PluginAction) {
        actionsSinceSnapshot.append(action)
        if actionsSinceSnapshot.count >= options.snapshotInterval {
            // A failure here was handled (and logged) by `call`; the actions stay for a replay.
            do { _ = try snapshot() } catch {
                // The host's own finding, not the plugin's log: an error line of its own.
                printToStandardError("error: plugin \(plugin.name): the snapshot after '\(action)' failed: \(error); "
                                     + "the actions since the last one are kept for a replay")
            }
        }
    }

    /// Replaces the failed worker, or stops the plugin; says which.
    private func recover() -> String {
        worker = nil
        let now = ContinuousClock.now
        restarts.append(now)
        restarts.removeAll { $0.duration(to: now) > options.restartWindow }
        if restarts.count > options.maxRestarts {
            let why = "it failed \(restarts.count) times within \(seconds(options.restartWindow))"
            stoppedBecause = why
            return "stopped, \(why)"
        }
        do {
            let (replacement, _) = try Self.launch(path: plugin.path, loadOptions: loadOptions, options: options, log: log)
            worker = replacement
            if let lastSnapshot { try restoreSilently(lastSnapshot) }
            for action in actionsSinceSnapshot {
                // Effects were started the first time; a replay only rebuilds the state.
                guard case .success = perform(action, replaying: true) else { throw RestartFailure() }
            }
            return "restarted from its last state"
        } catch {
            worker = nil
            stoppedBecause = "it could not be restarted"
            return "stopped, it could not be restarted"
        }
    }

    private struct RestartFailure: Error {}

    private func restoreSilently(_ bytes: [UInt8]) throws(RestartFailure) {
        guard let worker else { throw RestartFailure() }
        do {
            guard case .restored = try Self.roundTrip(.restore(bytes), on: worker, vocabulary: plugin,
                                                      deadline: .now + options.actionTimeout, log: log) else { throw RestartFailure() }
        } catch {
            throw RestartFailure()
        }
    }

    private func perform(_ action: PluginAction, replaying: Bool) -> Result<Void, RestartFailure> {
        guard let worker else { return .failure(RestartFailure()) }
        do {
            let reply = try Self.roundTrip(.perform(name: action.name, arguments: action.arguments), on: worker, vocabulary: plugin,
                                           deadline: .now + options.actionTimeout, log: log)
            guard case .performed = reply else { return .failure(RestartFailure()) }
            return .success(())
        } catch {
            return .failure(RestartFailure())
        }
    }

    /// Sends `request` to `worker` and returns the first reply that is not a log line; log
    /// lines go to `log` on the way.
    private static func roundTrip(_ request: WorkerRequest, on worker: WorkerProcess, vocabulary plugin: Plugin?,
                                  deadline: ContinuousClock.Instant, log: @Sendable (String) -> Void) throws(WorkerChannel.Failure) -> WorkerReply {
        try worker.channel.send(request)
        while true {
            let reply = try worker.channel.receiveReply(deadline: deadline, vocabulary: plugin)
            guard case let .log(line) = reply else { return reply }
            log(line)
        }
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
