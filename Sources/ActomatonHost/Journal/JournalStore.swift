/// Where a ``PluginJournal`` keeps its records: the embedded SQLite file of one host
/// (`--state FILE`), or a database that several hosts share (`--state postgres://…`, in
/// `ActomatonCluster`).
///
/// The journal calls a store from threads of its own, never from the concurrency pool: its
/// writer thread commits, and readers call the other methods from wherever they block (the
/// command line's thread, or a thread the service starts for it). Every call may block; a
/// store serializes its calls as it needs.
///
/// One conformance suite runs against every store of the project: what it writes is read back
/// the same, a snapshot keeps the one before it and the actions after the older one, a timer
/// fired or ended is gone, a forgotten name holds nothing, and receipts and messages come back
/// in order.
public protocol JournalStore: AnyObject, Sendable {
    /// Where the records live, for messages: a file's path, or a database's address without
    /// its password.
    var location: String { get }

    /// The keys new timers of this host may take, from the first no timer of this store uses;
    /// the journal numbers new timers from it. An action whose timers find none left fails
    /// (``PluginCallError/Reason/timerKeysUsedUp(action:lastKey:)``).
    func timerKeys() throws(PluginJournalError.Reason) -> Range<Int64>

    /// Writes `records`, in order, in one transaction: all of them are durable when it returns,
    /// or none is.
    ///
    /// - Throws: ``JournalStoreFencing`` when some records belong to names this store may no
    ///   longer write (another host owns them now); nothing was written. Any other error:
    ///   the write failed, and nothing was written.
    func commit(_ records: [JournalRecord]) throws

    /// Writes `records` like ``commit(_:)``; `epochs[i]`, when not `nil`, is the epoch at which
    /// the writer of `records[i]` owns its name (a cluster's claim): a store that fences refuses
    /// a name whose records carry an epoch it no longer owns the name at. A store of one host
    /// ignores the epochs (the default).
    func commit(_ records: [JournalRecord], epochs: [Int64?]) throws

    /// What the store holds for `name`: its snapshots, actions and timers.
    func recovery(for name: String) throws(PluginJournalError.Reason) -> JournalRecovery

    /// The actions of `name` after `sequence`, oldest first.
    func actions(of name: String, after sequence: Int64) throws(PluginJournalError.Reason) -> [JournaledAction]

    /// The receipts kept until `now` or later, the latest to expire first, at most `limit`,
    /// their answers read in that order while they add up to at most `answerBytes`: the rest,
    /// and any past ``JournaledReceipt/maxAnswerBytes``, are left in the journal (`nil`, with
    /// their sizes).
    func receipts(keptAfter now: Int64, limit: Int, answerBytes: Int) throws(PluginJournalError.Reason) -> [JournaledReceipt]

    /// How many transitions `name` has had in all, pruned ones included (0 for none).
    func transitionCount(of name: String) throws(PluginJournalError.Reason) -> Int64

    /// The receipt kept under `key` for `name`, if any (expired or not); its answer left in the
    /// journal (`nil`, with its size) when past ``JournaledReceipt/maxAnswerBytes``.
    func receipt(of name: String, key: String) throws(PluginJournalError.Reason) -> JournaledReceipt?

    /// The messages of `name`'s transitions numbered above `ordinal`, or journaled after
    /// `position` (the store's own number of an action, increasing across names), in the order
    /// they were journaled, at most `limit`, each with its number and position; stopping
    /// before the first action kept without a message. One numbered `ordinal` or below was
    /// journaled after `position` by a later life of `name`: deleted, then made again.
    func messages(of name: String, after ordinal: Int64, orJournaledAfter position: Int64,
                  limit: Int) throws(PluginJournalError.Reason) -> [(ordinal: Int64, message: String, position: Int64)]

    /// Every name the store holds something for, with what it holds.
    func summaries() throws(PluginJournalError.Reason) -> [JournalSummary]

    /// Releases the store's connection (and lock); `clean` when every commit succeeded, so
    /// that it may tidy up first. Later calls fail with ``PluginJournalError/Reason/closed``.
    func close(clean: Bool)
}

/// A store's refusal to commit records of names it no longer owns: another host took them over
/// (a newer epoch), so this host must drop them. Nothing of the commit was written.
public struct JournalStoreFencing: Error, Sendable, Hashable, CustomStringConvertible {
    /// The names whose records were refused.
    public var names: Set<String>

    /// Creates a refusal for `names`.
    public init(names: Set<String>) {
        self.names = names
    }

    /// One line.
    public var description: String {
        "another host owns \(names.sorted().joined(separator: ", ")) now (this host's lease was taken over); its records were not written"
    }
}

extension JournalStore {
    /// Writes `records` with ``commit(_:)``: the epochs are for stores that fence.
    public func commit(_ records: [JournalRecord], epochs: [Int64?]) throws {
        try commit(records)
    }

    /// The messages of `name`'s transitions numbered above `ordinal`, oldest first, at most
    /// `limit`, stopping before the first action kept without a message:
    /// ``messages(of:after:orJournaledAfter:limit:)`` with no later life asked for.
    public func messages(of name: String, after ordinal: Int64, limit: Int) throws(PluginJournalError.Reason) -> [(ordinal: Int64, message: String)] {
        try messages(of: name, after: ordinal, orJournaledAfter: .max, limit: limit).map { ($0.ordinal, $0.message) }
    }
}
