import ActomatonPluginContract

/// How a plugin state that can fail without taking the host down — in a worker process, or in
/// the WebAssembly sandbox — is brought back: the one recovery both of those runtimes share.
///
/// The runtime takes a snapshot every `snapshotInterval` completed actions and keeps the
/// actions completed since. When a call fails in a way that loses the state (the worker
/// crashed, exited, broke the protocol or missed its deadline; the module trapped), the call
/// fails with its cause, and the state is rebuilt: a new worker or instance, the last
/// snapshot restored, the actions since replayed (their effects are not started again: they
/// already were). So the state is exactly as it was before the failed call.
///
/// The plugin is **stopped** instead — every later call fails with
/// ``PluginCallError/Reason/pluginStopped(_:)`` — when it failed more than `maxRestarts` times
/// within `restartWindow`, or when the rebuild itself fails at a step (a new state cannot be
/// made, the snapshot is refused, a replayed action fails): a state that cannot be rebuilt
/// exactly is not rebuilt approximately. A rebuild whose new worker fails in the middle (it
/// crashed, or missed its deadline on a loaded machine) is a failure like the first: the
/// rebuild starts again, counted against `maxRestarts`. One such failure stopped the plugin for
/// good.
struct SupervisedRecovery {
    /// Snapshots every this many completed actions (bounds a replay).
    let snapshotInterval: Int
    /// How many rebuilds are allowed within ``restartWindow`` before the plugin is stopped.
    let maxRestarts: Int
    /// See ``maxRestarts``.
    let restartWindow: Duration
    /// The state to rebuild from (`nil`: the state `create` makes), and the actions since.
    private(set) var lastSnapshot: [UInt8]?
    private(set) var actionsSinceSnapshot: [PluginAction] = []
    private var restarts: [ContinuousClock.Instant] = []
    /// Why the plugin was stopped, once it is.
    private(set) var stoppedBecause: String?

    init(snapshotInterval: Int, maxRestarts: Int, restartWindow: Duration) {
        self.snapshotInterval = max(snapshotInterval, 1)
        self.maxRestarts = maxRestarts
        self.restartWindow = restartWindow
    }

    /// Counts a completed action; returns whether a snapshot is due.
    mutating func completed(_ action: PluginAction) -> Bool {
        actionsSinceSnapshot.append(action)
        return actionsSinceSnapshot.count >= snapshotInterval
    }

    /// The most actions kept for a replay while snapshots fail: four snapshot intervals, and
    /// at least 64. Past it the plugin is stopped: the actions would pile up in memory without
    /// end, and the replay after a failure would grow with them.
    var maxActionsKept: Int { max(4 * snapshotInterval, 64) }

    /// The error line of a snapshot due after `action` that failed with `error`, `kept` saying
    /// what became of the actions since the last one (``snapshotFailed()``). The action is
    /// echoed as an error line echoes it, cut: a 4 MB argument made a 4 MB line.
    static func snapshotFailureLine(plugin: String, after action: PluginAction, error: PluginCallError.Reason, kept: String) -> String {
        "error: plugin \(plugin): the snapshot after '\(PluginLimits.echo("\(action)"))' failed: \(error); \(kept)"
    }

    /// A due snapshot failed: the actions since the last one stay for a replay, or, once more
    /// than ``maxActionsKept`` wait, the plugin is stopped (``stopped``: the runtime lets its
    /// state go, and every later call fails). Returns what became of them, for the error line.
    mutating func snapshotFailed() -> String {
        guard actionsSinceSnapshot.count > maxActionsKept else { return "the actions since the last one are kept for a replay" }
        let why = "its snapshots failed for \(actionsSinceSnapshot.count) actions in a row, more than the \(maxActionsKept) "
            + "kept for a replay: its state could no longer be rebuilt"
        stoppedBecause = why
        return "the plugin is stopped: \(why)"
    }

    /// The state is now `bytes` (a snapshot was taken, or restored): a rebuild starts there.
    mutating func stateIs(_ bytes: [UInt8]) {
        lastSnapshot = bytes
        actionsSinceSnapshot.removeAll(keepingCapacity: true)
    }

    /// The failure to report when the plugin is stopped, or `nil`.
    var stopped: PluginCallError.Reason? {
        stoppedBecause.map { .pluginStopped($0) }
    }

    /// Rebuilds the state after a failure that lost it, or stops the plugin; returns the new
    /// state (`nil` when stopped) and what happened, in words for the failed call's error:
    /// `rebuiltWords` on success, `stopped, …` otherwise.
    ///
    /// - Parameters:
    ///   - countsRestart: Whether this rebuild counts against ``maxRestarts``: not when the
    ///     failure was the host's doing (a `.wasm` module's grow refused for the host's total).
    ///   - rebuiltWords: What a rebuild is called (`restarted from its last state`).
    ///   - start: Makes a new state, as `create` makes it.
    ///   - restore: Restores a snapshot into a new state.
    ///   - replay: Performs a journaled action again in a new state, its effects ignored.
    ///   - discard: Lets go of a new state whose rebuild failed (a worker is killed: it was left
    ///     running).
    mutating func recover<State>(
        countsRestart: Bool = true,
        rebuiltWords: String,
        start: () throws(PluginLoadError) -> State,
        restore: (State, [UInt8]) throws(PluginCallError.Reason) -> Void,
        replay: (State, PluginAction) throws(PluginCallError.Reason) -> Void,
        discard: (State) -> Void = { _ in }
    ) -> (state: State?, words: String) {
        while true {
            let now = ContinuousClock.now
            if countsRestart { restarts.append(now) }
            restarts.removeAll { $0.duration(to: now) > restartWindow }
            if countsRestart, restarts.count > maxRestarts {
                let why = "it failed \(restarts.count) times within \(seconds(restartWindow))"
                stoppedBecause = why
                return (nil, "stopped, \(why)")
            }
            let fresh: State
            do {
                fresh = try start()
            } catch {
                return (nil, stop("a new state could not be made: \(error.reason)"))
            }
            var step = "its last snapshot was refused"
            do throws(PluginCallError.Reason) {
                if let lastSnapshot { try restore(fresh, lastSnapshot) }
                step = "the replay failed"
                for action in actionsSinceSnapshot { try replay(fresh, action) }
                return (fresh, rebuiltWords)
            } catch {
                discard(fresh)
                // The new worker failed, not the plugin's answer: rebuilt again.
                if case .workerFailed = error { continue }
                return (nil, stop("\(step): \(error)"))
            }
        }
    }

    private mutating func stop(_ why: String) -> String {
        stoppedBecause = "it could not be restarted (\(why))"
        return "stopped, it could not be restarted (\(why))"
    }
}
