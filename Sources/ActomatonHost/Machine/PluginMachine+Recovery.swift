import ActomatonEffect
import ActomatonPluginContract

/// How a machine comes back from its journal.
extension PluginMachine {
    /// Brings the state back from the journal: the newest snapshot the plugin accepts, then
    /// the actions journaled after it (effects suppressed: they already happened), then the
    /// pending delayed and repeating actions, armed again with the time they have left (one
    /// that came due while the host was down fires at once). Returns a line for each thing
    /// that could not be brought back — past the first three journaled actions that cannot be
    /// replayed, one line counts the rest; nothing is skipped silently.
    ///
    /// Throws ``PluginJournalError/Reason/stateLost(_:refusal:unreplayed:)`` when the plugin
    /// refuses every snapshot the journal keeps and the actions before them were pruned: the
    /// state cannot be brought back, and the machine is not started over a new one (its next
    /// actions would be journaled after actions never replayed, and acknowledged again from
    /// another state).
    ///
    /// Throws ``PluginJournalError/Reason/recoveryPostponed(_:cause:)`` when a snapshot or an
    /// action cannot be brought back for a reason that passes (the memory the host's `.wasm`
    /// instances may have together): skipping it would lose it. The machine must not be used.
    ///
    /// The journal is read on a thread of its own, never on the concurrency pool's (a read
    /// waits while a commit syncs). Call it before the machine's first action: one sent
    /// meanwhile runs between the reads and the replay.
    public func recover() async throws(PluginJournalError) -> [String] {
        guard let journal else { return [] }
        let name = journalName
        let recovery = try await onThreadOfItsOwn { () throws(PluginJournalError) in try journal.recovery(for: name) }
        if recovery.isEmpty { return [] }
        var problems: [String] = []
        let runtime = self.runtime
        // A module that made do without memory the host's total refused it would bring back
        // another state than the one acknowledged: such a call fails, and the recovery waits.
        runtime.setReplaying(true)
        defer { runtime.setReplaying(false) }
        // Its effects are dropped (the journal arms the timers again): nothing is refused for them.
        effectBudget.beginReplay()
        defer { effectBudget.endReplay() }
        var base: Int64?
        var newestRefusal: String?
        for snapshot in recovery.snapshots {
            do throws(PluginCallError.Reason) {
                try runtime.restore(snapshot.bytes)
                base = snapshot.sequence
                break
            } catch {
                if case .wasmMemoryTotalReached = error { throw PluginJournalError(.recoveryPostponed(name, cause: error), at: journal.path) }
                newestRefusal = newestRefusal ?? "after action #\(snapshot.sequence), version \(snapshot.version): \(error)"
                problems.append("\(name): the journal's snapshot after action #\(snapshot.sequence) (version \(snapshot.version)) was refused: \(error)")
            }
        }
        var actions = recovery.actions
        if let base, base != recovery.snapshots.first?.sequence {
            actions = try await onThreadOfItsOwn { () throws(PluginJournalError) in try journal.journaledActions(of: name, after: base) }
        } else if base == nil, recovery.startsAtTheBeginning, !recovery.snapshots.isEmpty {
            actions = try await onThreadOfItsOwn { () throws(PluginJournalError) in try journal.journaledActions(of: name) }
        } else if base == nil, !recovery.startsAtTheBeginning {
            // Every action the journal keeps goes unreplayed, not only those after the newest snapshot.
            let kept = (try? await onThreadOfItsOwn { () throws(PluginJournalError) in try journal.journaledActions(of: name) })?.count
            throw PluginJournalError(.stateLost(name, refusal: newestRefusal ?? "the journal keeps none", unreplayed: kept ?? actions.count),
                                     at: journal.path)
        }
        var unreplayed = 0
        var lastUnreplayed: Int64 = 0
        // A replay only rebuilds the state: no worker describes each state on the way (a
        // description that fails would fail the next action's replay).
        let worker = runtime as? IsolatedInstance
        let prefetches = worker?.prefetchesDescriptions ?? false
        worker?.prefetchesDescriptions = false
        defer { worker?.prefetchesDescriptions = prefetches }
        for journaled in actions {
            let why: String
            if journaled.unreadableArguments {
                why = JournaledAction.unreadableReason
            } else {
                do throws(PluginCallError) {
                    let action = try plugin.action(journaled.action, journaled.arguments)
                    if case let .failure(reason) = runtime.perform(action) { throw PluginCallError(reason, plugin: name) }
                    continue
                } catch {
                    if case .wasmMemoryTotalReached = error.reason {
                        throw PluginJournalError(.recoveryPostponed(name, cause: error.reason), at: journal.path)
                    }
                    why = error.reason.description
                }
            }
            // The first few each get a line; the rest, one line in all.
            if unreplayed < Self.replayProblemsShown {
                problems.append("\(name): journaled action #\(journaled.sequence) '\(journaled.text.cut(utf8Bytes: Self.maxReportedBytes))' "
                                + "(version \(journaled.version)) cannot be replayed: \(why.cut(utf8Bytes: Self.maxReportedBytes))")
            }
            unreplayed += 1
            lastUnreplayed = journaled.sequence
        }
        if unreplayed > Self.replayProblemsShown {
            problems.append("\(name): \(unreplayed - Self.replayProblemsShown) more journaled actions, up to #\(lastUnreplayed), cannot be "
                            + "replayed either (\(unreplayed) of \(actions.count) in all); `actomaton-host journal` lists them")
        }
        // Counted per name: the journal's own numbers run across every name it holds.
        let lastSequence = recovery.transitionCount ?? max(actions.last?.sequence ?? 0, recovery.snapshots.first?.sequence ?? 0)
        if lastSequence < 0 {
            // No host writes one: the database was edited. Said, not taken silently as 0.
            problems.append("\(name): the journal's count of its transitions is \(lastSequence), which no host writes; its next transition "
                            + "is numbered 1, and numbers a client was already given may come again")
        }
        decisions.recovered(replayed: actions.count, sequence: UInt64(max(lastSequence, 0)))
        recoveredSequence = decisions.sequence
        let now = wallClockMilliseconds()
        var effects: [Effect<PluginMachineAction>] = []
        for timer in recovery.timers {
            // What cannot be armed is reported and ended, whichever check refused it.
            var action: PluginAction?
            var why = timer.unreadable
            if why == nil {
                do throws(PluginCallError) {
                    action = try plugin.action(timer.action, timer.arguments)
                    why = Self.unusableTiming(of: timer, now: now)
                } catch {
                    why = "\(error.reason)"
                }
            }
            guard why == nil, let action else {
                problems.append("\(name): a journaled timer for '\(timer.action.cut(utf8Bytes: Self.maxReportedBytes))' cannot be armed again: \(why ?? "")")
                journal.append(epoch: journalEpoch, .timerEnded(key: timer.key, plugin: timer.plugin))
                continue
            }
            let remaining = Duration.milliseconds(max(0, timer.due - now))
            let request: PluginEffectRequest = timer.interval.map { .repeating(action, every: .milliseconds($0), timer.options) }
                ?? .delayed(action, after: remaining, timer.options)
            recoveredTimers.append((request, remaining))
            let fired = FiredTimer(key: timer.key, repeating: timer.interval != nil)
            effects.append(request.effect(clock: clock, budget: effectBudget, timer: JournalTimerToken(journal: journal, key: timer.key, name: timer.plugin, epoch: journalEpoch),
                                          firstTickAfter: remaining) { action, request in
                PluginMachineAction(action: action, origin: request.origin, depth: 0, timer: fired)
            })
        }
        if !effects.isEmpty {
            self.effects.sendOptions = .init(returnsTask: false)
            _ = self.effects.handle(Effect.combine(effects))
            _ = self.effects.finishSend()
        }
        return problems
    }

