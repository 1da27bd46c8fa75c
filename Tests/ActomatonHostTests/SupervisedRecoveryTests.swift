@testable import ActomatonHost
import ActomatonPluginContract
import Testing

/// The one recovery the worker and WebAssembly runtimes share (`SupervisedRecovery`): a state
/// rebuilt exactly — the last snapshot, then the actions since, in order — or the plugin
/// stopped, with one line saying why; never rebuilt approximately.
@Suite struct SupervisedRecoveryTests {
    /// A state as the tests rebuild it: what was restored and replayed into it.
    final class State {
        var restored: [UInt8]?
        var replayed: [String] = []
    }

    static func action(_ name: String) -> PluginAction {
        PluginAction(name: name, arguments: [], index: 0, vocabulary: 0)
    }

    static func supervisor(snapshotInterval: Int = 3, maxRestarts: Int = 5) -> SupervisedRecovery {
        SupervisedRecovery(snapshotInterval: snapshotInterval, maxRestarts: maxRestarts, restartWindow: .seconds(3600))
    }

    /// Rebuilds with `supervisor`, each step failing where asked.
    static func rebuild(_ supervisor: inout SupervisedRecovery, startFails: Bool = false, refuseSnapshot: Bool = false,
                        failReplayOf failing: String? = nil) -> (state: State?, words: String) {
        supervisor.recover(rebuiltWords: "restarted from its last state") { () throws(PluginLoadError) -> State in
            if startFails { throw PluginLoadError(.manifest(.invalid("no state")), at: "p.so") }
            return State()
        } restore: { (state: State, bytes: [UInt8]) throws(PluginCallError.Reason) in
            if refuseSnapshot { throw .refused(action: "restore", message: "not mine") }
            state.restored = bytes
        } replay: { (state: State, action: PluginAction) throws(PluginCallError.Reason) in
            if action.name == failing { throw .refused(action: action.name, message: "not the same answer") }
            state.replayed.append(action.name)
        }
    }

    /// Regression (audit): a new worker that missed its deadline during the replay (a loaded
    /// machine, a short `--action-timeout`) stopped the plugin for good, and was left running.
    /// It is let go, and the rebuild starts again, counted against the restarts; a refusal (the
    /// plugin's own answer) still stops it.
    @Test func aRebuildWhoseNewWorkerFailsStartsAgain() {
        var supervisor = Self.supervisor(snapshotInterval: 10, maxRestarts: 3)
        _ = supervisor.completed(Self.action("a"))
        var failuresLeft = 2
        var discarded = 0
        func rebuild() -> (state: State?, words: String) {
            supervisor.recover(rebuiltWords: "restarted from its last state") { () throws(PluginLoadError) -> State in
                State()
            } restore: { (_: State, _: [UInt8]) throws(PluginCallError.Reason) in
            } replay: { (state: State, action: PluginAction) throws(PluginCallError.Reason) in
                if failuresLeft > 0 {
                    failuresLeft -= 1
                    throw .workerFailed(call: "a call", cause: "did not answer within 2s and was killed", recovery: "not retried")
                }
                state.replayed.append(action.name)
            } discard: { _ in
                discarded += 1
            }
        }
        let (state, words) = rebuild()
        #expect(words == "restarted from its last state" && state?.replayed == ["a"])
        #expect(discarded == 2, "each failed new state is let go")
        // The three rebuilds counted: one more failure is past the limit of 3.
        failuresLeft = 1
        let (stopped, stoppedWords) = rebuild()
        #expect(stopped == nil && stoppedWords == "stopped, it failed 4 times within 3600s", "\(stoppedWords)")
        #expect(discarded == 2)
    }

    @Test func aRebuildRestoresTheLastSnapshotThenReplaysTheActionsSinceInOrder() {
        var supervisor = Self.supervisor(snapshotInterval: 3)
        let due = ["a", "b", "c"].map { supervisor.completed(Self.action($0)) }
        #expect(due == [false, false, true], "a snapshot is due at the interval")
        supervisor.stateIs([1, 2, 3])
        let dueAfter = ["d", "e"].map { supervisor.completed(Self.action($0)) }
        #expect(dueAfter == [false, false])
        let (state, words) = Self.rebuild(&supervisor)
        #expect(words == "restarted from its last state")
        #expect(state?.restored == [1, 2, 3])
        #expect(state?.replayed == ["d", "e"])
        #expect(supervisor.stopped == nil)
    }

