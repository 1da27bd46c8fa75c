import ActomatonPluginContract
import CSQLite
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The host's memory on disk (`--state`): a SQLite database in WAL mode holding, per plugin,
/// every accepted action, periodic snapshots of its state, and its pending delayed and
/// repeating actions — so a restarted host brings every machine back where it was.
///
/// Machines append records from their actors; one writer thread commits them in order, many
/// records per transaction (group commit), while the machines go on. What "acknowledged"
/// means, and what a crash can lose, is the ``JournalSyncPolicy``.
///
/// The database is refused, with one line and before anything is written, when it cannot be
/// read, is another application's, was written by a newer host, fails SQLite's integrity
/// check, is not a file this host can trust (the state-file rules of the *Running plugins* article), or is in use by another
/// host: the host never starts empty over state it could not read, and two hosts never share
/// one database.
///
/// If a commit fails (a full disk, an I/O error), nothing from then on is acknowledged: the
/// records that were not made durable get no acknowledgement, waiters get the error, and every
/// later record is refused. `actomaton-host` then stops with one line; a restart resumes from
/// what was durable.
///
/// The write-ahead log is checkpointed every ``walCheckpointPages`` pages and cut back to
/// ``walSizeLimit`` bytes after each checkpoint, and truncated to nothing at ``close()``; the
/// database holds two snapshots per plugin and the actions after the older one. So both stay
/// within a size set by the plugins' states and the snapshot interval, whatever the number of
/// actions.
public final class PluginJournal: @unchecked Sendable {
    /// The format this host writes and reads (`PRAGMA user_version`). Format 2 added each
    /// name's count of transitions; a format 1 file is brought up to it when a host opens it.
    public static let formatVersion: Int64 = 2
    /// Marks the file as this host's (`PRAGMA application_id`, "ACTJ").
    static let applicationID: Int64 = 0x4143_544A
    /// After how many pages (4 KiB each) the write-ahead log is checkpointed.
    public static let walCheckpointPages = 1000
    /// The most bytes the write-ahead log keeps after a checkpoint (`PRAGMA journal_size_limit`).
    public static let walSizeLimit = 4 << 20
    /// The most records one transaction commits: a long queue is written as several commits.
    public static let maxRecordsPerCommit = 2048

    /// The database file.
    public let path: String
    /// How it writes.
    public let options: JournalOptions

