import ActomatonEffect
import ActomatonPluginContract
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The host's memory (`--state`): per plugin, every accepted action, periodic snapshots of its
/// state, and its pending delayed and repeating actions — so a restarted host brings every
/// machine back where it was. The records live in a ``JournalStore``: by default a SQLite
/// database in WAL mode (``SQLiteJournalStore``), or a database several hosts share.
///
/// Machines append records from their actors; one writer thread commits them in order, many
/// records per transaction (group commit), while the machines go on. What "acknowledged"
/// means, and what a crash can lose, is the ``JournalSyncPolicy``.
///
/// The database is refused, with one line and before anything is written, when it cannot be
/// read, is another application's, was written by a newer host, fails SQLite's integrity
/// check, is not a file this host can trust (the state-file rules of the *Running plugins* article), or is in use by another
/// host: the host never starts empty over state it could not read, and two hosts never share
/// one database file.
///
/// If a commit fails (a full disk, an I/O error), nothing from then on is acknowledged: the
/// records that were not made durable get no acknowledgement, waiters get the error, and every
/// later record is refused. `actomaton-host` then stops with one line; a restart resumes from
/// what was durable. A store shared by several hosts may instead refuse the records of names
/// another host took over (``JournalStoreFencing``): those records alone are refused
/// (``PluginJournalError/Reason/fenced(_:)``), the rest are committed, and
/// ``observeFencing(_:)`` is told the names.
///
/// The write-ahead log is checkpointed every ``SQLiteJournalStore/walCheckpointPages`` pages and
/// cut back to ``SQLiteJournalStore/walSizeLimit`` bytes after each checkpoint, and truncated to
/// nothing at ``close()``; the database holds two snapshots per plugin and the actions after
/// the older one. So both stay within a size set by the plugins' states and the snapshot
/// interval, whatever the number of actions.
public final class PluginJournal: @unchecked Sendable {
    /// The format this host writes and reads in a SQLite file (``SQLiteJournalStore/formatVersion``).
    public static let formatVersion = SQLiteJournalStore.formatVersion
    /// The most records one transaction commits: a long queue is written as several commits.
    public static let maxRecordsPerCommit = 2048
    /// The most refusals of fenced records kept for waiters and for their acknowledgement state.
    static let maxKeptRefusals = 4096

    /// Where the records live: the database file, or the shared database's address.
    public let path: String
    /// How it writes.
    public let options: JournalOptions
    /// Where the records live.
    public let store: any JournalStore
    /// Whether this journal writes (`false`: opened with ``init(readingAt:)``).
    private let isWriting: Bool