    /// The longest delay or interval a plugin can ask for, in milliseconds: its request's
    /// `uint64_t` nanoseconds.
    static let maxTimerMilliseconds = Int64(UInt64.max / 1_000_000)

    /// Why a journaled timer's timing cannot be armed, or `nil`: the database is read as
    /// untrusted. An interval of 0 or less fired without end (a host spun, and every host
    /// that adopted the instance after it); one past what a plugin can ask for made the next
    /// firing's record overflow, which stopped every host that adopted it in turn.
    static func unusableTiming(of timer: JournaledTimer, now: Int64) -> String? {
        if let interval = timer.interval, !(1...maxTimerMilliseconds).contains(interval) {
            return "its interval, \(interval) ms, is not from 1 to \(maxTimerMilliseconds) ms"
        }
        guard timer.due >= 0, timer.due <= now + maxTimerMilliseconds else {
            return "its due time, \(timer.due) ms after 1970, is not from 0 to \(maxTimerMilliseconds) ms from now"
        }
        return nil
    }

    /// How many journaled actions that cannot be replayed ``recover()`` reports one by one.
    static let replayProblemsShown = 3

    /// How much of an action or an error a recovery report line shows (whole characters; the
    /// rest is counted): a report line stays short.
    static let maxReportedBytes = 200
}
