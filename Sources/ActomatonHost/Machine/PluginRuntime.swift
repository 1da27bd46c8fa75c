import ActomatonPluginContract
import Synchronization

/// Where one plugin state lives and how the host calls it: the one abstraction behind a
/// ``PluginMachine``, with three conformers chosen once, when the plugin is loaded
/// (``PluginRuntimes/make(path:isolation:loadOptions:log:effectBudget:)``):
///
/// - ``PluginInstance``: a shared library mapped in this process, called through libffi;
/// - a worker runtime: the library in a supervised worker process, each call a round trip;
/// - a WebAssembly runtime: a `.wasm` module in the sandbox, in this process.
///
/// A runtime is confined to its machine: one call at a time, from one machine. The worker and
/// WebAssembly runtimes recover from a failed call the same way: a new state, the last snapshot, the actions since replayed; or the plugin is stopped.
public protocol PluginRuntime: AnyObject, Sendable {
    /// The plugin whose state this is.
    var plugin: Plugin { get }

    /// Whether a call can block its thread for long — a round trip to another process. A
    /// machine over such a runtime runs on a thread of its own, never on the concurrency
    /// pool's threads.
    var callsBlock: Bool { get }

    /// Whether a call can keep its thread busy for long — a sandboxed module computes until
    /// its fuel runs out. A machine over such a runtime runs on one of a few threads of its
    /// plugin's own, never on the concurrency pool's threads.
    var callsRunLong: Bool { get }

    /// Runs `action` and returns the effects it requested, or why it failed (the effects of
    /// a failed action are discarded). An action checked against another load of the plugin
    /// is checked again, by name, first.
    func perform(_ action: PluginAction) -> PluginInstance.Outcome

    /// The plugin's snapshot of the state, in its own format; at most
    /// ``PluginLimits/maxSnapshotBytes``.
    func snapshot() throws(PluginCallError.Reason) -> [UInt8]

    /// Replaces the state with one read from `bytes`; the plugin refuses bytes it cannot read.
    func restore(_ bytes: [UInt8]) throws(PluginCallError.Reason)

    /// The plugin's one-line description of the state (often JSON), at most
    /// ``PluginLimits/maxDescriptionBytes``.
    func describe() throws(PluginCallError.Reason) -> String

    /// The names of the plugin's diagram nodes that are active in the state (its `active`
    /// function, ABI version 2), checked against the contract's limits (`ActiveNodes`);
    /// `nil` when the plugin names none (`PluginManifest.namesActiveNodes` is false). A bad
    /// value fails with ``PluginCallError/Reason/describeFailed(_:)``, one line saying which.
    /// The machine asks right after ``describe()``, in the same turn.
    func activeNodes() throws(PluginCallError.Reason) -> [String]?

    /// The worker process's ID, when the state lives in one that is running.
    var workerProcessID: Int32? { get }

    /// Whether a failed call is recovered from by rebuilding the state from the last
    /// ``snapshot()`` and the successful actions since (the worker and WebAssembly runtimes):
    /// a refused action that changed the state is then followed by a snapshot, so that a
    /// rebuild brings back the state as it is, not as it was before that action.
    var rebuildsFromSnapshots: Bool { get }

    /// Whether the state the last action left must be snapshotted before anything replays past
    /// it: a replay of that action could take another path (a `.wasm` module made do without
    /// memory the host's total refused it, which a replay may be given).
    var wantsSnapshot: Bool { get }

    /// Marks a journal's replay beginning (`true`) or ending: while it runs, an action must
    /// take the path it took when it was journaled, and one that cannot fails (a `.wasm`
    /// module that would make do without memory the host's total refused it).
    func setReplaying(_ replaying: Bool)

    /// Frees what the state holds now, once its machine is closed and makes no more calls (a
    /// `.wasm` instance's memory, which counts against the host's total); calls after it fail.
    func release()
}

extension PluginRuntime {
    /// In this process: calls return as fast as the plugin's code does.
    public var callsBlock: Bool { false }

    /// In this process: calls return as fast as the plugin's code does.
    public var callsRunLong: Bool { false }

    /// No worker process.
    public var workerProcessID: Int32? { nil }

    /// Nothing is rebuilt: the state in this process is the only one.
    public var rebuildsFromSnapshots: Bool { false }

    /// A replay takes the path the action took.
    public var wantsSnapshot: Bool { false }

    /// A replay takes the path the action took.
    public func setReplaying(_ replaying: Bool) {}

    /// Nothing to free before the runtime itself goes.
    public func release() {}
}

/// Makes the runtime for a plugin file: the one place that decides where a plugin runs.
public enum PluginRuntimes {
    /// A runtime for the plugin at `path`: a `.wasm` module (recognised by its first bytes,
    /// whatever its name) in the sandbox; a shared library in a worker process under
    /// ``PluginIsolation/process(_:)``, else in this process.
    ///
    /// - Parameters:
    ///   - path: The plugin file.
    ///   - isolation: Where a shared library runs.
    ///   - loadOptions: How the file is vetted and loaded.
    ///   - log: Where the plugin's `host->log` lines go; standard error, prefixed with the
    ///     plugin's name, when `nil`.
    ///   - effectBudget: The effect limit of the machine the runtime serves.
    public static func make(
        path: String, isolation: PluginIsolation, loadOptions: Plugin.LoadOptions,
        log: (@Sendable (String) -> Void)?, effectBudget: EffectBudget
    ) throws(PluginLoadError) -> any PluginRuntime {
        if case let .process(options) = isolation, !PluginFile.isWasm(path) {
            return try IsolatedInstance.start(path: path, loadOptions: loadOptions, options: options, log: log, effectBudget: effectBudget)
        }
        return try make(plugin: Plugin.load(path: path, options: loadOptions), log: log, effectBudget: effectBudget)
    }