    /// Told once, on the writer's thread, when a commit fails.
    private let writeFailureHandler: (@Sendable (PluginJournalError) -> Void)?
    /// Guards the state below; the writer waits on it for records, `close` for the writer.
    private let condition = MonotonicCondition()
    /// The writer's thread (its one work item is `writeLoop`); `nil` when reading only.
    private var writer: BlockingQueue?
    // Guarded by `condition`:
    private var pending: [PendingRecord] = []
    private var nextTicket: UInt64 = 1
    /// Every record up to this ticket is acknowledged (acknowledgements go in ticket order),
    /// but for those refused as fenced.
    private var acknowledgedTicket: UInt64 = 0
    /// Every record up to this ticket is committed (or refused as fenced).
    private var durableTicket: UInt64 = 0
    /// Records acknowledged before their commit (``JournalSyncPolicy/batch``) and not yet committed.
    private var acknowledgedEarly = 0
    private var waiters: [(ticket: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    /// Those waiting for a record's commit, not its acknowledgement (``waitUntilCommitted()``).
    private var commitWaiters: [(ticket: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    /// Records refused because another host owns their name (the latest ``maxKeptRefusals``).
    private var refusedTickets: [UInt64: PluginJournalError] = [:]
    private var closing = false
    private var storeClosed = false
    /// Set once the first ``close()`` has closed the store: later calls wait for it.
    private var storeReleased = false
    private var writerFinished = false
    /// The keys new timers may still take (``JournalStore/timerKeys()``).
    private var timerKeys: Range<Int64>
    private var failure: PluginJournalError?
    /// Records acknowledged before their commit (``JournalSyncPolicy/batch``) that the failed
    /// commit, or the ones refused after it, left out.
    private var lostAcknowledged = 0
    private var commitObserver: (@Sendable (Duration, Int) -> Void)?
    private var fencingObserver: (@Sendable (Set<String>) -> Void)?

    /// A record waiting for its commit.
    private struct PendingRecord {
        let ticket: UInt64
        let record: JournalRecord
        /// The epoch its writer owns its name at, in a cluster.
        let epoch: Int64?
        /// Runs at its commit; `nil` when it was acknowledged when appended.
        let acknowledge: (@Sendable () -> Void)?
        let acknowledgedEarly: Bool
        /// When it was appended (`CLOCK_MONOTONIC`, nanoseconds).
        let appended: UInt64
    }

    /// Opens the SQLite database at `path` for a host, or creates it when there is no file (or
    /// an empty one), and locks it for this journal's life.
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - options: How it writes.
    ///   - onWriteFailure: Told once, on the journal's writer thread, when a commit fails; from
    ///     then on nothing is acknowledged.
    public convenience init(path: String, options: JournalOptions = .init(),
                            onWriteFailure: (@Sendable (PluginJournalError) -> Void)? = nil) throws(PluginJournalError) {
        try self.init(store: SQLiteJournalStore(path: path, options: options), options: options, onWriteFailure: onWriteFailure)
    }

    /// Journals into `store`, which this journal closes at ``close()``.
    ///
    /// - Parameters:
    ///   - store: Where the records live, opened for writing.
    ///   - options: How it writes.
    ///   - onWriteFailure: Told once, on the journal's writer thread, when a commit fails; from
    ///     then on nothing is acknowledged.
    public init(store: any JournalStore, options: JournalOptions = .init(),
                onWriteFailure: (@Sendable (PluginJournalError) -> Void)? = nil) throws(PluginJournalError) {
        self.store = store
        path = store.location
        self.options = options
        isWriting = true
        writeFailureHandler = onWriteFailure
        do {
            timerKeys = try store.timerKeys()
        } catch {
            store.close(clean: false)
            throw PluginJournalError(error, at: store.location)
        }
        do {
            try startWriter()
        } catch {
            store.close(clean: false)
            // `deinit` still runs, and its `close()` must not wait for a writer that never was.
            (closing, storeClosed, storeReleased, writerFinished) = (true, true, true, true)
            throw PluginJournalError(.unreadable("cannot start the journal's writer thread: \(error)"), at: path)
        }
    }

    /// Opens the SQLite database at `path` to read what it holds, writing nothing (not even a
    /// schema into an empty file); it may be in use by a host meanwhile. Appending to it is
    /// refused.
    public convenience init(readingAt path: String) throws(PluginJournalError) {
        self.init(reading: try SQLiteJournalStore(readingAt: path))
    }

    /// Reads what `store` holds; appending is refused. This journal closes the store at ``close()``.
    ///
    /// - Parameter store: Where the records live.
    public init(reading store: any JournalStore) {
        self.store = store
        path = store.location
        options = JournalOptions()
        isWriting = false
        writeFailureHandler = nil
        timerKeys = 1..<1
        failure = PluginJournalError(.closed, at: path)
        closing = true
        writerFinished = true
    }

    deinit {
        close()
    }

    // MARK: Reading

    /// What the journal holds for `plugin`: its snapshots, actions and timers.
    public func recovery(for plugin: String) throws(PluginJournalError) -> JournalRecovery {
        do { return try store.recovery(for: plugin) } catch { throw PluginJournalError(error, at: path) }
    }

    /// The journaled actions of `plugin` after `sequence` (all by default), oldest first.
    public func journaledActions(of plugin: String, after sequence: Int64 = 0) throws(PluginJournalError) -> [JournaledAction] {
        do { return try store.actions(of: plugin, after: sequence) } catch { throw PluginJournalError(error, at: path) }
    }

    /// The receipts kept until `now` or later (milliseconds since 1970), the latest to expire
    /// first, at most `limit` of them; none from a format 1 file read without upgrading it.
    ///
    /// - Parameters:
    ///   - now: The time, in milliseconds since 1970: receipts that expired before are left out.
    ///   - limit: The most receipts returned.
    ///   - answerBytes: The most bytes of answers read, in that order: the answers past it,
    ///     and any past ``JournaledReceipt/maxAnswerBytes``, are left in the journal (`nil`).
    public func receipts(keptAfter now: Int64, limit: Int, answerBytes: Int = .max) throws(PluginJournalError) -> [JournaledReceipt] {
        do { return try store.receipts(keptAfter: now, limit: limit, answerBytes: answerBytes) } catch { throw PluginJournalError(error, at: path) }
    }

    /// How many transitions `name` has had in all, pruned ones included (0 for none). Throws
    /// for a count no host writes, below 0 or past ``JournalRecovery/maxTransitionCount`` (an
    /// edited file or database: a watcher of the name converted -1 and the host trapped).
    ///
    /// - Parameter name: The name the machine is journaled under.
    public func transitionCount(of name: String) throws(PluginJournalError) -> Int64 {
        let count: Int64
        do { count = try store.transitionCount(of: name) } catch { throw PluginJournalError(error, at: path) }
        guard (0...JournalRecovery.maxTransitionCount).contains(count) else {
            throw PluginJournalError(.badRecord("the count of transitions of \(name) is \(count), outside what a host writes "
                                                + "(0 to \(JournalRecovery.maxTransitionCount))"), at: path)
        }
        return count
    }

    /// The receipt kept under `key` for `name`, if any (expired or not).
    ///
    /// - Parameters:
    ///   - name: The name the machine is journaled under.
    ///   - key: The request's key.
    public func receipt(of name: String, key: String) throws(PluginJournalError) -> JournaledReceipt? {
        do { return try store.receipt(of: name, key: key) } catch { throw PluginJournalError(error, at: path) }
    }

    /// Tells `observer`, on the journal's writer thread, how long each commit took (its disk
    /// sync included) and how many records it held; for metrics. Keep it short. Replaces the
    /// observer set before.
    ///
    /// - Parameter observer: Told each successful commit's duration and record count.
    public func observeCommits(_ observer: @escaping @Sendable (_ duration: Duration, _ records: Int) -> Void) {
        condition.lock()
        commitObserver = observer
        condition.unlock()
    }

    /// Tells `observer`, on the journal's writer thread, the names whose records the store
    /// refused because another host owns them now (``JournalStoreFencing``): their machines
    /// must be dropped. Keep it short. Replaces the observer set before.
    ///
    /// - Parameter observer: Told the fenced names of each commit that had some.
    public func observeFencing(_ observer: @escaping @Sendable (_ names: Set<String>) -> Void) {
        condition.lock()
        fencingObserver = observer
        condition.unlock()
    }

    /// The messages journaled with `name`'s actions whose number in its count of transitions
    /// (from 1) is above `ordinal`, oldest first, at most `limit`: each with its number. It
    /// stops before the first action journaled without a message; none from a format 1 file
    /// read without upgrading it. The journal keeps the actions since the older of its two
    /// snapshots of a name, so the first number may be above `ordinal + 1`.
    ///
    /// - Parameters:
    ///   - name: The name the machine is journaled under.
    ///   - ordinal: The number of the last transition not wanted.
    ///   - limit: The most messages returned.
    public func journaledMessages(of name: String, after ordinal: Int64, limit: Int) throws(PluginJournalError) -> [(ordinal: Int64, message: String)] {
        do { return try store.messages(of: name, after: ordinal, limit: limit) } catch { throw PluginJournalError(error, at: path) }
    }

    /// The messages journaled with `name`'s actions numbered above `ordinal`, or journaled
    /// after `position` (the journal's own number of an action, increasing across names), in
    /// the order they were journaled, at most `limit`, each with its number and position. One
    /// numbered `ordinal` or below is of a later life of `name`, deleted and made again since
    /// the action at `position`: a reader that went by the numbers alone took the new life's
    /// transitions for the old one's.
    ///
    /// - Parameters:
    ///   - name: The name the machine is journaled under.
    ///   - ordinal: The number of the last transition not wanted.
    ///   - position: The position of the last action read, or 0.
    ///   - limit: The most messages returned.
    public func journaledMessages(of name: String, after ordinal: Int64, orJournaledAfter position: Int64,
                                  limit: Int) throws(PluginJournalError) -> [(ordinal: Int64, message: String, position: Int64)] {
        do {
            return try store.messages(of: name, after: ordinal, orJournaledAfter: position, limit: limit)
        } catch {
            throw PluginJournalError(error, at: path)
        }
    }

    /// Every plugin the journal knows, with what it holds for each.
    public func summaries() throws(PluginJournalError) -> [JournalSummary] {
        do { return try store.summaries() } catch { throw PluginJournalError(error, at: path) }
    }

    // MARK: Writing

    /// Forgets everything journaled under `name` — its actions, snapshots and timers — in
    /// order with the records appended before (a machine journaling under `name` must be
    /// closed first). For a service that deletes one of many machines kept in one journal
    /// (``PluginMachine/journalName``). Returns once the forgetting counts as acknowledged
    /// (``JournalSyncPolicy``: with `always`, committed and synced), so that a deletion
    /// answered is not undone by a crash; it used to return at once, and a `kill -9` right
    /// after brought the instance back. Throws why it never will be (a failed commit; in a
    /// cluster, another host owning `name` now).
    public func forget(_ name: String) async throws(PluginJournalError) {
        try await waitUntilAcknowledged(append(.forget(plugin: name)))
    }

    /// `count` new timer keys, unique in this journal's store, one after another: the first of
    /// them; or, when fewer are left, a failure that says the last key this journal had.
    func makeTimerKeys(_ count: Int) -> Result<Int64, TimerKeysUsedUp> {
        condition.lock()
        defer { condition.unlock() }
        guard Int64(count) <= timerKeys.upperBound - timerKeys.lowerBound else { return .failure(TimerKeysUsedUp(lastKey: timerKeys.upperBound - 1)) }
        let first = timerKeys.lowerBound
        timerKeys = (first + Int64(count))..<timerKeys.upperBound
        return .success(first)
    }

    /// Why ``makeTimerKeys(_:)`` gave none: the last key this journal had.
    struct TimerKeysUsedUp: Error {
        let lastKey: Int64
    }

    /// Queues `record`; `acknowledge` runs once it counts as acknowledged (see
    /// ``JournalSyncPolicy``): at its commit, or at once under ``JournalSyncPolicy/batch``
    /// within that policy's bounds. Never runs if the record cannot be made durable. Returns
    /// its ticket, for ``waitUntilAcknowledged(_:)``. `epoch`: the epoch its writer owns the
    /// record's name at, in a cluster (``JournalStore/commit(_:epochs:)``).
    @discardableResult
    func append(epoch: Int64? = nil, _ record: JournalRecord, acknowledge: (@Sendable () -> Void)? = nil) -> UInt64 {
        condition.lock()
        let ticket = nextTicket
        nextTicket += 1
        if failure != nil || closing {
            // Refused: never acknowledged, and its waiters are told why.
            condition.unlock()
            return ticket
        }
        let now = MonotonicCondition.now()
        let early = options.sync == .batch && acknowledgesEarly(at: now)
        // Only an empty queue can have the writer asleep without a deadline.
        if pending.isEmpty || !early { condition.broadcast() }
        pending.append(PendingRecord(ticket: ticket, record: record, epoch: epoch, acknowledge: early ? nil : acknowledge,
                                     acknowledgedEarly: early, appended: now))
        if early {
            acknowledgedEarly += 1
            acknowledgedTicket = ticket
        }
        condition.unlock()
        if early { acknowledge?() }
        return ticket
    }

    /// Under ``JournalSyncPolicy/batch``: whether a record appended now may be acknowledged
    /// before its commit — only while no record before it waits for its commit, fewer than
    /// ``JournalOptions/maxUnsyncedActions`` are acknowledged and not committed, and the
    /// oldest of those was appended less than ``JournalOptions/batchWindow`` ago (`condition` held).
    private func acknowledgesEarly(at now: UInt64) -> Bool {
        guard acknowledgedTicket == nextTicket - 2 else { return false }
        guard acknowledgedEarly < options.maxUnsyncedActions else { return false }
        // The writer's batch in flight is older than anything still pending.
        guard let oldest = inFlightOldestEarly ?? pending.first(where: \.acknowledgedEarly) else { return true }
        return now &- oldest.appended < options.batchWindow.nanoseconds
    }

    /// The oldest early-acknowledged record the writer is committing now, if any (`condition` held).
    private var inFlightOldestEarly: PendingRecord?

    /// Where the record of `ticket`'s acknowledgement stands now.
    func acknowledgementState(of ticket: UInt64) -> PluginAcknowledgement.State {
        condition.lock()
        defer { condition.unlock() }
        if refusedTickets[ticket] != nil { return .refused }
        if acknowledgedTicket >= ticket { return .acknowledged }
        return failure != nil || writerFinished ? .refused : .pending
    }

    /// Returns once the record of `ticket` counts as acknowledged; throws why if it never will
    /// (a commit failed, or the journal closed first).
    func waitUntilAcknowledged(_ ticket: UInt64) async throws(PluginJournalError) {
        condition.lock()
        if let refusal = refusedTickets[ticket] {
            condition.unlock()
            throw refusal
        }
        if acknowledgedTicket >= ticket {
            condition.unlock()
            return
        }
        try await park(ticket, untilCommitted: false)
    }

    /// Waits, `condition` held on entry and released here, until the writer resumes the
    /// waiter of `ticket`: at its acknowledgement, or its commit when `untilCommitted`.
    private func park(_ ticket: UInt64, untilCommitted: Bool) async throws(PluginJournalError) {
        if let error = failure ?? (writerFinished ? PluginJournalError(.closed, at: path) : nil) {
            condition.unlock()
            throw error
        }
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if untilCommitted {
                    commitWaiters.append((ticket, continuation))
                } else {
                    waiters.append((ticket, continuation))
                }
                condition.unlock()
            }
        } catch {
            throw error as? PluginJournalError ?? PluginJournalError(.closed, at: path)
        }
    }

    /// Returns once every record appended before the call is committed — also under
    /// ``JournalSyncPolicy/batch``, where records are acknowledged before their commit — so a
    /// read made after it sees them all; throws why they never will be (a failed commit, or the
    /// journal closed first).
    public func waitUntilCommitted() async throws(PluginJournalError) {
        condition.lock()
        let ticket = nextTicket - 1
        if durableTicket >= ticket {
            condition.unlock()
            return
        }
        try await park(ticket, untilCommitted: true)
    }

    /// How many records are acknowledged and not yet committed (``JournalSyncPolicy/batch``).
    var unsyncedAcknowledgedCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return acknowledgedEarly
    }

    /// How many acknowledged records a failed commit lost: those ``JournalSyncPolicy/batch``
    /// acknowledged before their commit (at most its window's). 0 under the other policies, and
    /// while all is well.
    public var acknowledgedButLost: Int {
        condition.lock()
        defer { condition.unlock() }
        return lostAcknowledged
    }

    /// Why nothing is acknowledged any more: the commit that failed; `nil` while all is well.
    public var writeFailure: PluginJournalError? {
        condition.lock()
        defer { condition.unlock() }
        return failure.flatMap { $0.reason == .closed ? nil : $0 }
    }

    /// Whether the journal is closing: effects ended by the shutdown are not forgotten.
    var isClosing: Bool {
        condition.lock()
        defer { condition.unlock() }
        return closing
    }

    /// Writes what is queued, stops the writer and closes the store (a SQLite file's
    /// write-ahead log is checkpointed down to nothing and its lock dropped): when this returns,
    /// the files are free for another connection or host — whichever call closed them, when
    /// two threads call it at once. Later records are refused.
    public func close() {
        condition.lock()
        guard !storeClosed else {
            // Another call is closing: returning before it is done would let a caller that
            // exits at once (a stop by signal) cut its last commit short.
            while !storeReleased { condition.wait(until: nil) }
            condition.unlock()
            return
        }
        storeClosed = true
        closing = true
        condition.broadcast()
        while !writerFinished { condition.wait(until: nil) }
        let clean = failure == nil || !isWriting
        condition.unlock()
        writer?.close()
        store.close(clean: clean && isWriting)
        condition.lock()
        storeReleased = true
        condition.broadcast()
        condition.unlock()
    }

    private func startWriter() throws(Errno) {
        let queue = try BlockingQueue(name: "journal-writer")
        // The writer holds no reference: `close` (from `deinit` at the latest) waits for it.
        let journal = Unmanaged.passUnretained(self)
        try? queue.enqueue { journal.takeUnretainedValue().writeLoop() } // a new queue is open
        writer = queue
    }

    private func writeLoop() {
        condition.lock()
        while true {
            while pending.isEmpty && !closing { condition.wait(until: nil) }
            if pending.isEmpty && closing { break }
            if options.sync == .batch && !closing {
                // Gather the batch until the window of its oldest record ends, unless a record
                // waits for its commit to be acknowledged or the batch is full.
                let deadline = pending[0].appended &+ options.batchWindow.nanoseconds
                while !closing, pending.allSatisfy(\.acknowledgedEarly), pending.count < Self.maxRecordsPerCommit,
                      MonotonicCondition.now() < deadline {
                    condition.wait(until: deadline)
                }
            }
            let count = min(pending.count, Self.maxRecordsPerCommit)
            let batch = Array(pending.prefix(count))
            pending.removeFirst(count)
            inFlightOldestEarly = batch.first(where: \.acknowledgedEarly)
            let failed = failure != nil
            let observer = commitObserver
            let fencingObserver = fencingObserver
            condition.unlock()

            let started = MonotonicCondition.now()
            var fenced: Set<String> = []
            let outcome: PluginJournalError? = failed ? nil : commit(batch.map(\.record), epochs: batch.map(\.epoch), fenced: &fenced)
            if !failed, outcome == nil, let observer {
                observer(.nanoseconds(Int64(MonotonicCondition.now() &- started)), batch.count)
            }
            if !fenced.isEmpty { fencingObserver?(fenced) }

            condition.lock()
            inFlightOldestEarly = nil
            acknowledgedEarly -= batch.count { $0.acknowledgedEarly }
            if failed || outcome != nil {
                if let outcome, failure == nil {
                    // Nothing is appended after a failure: what was acknowledged early and is
                    // still pending is lost with this batch's.
                    lostAcknowledged = batch.count { $0.acknowledgedEarly } + pending.count { $0.acknowledgedEarly }
                    failure = outcome
                    condition.unlock()
                    writeFailureHandler?(outcome)
                    condition.lock()
                }
                // Nothing after the failure is acknowledged.
                let error = failure!
                let refused = waiters + commitWaiters
                waiters = []
                commitWaiters = []
                condition.unlock()
                refused.forEach { $0.continuation.resume(throwing: error) }
                condition.lock()
                continue
            }
            durableTicket = batch.last!.ticket
            acknowledgedTicket = max(acknowledgedTicket, durableTicket)
            var refusals: [UInt64: PluginJournalError] = [:]
            for entry in batch {
                if let name = entry.record.name, fenced.contains(name) {
                    refusals[entry.ticket] = PluginJournalError(.fenced(name), at: path)
                }
            }
            let ready = waiters.filter { $0.ticket <= acknowledgedTicket }
            waiters.removeAll { $0.ticket <= acknowledgedTicket }
            let committed = commitWaiters.filter { $0.ticket <= durableTicket }
            commitWaiters.removeAll { $0.ticket <= durableTicket }
            // Kept for later waiters and for `acknowledgementState`, the latest ones only.
            refusedTickets.merge(refusals) { $1 }
            if refusedTickets.count > Self.maxKeptRefusals {
                for ticket in refusedTickets.keys.sorted().prefix(refusedTickets.count - Self.maxKeptRefusals) {
                    refusedTickets[ticket] = nil
                }
            }
            condition.unlock()
            for entry in batch where refusals[entry.ticket] == nil { entry.acknowledge?() }
            for waiter in ready {
                if let refusal = refusals[waiter.ticket] {
                    waiter.continuation.resume(throwing: refusal)
                } else {
                    waiter.continuation.resume()
                }
            }
            committed.forEach { $0.continuation.resume() }
            condition.lock()
        }
        writerFinished = true
        let error = failure ?? PluginJournalError(.closed, at: path)
        let left = waiters + commitWaiters
        waiters = []
        commitWaiters = []
        condition.broadcast()
        condition.unlock()
        left.forEach { $0.continuation.resume(throwing: error) }
    }

    /// Writes `records` in one transaction; the error if they could not be made durable. When
    /// the store refuses some names as fenced, the records of the others are committed without
    /// them, and `fenced` holds those names.
    private func commit(_ records: [JournalRecord], epochs: [Int64?], fenced: inout Set<String>) -> PluginJournalError? {
        var records = records
        var epochs = epochs
        while true {
            do {
                try store.commit(records, epochs: epochs)
                return nil
            } catch let fencing as JournalStoreFencing where !fencing.names.isEmpty && fencing.names.isDisjoint(with: fenced) {
                fenced.formUnion(fencing.names)
                let kept = records.indices.filter { !(records[$0].name.map(fenced.contains) ?? false) }
                records = kept.map { records[$0] }
                epochs = kept.map { epochs[$0] }
                if records.isEmpty { return nil }
            } catch let reason as PluginJournalError.Reason {
                if case .writeFailed = reason { return PluginJournalError(reason, at: path) }
                return PluginJournalError(.writeFailed("\(reason)"), at: path)
            } catch {
                return PluginJournalError(.writeFailed("\(error)"), at: path)
            }
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds (negative durations count as zero).
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}

/// Milliseconds since 1970 on the wall clock: when journaled timers are due.
func wallClockMilliseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}
