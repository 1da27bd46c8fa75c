import ActomatonHost

/// A journal store that hands every call to `base`: tests subclass it and override the call
/// they make slow, fenced or gated.
open class ForwardingJournalStore: JournalStore, @unchecked Sendable {
    /// Where the calls go.
    public let base: any JournalStore

    public init(base: any JournalStore) { self.base = base }

    open var location: String { base.location }
    open func timerKeys() throws(PluginJournalError.Reason) -> Range<Int64> { try base.timerKeys() }
    open func commit(_ records: [JournalRecord]) throws { try base.commit(records) }
    /// The epochs ignored, as a store of one host does: through ``commit(_:)``, so that a
    /// subclass overrides one commit.
    open func commit(_ records: [JournalRecord], epochs: [Int64?]) throws { try commit(records) }
    open func recovery(for name: String) throws(PluginJournalError.Reason) -> JournalRecovery { try base.recovery(for: name) }
    open func actions(of name: String, after sequence: Int64) throws(PluginJournalError.Reason) -> [JournaledAction] {
        try base.actions(of: name, after: sequence)
    }
    open func receipts(keptAfter now: Int64, limit: Int, answerBytes: Int) throws(PluginJournalError.Reason) -> [JournaledReceipt] {
        try base.receipts(keptAfter: now, limit: limit, answerBytes: answerBytes)
    }
    open func transitionCount(of name: String) throws(PluginJournalError.Reason) -> Int64 { try base.transitionCount(of: name) }
    open func receipt(of name: String, key: String) throws(PluginJournalError.Reason) -> JournaledReceipt? { try base.receipt(of: name, key: key) }
    open func messages(of name: String, after ordinal: Int64, orJournaledAfter position: Int64,
                       limit: Int) throws(PluginJournalError.Reason) -> [(ordinal: Int64, message: String, position: Int64)] {
        try base.messages(of: name, after: ordinal, orJournaledAfter: position, limit: limit)
    }
    open func summaries() throws(PluginJournalError.Reason) -> [JournalSummary] { try base.summaries() }
    open func close(clean: Bool) { base.close(clean: clean) }
}