    private let database: SQLiteDatabase
    /// The lock held for the journal's life; `nil` when reading only.
    private let file: StateDatabaseFile?
    /// Told once, on the writer's thread, when a commit fails.
    private let writeFailureHandler: (@Sendable (PluginJournalError) -> Void)?
    /// Held while the database is used: by the writer for a commit, by readers otherwise.
    private let databaseLock = Mutex(())
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// The writer's thread (its one work item is `writeLoop`); `nil` when reading only.
    private var writer: BlockingQueue?
    // Guarded by `mutex`:
    private var pending: [PendingRecord] = []
    private var nextTicket: UInt64 = 1
    /// Every record up to this ticket is acknowledged (acknowledgements go in ticket order).
    private var acknowledgedTicket: UInt64 = 0
    /// Every record up to this ticket is committed.
    private var durableTicket: UInt64 = 0
    /// Records acknowledged before their commit (``JournalSyncPolicy/batch``) and not yet committed.
    private var acknowledgedEarly = 0
    private var waiters: [(ticket: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    private var closing = false
    private var writerFinished = false
    private var nextTimerKey: Int64
    private var failure: PluginJournalError?
    private var commitObserver: (@Sendable (Duration, Int) -> Void)?
    // Touched by the writer thread only:
    private var lastSequence: [String: Int64] = [:]
    /// Each name's count of journaled actions, as committed with the last batch or since.
    private var transitionCounts: [String: Int64] = [:]
    private var statements: WriterStatements?
    /// Whether the file has format 2's tables, the counts of transitions and the receipts (a
    /// format 1 file read only has not).
    private var countsTransitions = true

    /// A record waiting for its commit.
    private struct PendingRecord {
        let ticket: UInt64
        let record: JournalRecord
        /// Runs at its commit; `nil` when it was acknowledged when appended.
        let acknowledge: (@Sendable () -> Void)?
        let acknowledgedEarly: Bool
        /// When it was appended (`CLOCK_MONOTONIC`, nanoseconds).
        let appended: UInt64
    }

    /// Opens the database at `path` for a host, or creates it when there is no file (or an
    /// empty one), and locks it for this journal's life.
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - options: How it writes.
    ///   - onWriteFailure: Told once, on the journal's writer thread, when a commit fails; from
    ///     then on nothing is acknowledged.
    public init(path: String, options: JournalOptions = .init(),
                onWriteFailure: (@Sendable (PluginJournalError) -> Void)? = nil) throws(PluginJournalError) {
        self.path = path
        self.options = options
        writeFailureHandler = onWriteFailure
        let file: StateDatabaseFile
        do {
            file = try StateDatabaseFile.lockForWriting(path)
        } catch {
            throw PluginJournalError(error, at: path)
        }
        do {
            database = try SQLiteDatabase(path: path, access: .readWrite(create: false))
        } catch {
            file.release()
            throw PluginJournalError(Self.reason(for: error), at: path)
        }
        do {
            // Counted by SQLite, after it has rolled back a write a stopped host left behind
            // (the file's size would count pages that write added).
            if try database.integer("PRAGMA page_count") ?? 0 > 0 {
                try Self.check(database)
                try Self.upgrade(database)
            } else {
                try Self.createSchema(database)
            }
            try database.execute("PRAGMA journal_mode = WAL")
            try database.execute("PRAGMA synchronous = \(options.sync == .off ? "OFF" : "FULL")")
            try database.execute("PRAGMA wal_autocheckpoint = \(Self.walCheckpointPages)")
            try database.execute("PRAGMA journal_size_limit = \(Self.walSizeLimit)")
            if let limit = options.maxDatabaseSize {
                try database.execute("PRAGMA max_page_count = \(max(1, limit / 4096))")
            }
            nextTimerKey = try database.integer("SELECT coalesce(max(key), 0) + 1 FROM timers") ?? 1
            // Receipts past their time are kept no longer.
            try database.execute("DELETE FROM receipts WHERE expires < \(wallClockMilliseconds())")
        } catch {
            database.close()
            file.release()
            throw PluginJournalError(Self.reason(for: error), at: path)
        }
        self.file = file
        initializeLocks()
        do {
            try startWriter()
        } catch {
            database.close()
            file.release()
            throw PluginJournalError(.unreadable("cannot start the journal's writer thread: \(error)"), at: path)
        }
    }

    /// Opens the database at `path` to read what it holds, writing nothing (not even a
    /// schema into an empty file); it may be in use by a host meanwhile. Appending to it is
    /// refused.
    public init(readingAt path: String) throws(PluginJournalError) {
        self.path = path
        options = JournalOptions()
        writeFailureHandler = nil
        file = nil
        do {
            try StateDatabaseFile.vetForReading(path)
            database = try SQLiteDatabase(path: path, access: .readOnly)
        } catch {
            throw PluginJournalError(Self.reason(for: error), at: path)
        }
        do {
            try Self.check(database)
            countsTransitions = try database.integer("SELECT count(*) FROM sqlite_master WHERE name = 'transitions'") == 1
        } catch let failure as SQLiteDatabase.Failure where failure.code & 0xFF == SQLITE_READONLY {
            database.close()
            throw PluginJournalError(Self.leftMidWrite, at: path)
        } catch {
            database.close()
            throw PluginJournalError(Self.reason(for: error), at: path)
        }
        nextTimerKey = 1
        failure = PluginJournalError(.closed, at: path)
        closing = true
        writerFinished = true
        initializeLocks()
    }

    /// A database a host stopped in the middle of writing (a rollback journal beside it) needs a
    /// repair before it can be read, and reading must not write.
    static let leftMidWrite = PluginJournalError.Reason.unreadable(
        "it was left in the middle of a write (a host stopped while writing it), and reading it needs a repair that reading "
            + "must not make: run the host on it once (run or serve with --state), which repairs it")

    /// The mutex, and a condition whose timed waits use the monotonic clock.
    private func initializeLocks() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(wake, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        close()
        pthread_cond_destroy(wake)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        wake.deallocate()
    }

    private static func reason(for error: any Error) -> PluginJournalError.Reason {
        if let reason = error as? PluginJournalError.Reason { return reason }
        guard let failure = error as? SQLiteDatabase.Failure else { return .unreadable("\(error)") }
        switch failure.code & 0xFF {
        case SQLITE_MISUSE: return .closed
        case SQLITE_NOTADB: return .corrupt("it is not a SQLite database")
        case SQLITE_CORRUPT: return .corrupt(failure.message)
        default: return .unreadable(failure.message)
        }
    }

    private static func check(_ database: SQLiteDatabase) throws -> Void {
        let application = try database.integer("PRAGMA application_id") ?? 0
        guard application == applicationID else { throw PluginJournalError.Reason.notAStateDatabase }
        let format = try database.integer("PRAGMA user_version") ?? 0
        guard format <= formatVersion else { throw PluginJournalError.Reason.newerFormat(found: format, supported: formatVersion) }
        let verdict = try database.text("PRAGMA quick_check") ?? "no answer"
        guard verdict == "ok" else { throw PluginJournalError.Reason.corrupt(verdict) }
    }

    private static func createSchema(_ database: SQLiteDatabase) throws -> Void {
        // One transaction: a host stopped while creating the file leaves it empty, not half made.
        try database.execute("""
            BEGIN IMMEDIATE;
            PRAGMA application_id = \(applicationID);
            PRAGMA user_version = \(formatVersion);
            CREATE TABLE actions (seq INTEGER PRIMARY KEY AUTOINCREMENT, plugin TEXT NOT NULL, version TEXT NOT NULL,
                                  action TEXT NOT NULL, args BLOB NOT NULL, ordinal INTEGER, message TEXT);
            CREATE INDEX actions_by_plugin ON actions (plugin, seq);
            CREATE TABLE snapshots (plugin TEXT NOT NULL, seq INTEGER NOT NULL, version TEXT NOT NULL, state BLOB NOT NULL,
                                    PRIMARY KEY (plugin, seq));
            CREATE TABLE timers (key INTEGER PRIMARY KEY, plugin TEXT NOT NULL, action TEXT NOT NULL, args BLOB NOT NULL,
                                 due INTEGER NOT NULL, interval INTEGER, effect_id TEXT, queue TEXT, policy INTEGER, max_count INTEGER);
            CREATE TABLE pruned (plugin TEXT PRIMARY KEY, through INTEGER NOT NULL);
            CREATE TABLE transitions (plugin TEXT PRIMARY KEY, count INTEGER NOT NULL);
            CREATE TABLE receipts (plugin TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, answer TEXT NOT NULL,
                                   expires INTEGER NOT NULL, PRIMARY KEY (plugin, key));
            COMMIT;
            """)
    }

    /// Brings a format 1 file up to this format, in one transaction: each name's count of
    /// transitions starts where format 1 numbered them (the journal's number of its last action).
    private static func upgrade(_ database: SQLiteDatabase) throws {
        guard try database.integer("PRAGMA user_version") ?? 0 < 2 else { return }
        let columns = try database.prepare("SELECT name FROM pragma_table_info('actions')")
        var existing: Set<String> = []
        while try columns.step() { existing.insert(columns.text(0)) }
        columns.reset()
        let added = ["ordinal INTEGER", "message TEXT"].filter { !existing.contains(String($0.prefix { $0 != " " })) }
        try database.execute("""
            BEGIN IMMEDIATE;
            CREATE TABLE IF NOT EXISTS transitions (plugin TEXT PRIMARY KEY, count INTEGER NOT NULL);
            \(added.map { "ALTER TABLE actions ADD COLUMN \($0);" }.joined(separator: "\n"))
            CREATE TABLE IF NOT EXISTS receipts (plugin TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,
                                                 answer TEXT NOT NULL, expires INTEGER NOT NULL, PRIMARY KEY (plugin, key));
            INSERT OR IGNORE INTO transitions (plugin, count)
                SELECT name, max(coalesce((SELECT max(seq) FROM actions WHERE plugin = name), 0),
                                 coalesce((SELECT max(seq) FROM snapshots WHERE plugin = name), 0))
                FROM (SELECT plugin AS name FROM actions UNION SELECT plugin FROM snapshots);
            PRAGMA user_version = 2;
            COMMIT;
            """)
    }

    // MARK: Reading

    /// What the journal holds for `plugin`: its snapshots, actions and timers.
    public func recovery(for plugin: String) throws(PluginJournalError) -> JournalRecovery {
        do {
            return try databaseLock.withLock { _ in
                let snapshots = try database.prepare("SELECT seq, version, state FROM snapshots WHERE plugin = ? ORDER BY seq DESC")
                snapshots.bind(.text(plugin))
                var recovery = JournalRecovery(snapshots: [], actions: [], startsAtTheBeginning: true, timers: [])
                if countsTransitions {
                    let count = try database.prepare("SELECT count FROM transitions WHERE plugin = ?")
                    count.bind(.text(plugin))
                    if try count.step() { recovery.transitionCount = count.integer(0) }
                }
                while try snapshots.step() {
                    recovery.snapshots.append(JournaledSnapshot(sequence: snapshots.integer(0), version: snapshots.text(1), bytes: snapshots.blob(2)))
                }
                recovery.actions = try actions(of: plugin, after: recovery.snapshots.first?.sequence ?? 0)
                let pruned = try database.prepare("SELECT through FROM pruned WHERE plugin = ?")
                pruned.bind(.text(plugin))
                recovery.startsAtTheBeginning = try !pruned.step()
                let timers = try database.prepare("""
                    SELECT key, action, args, due, interval, effect_id, queue, policy, max_count FROM timers WHERE plugin = ? ORDER BY key
                    """)
                timers.bind(.text(plugin))
                while try timers.step() {
                    guard let arguments = ArgumentCoding.decode(timers.blob(2)) else {
                        throw PluginJournalError.Reason.badRecord("the arguments of timer \(timers.integer(0))")
                    }
                    var options = PluginEffectOptions()
                    if !timers.isNull(5) { options.id = timers.text(5) }
                    if !timers.isNull(6), let policy = PluginQueuePolicy(abiPolicy: UInt32(clamping: timers.integer(7)),
                                                                          maxCount: Int(timers.integer(8))) {
                        options.queue = .init(name: timers.text(6), policy: policy)
                    }
                    recovery.timers.append(JournaledTimer(
                        key: timers.integer(0), plugin: plugin, action: timers.text(1), arguments: arguments, due: timers.integer(3),
                        interval: timers.isNull(4) ? nil : timers.integer(4), options: options))
                }
                return recovery
            }
        } catch {
            throw PluginJournalError(Self.reason(for: error), at: path)
        }
    }

    /// The journaled actions of `plugin` after `sequence`, oldest first (the database lock held).
    private func actions(of plugin: String, after sequence: Int64) throws -> [JournaledAction] {
        let statement = try database.prepare("SELECT seq, version, action, args FROM actions WHERE plugin = ? AND seq > ? ORDER BY seq")
        statement.bind(.text(plugin), .integer(sequence))
        var actions: [JournaledAction] = []
        while try statement.step() {
            guard let arguments = ArgumentCoding.decode(statement.blob(3)) else {
                throw PluginJournalError.Reason.badRecord("the arguments of action #\(statement.integer(0))")
            }
            actions.append(JournaledAction(sequence: statement.integer(0), version: statement.text(1), action: statement.text(2), arguments: arguments))
        }
        return actions
    }

    /// The journaled actions of `plugin` after `sequence` (all by default), oldest first.
    public func journaledActions(of plugin: String, after sequence: Int64 = 0) throws(PluginJournalError) -> [JournaledAction] {
        do {
            return try databaseLock.withLock { _ in try actions(of: plugin, after: sequence) }
        } catch {
            throw PluginJournalError(Self.reason(for: error), at: path)
        }
    }

    /// The receipts kept until `now` or later (milliseconds since 1970), the latest to expire
    /// first, at most `limit` of them; none from a format 1 file read without upgrading it.
    ///
    /// - Parameters:
    ///   - now: The time, in milliseconds since 1970: receipts that expired before are left out.
    ///   - limit: The most receipts returned.
    public func receipts(keptAfter now: Int64, limit: Int) throws(PluginJournalError) -> [JournaledReceipt] {
        guard countsTransitions else { return [] }
        do {
            return try databaseLock.withLock { _ in
                let statement = try database.prepare("""
                    SELECT plugin, key, fingerprint, answer, expires FROM receipts WHERE expires >= ? ORDER BY expires DESC LIMIT ?
                    """)
                statement.bind(.integer(now), .integer(Int64(limit)))
                var receipts: [JournaledReceipt] = []
                while try statement.step() {
                    receipts.append(JournaledReceipt(plugin: statement.text(0), key: statement.text(1), fingerprint: statement.text(2),
                                                     answer: statement.text(3), expires: statement.integer(4)))
                }
                return receipts
            }
        } catch {
            throw PluginJournalError(Self.reason(for: error), at: path)
        }
    }

    /// Tells `observer`, on the journal's writer thread, how long each commit took (its disk
    /// sync included) and how many records it held; for metrics. Keep it short. Replaces the
    /// observer set before.
    ///
    /// - Parameter observer: Told each successful commit's duration and record count.
    public func observeCommits(_ observer: @escaping @Sendable (_ duration: Duration, _ records: Int) -> Void) {
        pthread_mutex_lock(mutex)
        commitObserver = observer
        pthread_mutex_unlock(mutex)
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
        guard countsTransitions else { return [] }
        do {
            return try databaseLock.withLock { _ in
                let statement = try database.prepare("""
                    SELECT ordinal, message FROM actions WHERE plugin = ? AND ordinal > ? ORDER BY seq LIMIT ?
                    """)
                statement.bind(.text(name), .integer(ordinal), .integer(Int64(limit)))
                var messages: [(ordinal: Int64, message: String)] = []
                while try statement.step(), !statement.isNull(1) {
                    messages.append((statement.integer(0), statement.text(1)))
                }
                return messages
            }
        } catch {
            throw PluginJournalError(Self.reason(for: error), at: path)
        }
    }

    /// Every plugin the journal knows, with what it holds for each.
    public func summaries() throws(PluginJournalError) -> [JournalSummary] {
        do {
            return try databaseLock.withLock { _ in
                let statement = try database.prepare("""
                    SELECT name,
                           (SELECT count(*) FROM actions WHERE plugin = name),
                           (SELECT max(seq) FROM snapshots WHERE plugin = name),
                           (SELECT length(state) FROM snapshots WHERE plugin = name ORDER BY seq DESC LIMIT 1),
                           (SELECT count(*) FROM timers WHERE plugin = name)
                    FROM (SELECT plugin AS name FROM actions UNION SELECT plugin FROM snapshots UNION SELECT plugin FROM timers)
                    ORDER BY name
                    """)
                var summaries: [JournalSummary] = []
                while try statement.step() {
                    summaries.append(JournalSummary(
                        plugin: statement.text(0), actionCount: Int(statement.integer(1)),
                        lastSnapshot: statement.isNull(2) ? nil : (statement.integer(2), Int(statement.integer(3))),
                        timerCount: Int(statement.integer(4))))
                }
                return summaries
            }
        } catch {
            throw PluginJournalError(Self.reason(for: error), at: path)
        }
    }

    // MARK: Writing

    /// Forgets everything journaled under `name` — its actions, snapshots and timers — in
    /// order with the records appended before (a machine journaling under `name` must be
    /// closed first). For a service that deletes one of many machines kept in one journal
    /// (``PluginMachine/journalName``). Returns at once; the forgetting is committed with the
    /// next batch.
    public func forget(_ name: String) {
        _ = append(.forget(plugin: name))
    }

    /// A new timer key, unique in this database.
    func makeTimerKey() -> Int64 {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        nextTimerKey += 1
        return nextTimerKey - 1
    }

    /// Queues `record`; `acknowledge` runs once it counts as acknowledged (see
    /// ``JournalSyncPolicy``): at its commit, or at once under ``JournalSyncPolicy/batch``
    /// within that policy's bounds. Never runs if the record cannot be made durable. Returns
    /// its ticket, for ``waitUntilAcknowledged(_:)``.
    @discardableResult
    func append(_ record: JournalRecord, acknowledge: (@Sendable () -> Void)? = nil) -> UInt64 {
        pthread_mutex_lock(mutex)
        let ticket = nextTicket
        nextTicket += 1
        if failure != nil || closing {
            // Refused: never acknowledged, and its waiters are told why.
            pthread_mutex_unlock(mutex)
            return ticket
        }
        let now = monotonicNanoseconds()
        let early = options.sync == .batch && acknowledgesEarly(at: now)
        // Only an empty queue can have the writer asleep without a deadline.
        if pending.isEmpty || !early { pthread_cond_broadcast(wake) }
        pending.append(PendingRecord(ticket: ticket, record: record, acknowledge: early ? nil : acknowledge,
                                     acknowledgedEarly: early, appended: now))
        if early {
            acknowledgedEarly += 1
            acknowledgedTicket = ticket
        }
        pthread_mutex_unlock(mutex)
        if early { acknowledge?() }
        return ticket
    }

    /// Under ``JournalSyncPolicy/batch``: whether a record appended now may be acknowledged
    /// before its commit — only while no record before it waits for its commit, fewer than
    /// ``JournalOptions/maxUnsyncedActions`` are acknowledged and not committed, and the
    /// oldest of those was appended less than ``JournalOptions/batchWindow`` ago (`mutex` held).
    private func acknowledgesEarly(at now: UInt64) -> Bool {
        guard acknowledgedTicket == nextTicket - 2 else { return false }
        guard acknowledgedEarly < options.maxUnsyncedActions else { return false }
        // The writer's batch in flight is older than anything still pending.
        guard let oldest = inFlightOldestEarly ?? pending.first(where: \.acknowledgedEarly) else { return true }
        return now &- oldest.appended < options.batchWindow.nanoseconds
    }

    /// The oldest early-acknowledged record the writer is committing now, if any (`mutex` held).
    private var inFlightOldestEarly: PendingRecord?

    /// Where the record of `ticket`'s acknowledgement stands now.
    func acknowledgementState(of ticket: UInt64) -> PluginAcknowledgement.State {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if acknowledgedTicket >= ticket { return .acknowledged }
        return failure != nil || writerFinished ? .refused : .pending
    }

    /// Returns once the record of `ticket` counts as acknowledged; throws why if it never will
    /// (a commit failed, or the journal closed first).
    func waitUntilAcknowledged(_ ticket: UInt64) async throws(PluginJournalError) {
        pthread_mutex_lock(mutex)
        if acknowledgedTicket >= ticket {
            pthread_mutex_unlock(mutex)
            return
        }
        if let error = failure ?? (writerFinished ? PluginJournalError(.closed, at: path) : nil) {
            pthread_mutex_unlock(mutex)
            throw error
        }
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                waiters.append((ticket, continuation))
                pthread_mutex_unlock(mutex)
            }
        } catch {
            throw error as? PluginJournalError ?? PluginJournalError(.closed, at: path)
        }
    }

