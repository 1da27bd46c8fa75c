import ActomatonEffect
import ActomatonPluginContract

/// What a machine writes to its journal: each performed action's record, its snapshots, and
/// the messages and epoch a service asks for.
extension PluginMachine {
    /// Journals a message made by `message` with each transition from now on (with a journal).
    /// It is called on the journal's writer thread, as the transition's record is written, so
    /// the machine goes on meanwhile.
    ///
    /// - Parameter message: Makes the message from the transition; keep it short.
    public func journalMessages(_ message: @escaping @Sendable (PluginTransition) -> String) {
        journalMessage = message
    }

    /// Writes every record from now on as the owner of ``journalName`` at `epoch` (a cluster's
    /// claim of the name): the journal's store refuses them once its host owns the name at
    /// another epoch, so a machine left over from an earlier claim never writes beside the
    /// current one. Call it before ``recover()``.
    public func writeJournal(atEpoch epoch: Int64) {
        journalEpoch = epoch
    }

    /// The plugin's snapshot of the state, journaled too when the machine has a journal: the
    /// machine comes back from it without replaying the actions before it (a service passivating
    /// an instance). The snapshot is committed in order with the records before it; nothing
    /// waits for its commit, since until then the journal's older snapshot and actions bring
    /// back the same state.
    public func snapshotIntoJournal() throws(PluginCallError) -> [UInt8] {
        let bytes = try snapshot()
        if let journal { journalSnapshot(bytes, into: journal) }
        return bytes
    }

    /// Journals `bytes` as the machine's snapshot, and counts the snapshot interval from it;
    /// returns its ticket.
    @discardableResult
    func journalSnapshot(_ bytes: [UInt8], into journal: PluginJournal) -> UInt64 {
        defer { decisions.snapshotJournaled() }
        return journal.append(epoch: journalEpoch, .snapshot(plugin: journalName, version: pluginVersion, bytes: bytes,
                                                             keepingActions: Int64(journal.options.snapshotInterval)))
    }

    /// The journal record of a performed action: its timers (with the keys in `keys`, one per
    /// request) and the IDs it cancelled.
    func journalRecord(of input: PluginMachineAction, requests: [PluginEffectRequest], keys: [Int64?],
                       receipt: JournaledReceipt?, message: (@Sendable () -> String)?) -> JournalRecord {
        let now = wallClockMilliseconds()
        var timers: [JournaledTimer] = []
        var cancelled: [String] = []
        for (index, request) in requests.enumerated() {
            switch request {
            case let .delayed(action, delay, options), let .repeating(action, delay, options):
                guard index < keys.count, let key = keys[index] else { continue }
                var interval: Int64?
                if case .repeating = request { interval = delay.milliseconds }
                timers.append(JournaledTimer(key: key, plugin: journalName, action: action.name, arguments: action.arguments,
                                             due: now + delay.milliseconds, interval: interval, options: options))
            case let .cancel(id):
                cancelled.append(id)
            case .next:
                break
            }
        }
        return .action(plugin: journalName, version: pluginVersion, name: input.action.name, arguments: input.action.arguments,
                       firedTimer: input.timer.map { ($0.key, $0.repeating) }, timers: timers, cancelledIDs: cancelled, receipt: receipt,
                       message: message)
    }
}