    /// A runtime in this process for a plugin already loaded: a ``PluginInstance`` for a
    /// shared library, the sandbox for a `.wasm` module.
    ///
    /// - Parameters:
    ///   - plugin: The loaded plugin.
    ///   - log: Where the plugin's `host->log` lines go; standard error when `nil`.
    ///   - effectBudget: The effect limit of the machine the runtime serves.
    public static func make(plugin: Plugin, log: (@Sendable (String) -> Void)?, effectBudget: EffectBudget) throws(PluginLoadError) -> any PluginRuntime {
        switch plugin.code {
        case .native:
            return try PluginInstance(plugin: plugin, log: log, effectBudget: effectBudget)
        case let .wasm(module):
            return try WasmInstance(plugin: plugin, module: module, log: log, effectBudget: effectBudget)
        case .inWorker:
            throw PluginLoadError(.manifest(.invalid("the plugin runs in a worker process, not in this one")), at: plugin.path)
        }
    }
}

/// The sink for a plugin's `host->log` lines: `log`, or standard error with the plugin's name;
/// at most ``PluginLimits/maxLogLinesPerSecond`` a second (``limitingLogLines(_:now:)``) unless
/// not `limited`.
func pluginLogSink(_ log: (@Sendable (String) -> Void)?, name: String, limited: Bool = true) -> @Sendable (String) -> Void {
    let sink = log ?? { line in printToStandardError("[\(name)] \(line)") }
    return limited ? limitingLogLines(sink) : sink
}

/// `sink`, taking at most `rate` lines a second in bursts of as many (a ``TokenBucket``); the
/// lines past it are left out, and the next line let through is preceded by one saying how
/// many were. Lines left out with none let through after them are said when the returned
/// sink is released (the plugin unloaded), or by ``PluginLogLines/sayWhatWasLeftOut()`` (the
/// host at its end).
func limitingLogLines(_ sink: @escaping @Sendable (String) -> Void, rate: Int = PluginLimits.maxLogLinesPerSecond,
                      now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) -> @Sendable (String) -> Void {
    let limiter = LogLineLimiter(sink, rate: rate, now: now)
    return { line in limiter.take(line) }
}

/// Plugins' log lines left out over their rate.
package enum PluginLogLines {
    /// The limiters alive, by identity: weak, so that a plugin unloaded takes its own away.
    fileprivate static let limiters = Mutex<[ObjectIdentifier: WeakLimiter]>([:])

    fileprivate struct WeakLimiter: @unchecked Sendable {
        weak var limiter: LogLineLimiter?
    }

    /// Says, for every plugin, how many of its last log lines were left out with no line let
    /// through after them: at the end of `run` and `serve`, where no later line would say it.
    package static func sayWhatWasLeftOut() {
        for entry in limiters.withLock({ Array($0.values) }) { entry.limiter?.sayLeftOut() }
    }
}

/// The state of ``limitingLogLines(_:rate:now:)``: a bucket, and the lines left out since the
/// last one let through, said at the next one, or when the limiter is released.
private final class LogLineLimiter: Sendable {
    private let sink: @Sendable (String) -> Void
    private let rate: Int
    private let now: @Sendable () -> ContinuousClock.Instant
    private let start: ContinuousClock.Instant
    private let state: Mutex<(bucket: TokenBucket, leftOut: Int)>

    init(_ sink: @escaping @Sendable (String) -> Void, rate: Int, now: @escaping @Sendable () -> ContinuousClock.Instant) {
        self.sink = sink
        self.rate = rate
        self.now = now
        start = now()
        state = Mutex((bucket: TokenBucket(rate: rate, at: .zero), leftOut: 0))
        let weak = PluginLogLines.WeakLimiter(limiter: self)
        PluginLogLines.limiters.withLock { $0[ObjectIdentifier(self)] = weak }
    }

    func take(_ line: String) {
        let time = now() - start
        let (admitted, leftOut) = state.withLock { state -> (Bool, Int) in
            guard state.bucket.take(at: time) else {
                state.leftOut += 1
                return (false, 0)
            }
            defer { state.leftOut = 0 }
            return (true, state.leftOut)
        }
        guard admitted else { return }
        say(leftOut)
        sink(line)
    }

    /// Says how many lines were left out since the last one let through, if any.
    func sayLeftOut() {
        say(state.withLock { state in
            defer { state.leftOut = 0 }
            return state.leftOut
        })
    }

    private func say(_ leftOut: Int) {
        guard leftOut > 0 else { return }
        sink("(\(leftOut) log line\(leftOut == 1 ? "" : "s") left out: a plugin logs at most \(rate) lines a second)")
    }

    deinit {
        PluginLogLines.limiters.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(self)) }
        sayLeftOut()
    }
}