    /// How many records are acknowledged and not yet committed (``JournalSyncPolicy/batch``).
    var unsyncedAcknowledgedCount: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return acknowledgedEarly
    }

    /// Why nothing is acknowledged any more: the commit that failed; `nil` while all is well.
    public var writeFailure: PluginJournalError? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return failure.flatMap { $0.reason == .closed ? nil : $0 }
    }

    /// Whether the journal is closing: effects ended by the shutdown are not forgotten.
    var isClosing: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return closing
    }

    /// Writes what is queued, stops the writer, checkpoints the write-ahead log down to
    /// nothing, closes the connection and drops the lock: when this returns, the files are
    /// free for another connection or host. Later records are refused.
    public func close() {
        pthread_mutex_lock(mutex)
        guard !closing || file == nil else {
            pthread_mutex_unlock(mutex)
            return
        }
        closing = true
        pthread_cond_broadcast(wake)
        while !writerFinished { pthread_cond_wait(wake, mutex) }
        pthread_mutex_unlock(mutex)
        writer?.close()
        databaseLock.withLock { _ in
            guard !database.isClosed else { return }
            statements = nil
            if file != nil, failure == nil { try? database.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
            database.close()
        }
        file?.release()
    }

    private func startWriter() throws(Errno) {
        let queue = try BlockingQueue(name: "journal-writer")
        // The writer holds no reference: `close` (from `deinit` at the latest) waits for it.
        let journal = Unmanaged.passUnretained(self)
        try? queue.enqueue { journal.takeUnretainedValue().writeLoop() } // a new queue is open
        writer = queue
    }

    private func writeLoop() {
        pthread_mutex_lock(mutex)
        while true {
            while pending.isEmpty && !closing { pthread_cond_wait(wake, mutex) }
            if pending.isEmpty && closing { break }
            if options.sync == .batch && !closing {
                // Gather the batch until the window of its oldest record ends, unless a record
                // waits for its commit to be acknowledged or the batch is full.
                let deadline = pending[0].appended &+ options.batchWindow.nanoseconds
                while !closing, pending.allSatisfy(\.acknowledgedEarly), pending.count < Self.maxRecordsPerCommit,
                      monotonicNanoseconds() < deadline {
                    var until = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
                    pthread_cond_timedwait(wake, mutex, &until)
                }
            }
            let count = min(pending.count, Self.maxRecordsPerCommit)
            let batch = Array(pending.prefix(count))
            pending.removeFirst(count)
            inFlightOldestEarly = batch.first(where: \.acknowledgedEarly)
            let failed = failure != nil
            let observer = commitObserver
            pthread_mutex_unlock(mutex)

            let started = monotonicNanoseconds()
            let outcome: PluginJournalError? = failed ? nil : commit(batch.map(\.record))
            if !failed, outcome == nil, let observer {
                observer(.nanoseconds(Int64(monotonicNanoseconds() &- started)), batch.count)
            }

            pthread_mutex_lock(mutex)
            inFlightOldestEarly = nil
            acknowledgedEarly -= batch.count { $0.acknowledgedEarly }
            if failed || outcome != nil {
                if let outcome, failure == nil {
                    failure = outcome
                    pthread_mutex_unlock(mutex)
                    writeFailureHandler?(outcome)
                    pthread_mutex_lock(mutex)
                }
                // Nothing after the failure is acknowledged.
                let error = failure!
                let refused = waiters
                waiters = []
                pthread_mutex_unlock(mutex)
                refused.forEach { $0.continuation.resume(throwing: error) }
                pthread_mutex_lock(mutex)
                continue
            }
            durableTicket = batch.last!.ticket
            acknowledgedTicket = max(acknowledgedTicket, durableTicket)
            let ready = waiters.filter { $0.ticket <= acknowledgedTicket }
            waiters.removeAll { $0.ticket <= acknowledgedTicket }
            pthread_mutex_unlock(mutex)
            for entry in batch { entry.acknowledge?() }
            for waiter in ready { waiter.continuation.resume() }
            pthread_mutex_lock(mutex)
        }
        writerFinished = true
        let error = failure ?? PluginJournalError(.closed, at: path)
        let left = waiters
        waiters = []
        pthread_cond_broadcast(wake)
        pthread_mutex_unlock(mutex)
        left.forEach { $0.continuation.resume(throwing: error) }
    }

    /// Writes `records` in one transaction; the error if it could not be made durable.
    private func commit(_ records: [JournalRecord]) -> PluginJournalError? {
        do {
            try databaseLock.withLock { _ in
                if statements == nil { statements = try WriterStatements(database) }
                let statements = statements!
                try database.execute("BEGIN IMMEDIATE")
                do {
                    var counted: Set<String> = []
                    for record in records { try apply(record, statements, counted: &counted) }
                    for plugin in counted {
                        try statements.setTransitions.bind(.text(plugin), .integer(transitionCounts[plugin] ?? 0)).run()
                    }
                    try database.execute("COMMIT")
                } catch {
                    try? database.execute("ROLLBACK")
                    statements.resetAll()
                    // Read again from what was committed.
                    transitionCounts = [:]
                    lastSequence = [:]
                    throw error
                }
                statements.resetAll()
            }
            return nil
        } catch {
            return PluginJournalError(.writeFailed("\(error)"), at: path)
        }
    }

    private func apply(_ record: JournalRecord, _ statements: WriterStatements, counted: inout Set<String>) throws {
        switch record {
        case let .action(plugin, version, name, arguments, fired, timers, cancelledIDs, receipt, message):
            if let receipt {
                try statements.insertReceipt.bind(.text(plugin), .text(receipt.key), .text(receipt.fingerprint), .text(receipt.answer),
                                                  .integer(receipt.expires)).run()
            }
            if transitionCounts[plugin] == nil {
                let statement = statements.transitions.bind(.text(plugin))
                transitionCounts[plugin] = try statement.step() ? statement.integer(0) : 0
                statement.reset()
            }
            transitionCounts[plugin]! += 1
            counted.insert(plugin)
            try statements.insertAction.bind(.text(plugin), .text(version), .text(name), .blob(ArgumentCoding.encode(arguments)),
                                             .integer(transitionCounts[plugin]!), message.map { .text($0()) } ?? .null).run()
            lastSequence[plugin] = sqlite3_last_insert_rowid(database.handle)
            if let fired {
                if fired.repeating {
                    try statements.advanceTimer.bind(.integer(fired.key)).run()
                } else {
                    try statements.deleteTimer.bind(.integer(fired.key)).run()
                }
            }
            for id in cancelledIDs { try statements.deleteTimersWithID.bind(.text(plugin), .text(id)).run() }
            for timer in timers {
                try statements.insertTimer.bind(
                    .integer(timer.key), .text(plugin), .text(timer.action), .blob(ArgumentCoding.encode(timer.arguments)),
                    .integer(timer.due), timer.interval.map(SQLiteValue.integer) ?? .null,
                    timer.options.id.map(SQLiteValue.text) ?? .null, timer.options.queue.map { .text($0.name) } ?? .null,
                    timer.options.queue.map { .integer(Int64($0.policy.abiPolicy)) } ?? .null,
                    timer.options.queue.map { .integer(Int64($0.policy.maxCount)) } ?? .null
                ).run()
            }
        case let .snapshot(plugin, version, bytes):
            let sequence: Int64
            if let known = lastSequence[plugin] {
                sequence = known
            } else {
                let statement = statements.lastAction.bind(.text(plugin))
                sequence = try statement.step() ? statement.integer(0) : 0
                statement.reset()
            }
            try statements.insertSnapshot.bind(.text(plugin), .integer(sequence), .text(version), .blob(bytes)).run()
            // Keep this snapshot and the one before it (a fallback if `restore` refuses this
            // one), and the actions after the older one.
            let previous = statements.previousSnapshot.bind(.text(plugin), .integer(sequence))
            if try previous.step() {
                let kept = previous.integer(0)
                previous.reset()
                try statements.deleteOldSnapshots.bind(.text(plugin), .integer(kept)).run()
                try statements.deleteOldActions.bind(.text(plugin), .integer(kept)).run()
                try statements.markPruned.bind(.text(plugin), .integer(kept)).run()
            }
        case let .timerEnded(key):
            try statements.deleteTimer.bind(.integer(key)).run()
        case let .forget(plugin):
            for table in ["actions", "snapshots", "timers", "pruned", "transitions", "receipts"] {
                try database.prepare("DELETE FROM \(table) WHERE plugin = ?").bind(.text(plugin)).run()
            }
            lastSequence[plugin] = nil
            transitionCounts[plugin] = nil
            counted.remove(plugin)
        }
    }

    /// The writer's prepared statements.
    private final class WriterStatements {
        let insertAction, lastAction, insertSnapshot, previousSnapshot, deleteOldSnapshots, deleteOldActions, markPruned: SQLiteDatabase.Statement
        let insertTimer, deleteTimer, advanceTimer, deleteTimersWithID, transitions, setTransitions, insertReceipt: SQLiteDatabase.Statement

        /// Ends every statement's run, so that no read transaction outlives the commit.
        func resetAll() {
            for statement in [insertAction, lastAction, insertSnapshot, previousSnapshot, deleteOldSnapshots, deleteOldActions,
                              markPruned, insertTimer, deleteTimer, advanceTimer, deleteTimersWithID, transitions, setTransitions,
                              insertReceipt] {
                statement.reset()
            }
        }

        init(_ database: SQLiteDatabase) throws {
            insertAction = try database.prepare("INSERT INTO actions (plugin, version, action, args, ordinal, message) VALUES (?, ?, ?, ?, ?, ?)")
            lastAction = try database.prepare("SELECT coalesce(max(seq), 0) FROM actions WHERE plugin = ?")
            insertSnapshot = try database.prepare("INSERT OR REPLACE INTO snapshots (plugin, seq, version, state) VALUES (?, ?, ?, ?)")
            previousSnapshot = try database.prepare("SELECT max(seq) FROM snapshots WHERE plugin = ? AND seq < ? HAVING max(seq) IS NOT NULL")
            deleteOldSnapshots = try database.prepare("DELETE FROM snapshots WHERE plugin = ? AND seq < ?")
            deleteOldActions = try database.prepare("DELETE FROM actions WHERE plugin = ? AND seq <= ?")
            markPruned = try database.prepare("INSERT OR REPLACE INTO pruned (plugin, through) VALUES (?, ?)")
            insertTimer = try database.prepare("""
                INSERT OR REPLACE INTO timers (key, plugin, action, args, due, interval, effect_id, queue, policy, max_count)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            deleteTimer = try database.prepare("DELETE FROM timers WHERE key = ?")
            advanceTimer = try database.prepare("UPDATE timers SET due = due + interval WHERE key = ?")
            deleteTimersWithID = try database.prepare("DELETE FROM timers WHERE plugin = ? AND effect_id = ?")
            transitions = try database.prepare("SELECT count FROM transitions WHERE plugin = ?")
            setTransitions = try database.prepare("INSERT OR REPLACE INTO transitions (plugin, count) VALUES (?, ?)")
            insertReceipt = try database.prepare("INSERT OR REPLACE INTO receipts (plugin, key, fingerprint, answer, expires) VALUES (?, ?, ?, ?, ?)")
        }
    }
}

/// Nanoseconds on the monotonic clock.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
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