    /// Regression (audit): a plugin whose snapshots always failed had every action kept for a
    /// replay, without end (829 MB after 400 actions with 1 MB arguments), and replayed them
    /// all after a failure. At most four snapshot intervals (at least 64) are kept; one more
    /// stops the plugin.
    @Test func failingSnapshotsKeepAtMostTheirLimitThenStopThePlugin() {
        for interval in [1, 16, 100] {
            var supervisor = Self.supervisor(snapshotInterval: interval)
            let limit = max(4 * interval, 64)
            #expect(supervisor.maxActionsKept == limit)
            for index in 0..<limit {
                if supervisor.completed(Self.action("a\(index)")) {
                    let words = supervisor.snapshotFailed()
                    #expect(words == "the actions since the last one are kept for a replay", "\(index)")
                }
            }
            #expect(supervisor.stopped == nil)
            let due = supervisor.completed(Self.action("past"))
            #expect(due)
            let why = "its snapshots failed for \(limit + 1) actions in a row, more than the \(limit) kept for a replay: "
                + "its state could no longer be rebuilt"
            let words = supervisor.snapshotFailed()
            #expect(words == "the plugin is stopped: \(why)")
            #expect(supervisor.stopped == .pluginStopped(why))
        }
    }

    /// Regression: the error line of a failed snapshot echoed the action whole; a CSV chunk of
    /// the benchmark made lines of tens of kilobytes. It is cut as every error line's echo is.
    @Test func aSnapshotFailuresLineEchoesTheActionCut() throws {
        let csv = try Plugin.load(path: wasmPlugin("csv"))
        let long = String(repeating: "a,b,c\n", count: 10_000)
        let line = SupervisedRecovery.snapshotFailureLine(plugin: "csv", after: try csv.action("feed", [.string(long)]),
                                                          error: .snapshotFailed("it ran out of fuel"), kept: "kept")
        #expect(line.utf8.count < PluginLimits.maxEchoedActionBytes + 300, "\(line.utf8.count) bytes")
        #expect(line.hasPrefix("error: plugin csv: the snapshot after 'feed "))
        #expect(line.hasSuffix("failed: cannot take a snapshot of the state: it ran out of fuel; kept"))
    }

    @Test func withoutASnapshotTheRebuildReplaysEveryActionIntoANewState() {
        var supervisor = Self.supervisor(snapshotInterval: 16)
        for name in ["a", "b"] { _ = supervisor.completed(Self.action(name)) }
        let (state, _) = Self.rebuild(&supervisor)
        #expect(state?.restored == nil)
        #expect(state?.replayed == ["a", "b"])
    }

    /// A replayed action that fails means the plugin does not answer the same way twice: the
    /// state cannot be rebuilt exactly, and the plugin is stopped, for good.
    @Test func aFailedReplayStopsThePlugin() {
        var supervisor = Self.supervisor()
        for name in ["a", "b"] { _ = supervisor.completed(Self.action(name)) }
        let (state, words) = Self.rebuild(&supervisor, failReplayOf: "b")
        #expect(state == nil)
        #expect(words.hasPrefix("stopped, it could not be restarted (the replay failed: "), "\(words)")
        guard case let .pluginStopped(why)? = supervisor.stopped else {
            Issue.record("not stopped: \(String(describing: supervisor.stopped))")
            return
        }
        #expect(why.hasPrefix("it could not be restarted (the replay failed: "))
        #expect(why.contains("not the same answer"))
    }

    @Test func aRefusedSnapshotOrNoNewStateStopsThePlugin() {
        var refused = Self.supervisor()
        refused.stateIs([9])
        let (noState, words) = Self.rebuild(&refused, refuseSnapshot: true)
        #expect(noState == nil)
        #expect(words.hasPrefix("stopped, it could not be restarted (its last snapshot was refused: "), "\(words)")
        #expect(refused.stopped != nil)

        var unstartable = Self.supervisor()
        let (none, startWords) = Self.rebuild(&unstartable, startFails: true)
        #expect(none == nil)
        #expect(startWords.hasPrefix("stopped, it could not be restarted (a new state could not be made: "), "\(startWords)")
        #expect(unstartable.stopped != nil)
    }

    /// `maxRestarts` rebuilds within the window are allowed; one more stops the plugin.
    @Test func restartsAtTheLimitAreAllowedAndOnePastStopsThePlugin() {
        var supervisor = Self.supervisor(maxRestarts: 3)
        for _ in 0..<3 {
            #expect(Self.rebuild(&supervisor).state != nil)
        }
        #expect(supervisor.stopped == nil)
        let (state, words) = Self.rebuild(&supervisor)
        #expect(state == nil)
        #expect(words.hasPrefix("stopped, it failed 4 times within "), "\(words)")
        #expect(supervisor.stopped != nil)
    }
}
