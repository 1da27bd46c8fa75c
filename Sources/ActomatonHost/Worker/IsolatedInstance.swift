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
    private var worker: WorkerProcess? {
        didSet { publishIdleWatch() }
    }
    private var recovery: SupervisedRecovery
    /// Sets what the machine's thread reads while the machine is idle: the worker's log lines
    /// between two calls, which a thread the plugin started may write at any time. Set by the
    /// machine that runs on that thread; without it, such lines wait for the next call.
    var idleWatcher: (@Sendable (BlockingQueue.IdleWatch?) -> Void)? {
        didSet { publishIdleWatch() }
    }
    /// How the worker failed while the machine was idle; the next call reports it.
    private var idleFailure: String?
    /// Whether each action is followed, in the same round trip, by the description of the
    /// state it leaves (and its active nodes, when the plugin names any): set by a machine
    /// whose transitions carry them, which asks for them right after each action.
    var prefetchesDescriptions = false
    /// The description and active nodes read with the last action, for the ``describe()`` and
    /// ``activeNodes()`` right after it; an action, a restore or a recovery drops them.
    private var prefetched = Prefetched()
    /// How the worker failed on a request sent after an action, until ``perform(_:)`` recovers.
    private var followUpFailure: String?
    /// How many actions a rebuild would replay now (for tests).
    var actionsSinceSnapshot: Int { recovery.actionsSinceSnapshot.count }
    /// How many round trips calls have made with workers (for tests).
    private(set) var roundTrips = 0

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
                      effectBudget: EffectBudget = EffectBudget.unlimited()) throws(PluginLoadError) -> IsolatedInstance {
        let identity = PluginFile.identity(of: path)
        // The worker reports the plugin's name with its manifest: log lines before it say "plugin".
        let name = Mutex("plugin")
        let sink = limitingLogLines(log ?? { line in printToStandardError("[\(name.withLock { $0 })] \(line)") })
        let (worker, manifest) = try launch(path: path, loadOptions: loadOptions, options: options, log: sink)
        name.withLock { $0 = manifest.name }
        guard let identity else { throw PluginLoadError(.fileNotFound, at: path) }
        let plugin = Plugin(path: path, manifest: manifest, fileIdentity: identity, code: .inWorker)
        return IsolatedInstance(plugin: plugin, worker: worker, options: options, loadOptions: loadOptions, log: sink, effectBudget: effectBudget)
    }

    /// A call blocks until the worker answers, up to the action deadline.
    var callsBlock: Bool { true }

    /// A crashed worker's state is rebuilt from the last snapshot.
    var rebuildsFromSnapshots: Bool { true }

    /// A worker with the plugin loaded, and the manifest it reported.
    private static func launch(path: String, loadOptions: Plugin.LoadOptions, options: WorkerOptions,
                               log: @escaping @Sendable (String) -> Void) throws(PluginLoadError) -> (WorkerProcess, PluginManifest) {
        // Judged here too: the worker's sandbox answered a directory with "Permission denied".
        if let kind = PluginFile.kindUnlessRegular(path) { throw PluginLoadError(.notARegularFile(kind: kind), at: path) }
        let worker: WorkerProcess
        do {
            worker = try WorkerProcess.start(options, pluginPath: path)
        } catch {
            throw PluginLoadError(.workerFailed(describe(error, of: nil, timeout: options.loadTimeout)), at: path)
        }
        let load = WorkerRequest.load(path: path, entrySymbol: loadOptions.entrySymbol, maxFileSize: loadOptions.maxFileSize,
                                      allowWritableByOthers: loadOptions.allowWritableByOthers)
        let answer: Result<PluginManifest, PluginLoadError>
        do throws(WorkerChannel.Failure) {
            switch try roundTrip(load, on: worker, vocabulary: nil, deadline: .now + options.loadTimeout, log: log) {
            case let .loaded(manifest): answer = .success(manifest)
            case let .loadFailed(message):
                let outOfMemory = ["failed to map", "allocate memory"].contains { message.lowercased().contains($0) }
                answer = .failure(PluginLoadError(.reportedByWorker(message + (outOfMemory ? memoryHint(options) : "")), at: path))
            case let other: throw .violation(.unexpected(other, answering: .load))
            }
        } catch {
            throw PluginLoadError(.workerFailed(describe(error, of: worker, timeout: options.loadTimeout) + memoryHint(options)), at: path)
        }
        return (worker, try answer.get())
    }

    /// Below this address space, a worker that fails to load its plugin is told it may lack room.
    static let memoryHintBelow: UInt64 = 1 << 30

    /// What a load failure adds under a small address space: a worker killed or refused while
    /// loading under 96 MiB said only "crashed (SIGABRT)" or "failed to map segment".
    private static func memoryHint(_ options: WorkerOptions) -> String {
        let bytes = options.limits.memoryBytes
        guard bytes < memoryHintBelow else { return "" }
        return "; the worker's address space is limited to \(bytes >> 20) MiB, which may be too little for this plugin "
            + "(--worker-memory)"
    }

    // MARK: Calls

    /// Runs `action` in the worker; with ``prefetchesDescriptions``, asks for the description
    /// (and active nodes) in the same round trip: the worker answers them in turn.
    func perform(_ action: PluginAction) -> PluginInstance.Outcome {
        prefetched = Prefetched()
        var followedBy: [WorkerRequest] = []
        if prefetchesDescriptions {
            followedBy.append(.describe)
            if plugin.manifest.namesActiveNodes { followedBy.append(.active) }
        }
        let result = call("'\(action)'", .perform(name: action.name, arguments: action.arguments),
                          followedBy: followedBy) { reply throws(WorkerProtocol.Violation) in
            switch reply {
            case let .performed(requests): return PluginInstance.Outcome.success(requests)
            case let .failed(reason): return .failure(reason)
            default: throw .unexpected(reply, answering: .perform)
            }
        }
        var outcome: PluginInstance.Outcome
        var snapshotDue = false
        switch result {
        case let .success(.success(requests)):
            outcome = .success(requests)
            // The worker's budget is not the machine's: what is pending is checked here, request
            // by request as in process, so the first one past a limit is named alike.
            var (timed, bytes) = (0, 0)
            for request in requests where request.isTimed {
                (timed, bytes) = (timed + 1, bytes + request.carriedBytes)
                if let refusal = effectBudget.refusal(adding: timed, bytes: bytes) {
                    outcome = .failure(refusal.failure(of: action))
                    break
                }
            }
            if case .success = outcome { snapshotDue = recovery.completed(action) }
        case let .success(failure):
            outcome = failure
        case let .failure(reason):
            outcome = .failure(reason)
        }
        if let cause = followUpFailure {
            // The worker answered the action, then failed on what followed it: rebuilt now, the
            // action included, and the next describe (or active nodes) says how.
            followUpFailure = nil
            // What was answered before the failure describes the rebuilt state as well.
            let answered = prefetched
            let words = recover()
            prefetched = answered
            prefetched.fail(cause, recovery: words)
        }
        if snapshotDue, worker != nil { takeSnapshot(after: action) }
        return outcome
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
        recovery.stateIs(bytes)
        return bytes
    }

    /// Replaces the state with one read from `bytes`.
    func restore(_ bytes: [UInt8]) throws(PluginCallError.Reason) {
        prefetched = Prefetched()
        let result = call("the restore", .restore(bytes)) { reply throws(WorkerProtocol.Violation) in
            switch reply {
            case .restored: return Result<Void, PluginCallError.Reason>.success(())
            case let .failed(reason): return .failure(reason)
            default: throw .unexpected(reply, answering: .restore)
            }
        }
        try result.get().get()
        recovery.stateIs(bytes)
    }

    /// The plugin's description of its state.
    func describe() throws(PluginCallError.Reason) -> String {
        if let description = prefetched.description {
            prefetched.description = nil
            return try description.get()
        }
        let result = call("the description", .describe) { reply throws(WorkerProtocol.Violation) in
            switch reply {
            case let .described(text): return Result<String, PluginCallError.Reason>.success(text)
            case let .failed(reason): return .failure(reason)
            default: throw .unexpected(reply, answering: .describe)
            }
        }
        return try result.get().get()
    }

    /// The names of the diagram's nodes active in the plugin's state, checked again here;
    /// `nil`, without a round trip, when the plugin names none.
    func activeNodes() throws(PluginCallError.Reason) -> [String]? {
        guard plugin.manifest.namesActiveNodes else { return nil }
        if let names = prefetched.activeNodes {
            prefetched.activeNodes = nil
            return try names.get()
        }
        let result = call("the active nodes", .active) { reply throws(WorkerProtocol.Violation) in
            switch reply {
            case let .activeNodes(names): return Result<[String]?, PluginCallError.Reason>.success(names)
            case let .failed(reason): return .failure(reason)
            default: throw .unexpected(reply, answering: .active)
            }
        }
        return try result.get().get()
    }

    /// The worker's process ID, if one runs (for tests that kill it from outside).
    var workerProcessID: Int32? { worker?.pid }

    // MARK: Supervision

    /// One round trip: sends `request`, reads the answer with `reply`. When the worker fails,
    /// recovers and returns why the call failed.
    ///
    /// `followedBy` (a description, active nodes) are sent with `request` and answered after
    /// it, into ``prefetched``. The call's outcome is `request`'s alone: when the worker fails
    /// on one of them, ``followUpFailure`` says how, for ``perform(_:)`` to recover.
    private func call<T>(
        _ what: String,
        _ request: WorkerRequest,
        followedBy: [WorkerRequest] = [],
        reply: (WorkerReply) throws(WorkerProtocol.Violation) -> T
    ) -> Result<T, PluginCallError.Reason> {
        guard let worker else { return .failure(recovery.stopped ?? .pluginStopped("its worker could not be restarted")) }
        if let cause = idleFailure {
            idleFailure = nil
            return .failure(.workerFailed(call: what, cause: cause, recovery: recover()))
        }
        let answered: T
        roundTrips += 1
        do throws(WorkerChannel.Failure) {
            let answer = try Self.roundTrip(request, followedBy: followedBy, on: worker, vocabulary: plugin,
                                            deadline: .now + options.actionTimeout, log: log)
            do { answered = try reply(answer) } catch { throw .violation(error) }
        } catch {
            let cause = Self.describe(error, of: worker, timeout: options.actionTimeout)
            return .failure(.workerFailed(call: what, cause: cause, recovery: recover()))
        }
        for request in followedBy {
            do throws(WorkerChannel.Failure) {
                let answer = try Self.nextReply(on: worker, vocabulary: plugin, deadline: .now + options.actionTimeout, log: log)
                do { try prefetched.keep(answer, answering: request) } catch { throw .violation(error) }
            } catch {
                followUpFailure = Self.describe(error, of: worker, timeout: options.actionTimeout)
                break
            }
        }
        return .success(answered)
    }

    /// Takes the snapshot due after `action` (every ``WorkerOptions/snapshotInterval`` completed
    /// actions).
    private func takeSnapshot(after action: PluginAction) {
        // A failure here was handled by `call`; the actions stay for a replay.
        do { _ = try snapshot() } catch {
            // The host's own finding, not the plugin's log: an error line of its own.
            let kept = recovery.snapshotFailed()
            if recovery.stopped != nil { worker = nil }
            HostErrorLines.report(SupervisedRecovery.snapshotFailureLine(plugin: plugin.name, after: action, error: error, kept: kept))
        }
    }

    // MARK: Between calls

    /// Hands the machine's thread a watch of the current worker's socket (or none).
    private func publishIdleWatch() {
        guard let idleWatcher else { return }
        guard let worker else { return idleWatcher(nil) }
        let channel = worker.channel
        idleWatcher(BlockingQueue.IdleWatch(
            descriptor: channel.descriptor,
            // A frame put while the host still said it spun rang no doorbell: the ring is looked at.
            isPending: { channel.holdsWholeFrame || channel.ringHoldsBytes },
            handle: { [weak self] in self?.readWhileIdle(from: worker) ?? false }
        ))
    }

    /// On the machine's thread, between two calls: passes on the log lines `expected` sent,
    /// up to a bounded number at a time. Anything else ends the worker; the next call says how.
    /// `false` once the watch is over.
    private func readWhileIdle(from expected: WorkerProcess) -> Bool {
        guard let worker, worker === expected, idleFailure == nil else { return false }
        for _ in 0..<Self.linesReadPerIdleTurn {
            let reply: WorkerReply?
            do throws(WorkerChannel.Failure) {
                reply = try worker.channel.receiveReplyIfReady(vocabulary: plugin)
            } catch .closed {
                return false // the next call finds out how it ended
            } catch {
                idleFailure = Self.describe(error, of: worker, timeout: options.actionTimeout)
                return false
            }
            guard let reply else { return true }
            guard case let .log(line) = reply else {
                _ = worker.stop()
                idleFailure = "broke the worker protocol (a \(reply.tag) frame came between two requests) and was killed"
                return false
            }
            log(line)
        }
        return true
    }

    /// How many log lines the idle thread reads before it looks at its queue again.
    static let linesReadPerIdleTurn = 64

    /// Replaces the failed worker (``SupervisedRecovery``), or stops the plugin; says which.
    private func recover() -> String {
        worker = nil
        prefetched = Prefetched()
        let (plugin, path, loadOptions, options, log) = (self.plugin, plugin.path, self.loadOptions, self.options, self.log)
        let (replacement, words) = recovery.recover(
            rebuiltWords: "restarted from its last state",
            start: { () throws(PluginLoadError) in try Self.launch(path: path, loadOptions: loadOptions, options: options, log: log).0 },
            restore: { (worker: WorkerProcess, bytes) throws(PluginCallError.Reason) in
                try Self.rebuildStep(.restore(bytes), on: worker, vocabulary: plugin, options: options, log: log) {
                    if case .restored = $0 { true } else { false }
                }
            },
            replay: { (worker: WorkerProcess, action) throws(PluginCallError.Reason) in
                // Effects were started, and log lines printed, the first time; a replay only
                // rebuilds the state.
                try Self.rebuildStep(.perform(name: action.name, arguments: action.arguments), on: worker, vocabulary: plugin,
                                     options: options, log: { _ in }) {
                    if case .performed = $0 { true } else { false }
                }
            },
            discard: { (worker: WorkerProcess) in _ = worker.stop() }
        )
        if replacement == nil { _ = worker?.stop() }
        worker = replacement
        return words
    }

    /// One request to a new worker during a rebuild; throws unless it answers with what
    /// `accepts` takes (a refusal with the plugin's reason).
    private static func rebuildStep(_ request: WorkerRequest, on worker: WorkerProcess, vocabulary plugin: Plugin, options: WorkerOptions,
                                    log: @Sendable (String) -> Void, accepts: (WorkerReply) -> Bool) throws(PluginCallError.Reason) {
        let reply: WorkerReply
        do throws(WorkerChannel.Failure) {
            reply = try roundTrip(request, on: worker, vocabulary: plugin, deadline: .now + options.actionTimeout, log: log)
        } catch {
            throw .workerFailed(call: "a call", cause: describe(error, of: worker, timeout: options.actionTimeout), recovery: "not retried")
        }
        if accepts(reply) { return }
        if case let .failed(reason) = reply { throw reason }
        _ = worker.stop()
        throw .workerFailed(call: "a call", cause: "broke the worker protocol (\(reply) answered) and was killed", recovery: "not retried")
    }

    /// Sends `request` to `worker` and returns the first reply that is not a log line; log
    /// lines go to `log` on the way.
    private static func roundTrip(_ request: WorkerRequest, followedBy: [WorkerRequest] = [], on worker: WorkerProcess, vocabulary plugin: Plugin?,
                                  deadline: ContinuousClock.Instant, log: @Sendable (String) -> Void) throws(WorkerChannel.Failure) -> WorkerReply {
        // One write, one doorbell at most, for the request and what follows it.
        try worker.channel.send(bytes: followedBy.reduce(into: request.frame) { $0 += $1.frame }, deadline: deadline)
        return try nextReply(on: worker, vocabulary: plugin, deadline: deadline, log: log)
    }

    /// The worker's next reply that is not a log line; log lines go to `log` on the way.
    private static func nextReply(on worker: WorkerProcess, vocabulary plugin: Plugin?, deadline: ContinuousClock.Instant,
                                  log: @Sendable (String) -> Void) throws(WorkerChannel.Failure) -> WorkerReply {
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

/// What a worker answered to the requests sent after an action (``IsolatedInstance/perform(_:)``).
private struct Prefetched {
    /// The description of the state the action left, or why there is none.
    var description: Result<String, PluginCallError.Reason>?
    /// The active nodes in that state, or why there are none.
    var activeNodes: Result<[String]?, PluginCallError.Reason>?

    /// Records that the worker failed (`cause`) before answering the first request not yet
    /// answered, and was recovered as `recovery` says: what that request asked now fails so.
    mutating func fail(_ cause: String, recovery: String) {
        if description == nil {
            description = .failure(.workerFailed(call: "the description", cause: cause, recovery: recovery))
        } else if activeNodes == nil {
            activeNodes = .failure(.workerFailed(call: "the active nodes", cause: cause, recovery: recovery))
        }
    }

    /// Keeps `reply`, the answer to `request`; throws when it answers something else.
    mutating func keep(_ reply: WorkerReply, answering request: WorkerRequest) throws(WorkerProtocol.Violation) {
        switch (request, reply) {
        case let (.describe, .described(text)): description = .success(text)
        case let (.describe, .failed(reason)): description = .failure(reason)
        case let (.active, .activeNodes(names)): activeNodes = .success(names)
        case let (.active, .failed(reason)): activeNodes = .failure(reason)
        default: throw .unexpected(reply, answering: request.tag)
        }
    }
}
