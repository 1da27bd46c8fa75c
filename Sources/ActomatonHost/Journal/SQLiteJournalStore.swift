import ActomatonPluginContract
import CSQLite
import Synchronization

/// The journal's records in a SQLite database in WAL mode: the embedded store of one host
/// (`--state FILE`). See ``PluginJournal`` for what it holds and when it refuses a file.
///
/// A writing store locks its file for its life (one host per file); a reading one writes
/// nothing, not even a schema into an empty file.
public final class SQLiteJournalStore: JournalStore, @unchecked Sendable {
    /// The format this host writes and reads (`PRAGMA user_version`). Format 2 added each
    /// name's count of transitions. Format 3 keeps that count in the name's last action and
    /// writes the `transitions` table only when actions are pruned, so that a commit writes
    /// one row per action rather than two. An older file is brought up to it when a host opens it.
    public static let formatVersion: Int64 = 3
    /// A name's count of transitions (parameter 1: the name): the larger of the count kept when
    /// its actions were last pruned and its last action's number (`NULL` in format 1's actions).
    static let transitionCountQuery = """
        SELECT max(coalesce((SELECT count FROM transitions WHERE plugin = ?1), 0),
                   coalesce((SELECT ordinal FROM actions WHERE plugin = ?1 ORDER BY seq DESC LIMIT 1), 0))
        """
    /// Marks the file as this host's (`PRAGMA application_id`, "ACTJ").
    static let applicationID: Int64 = 0x4143_544A
    /// After how many pages (4 KiB each) the write-ahead log is checkpointed.
    public static let walCheckpointPages = 1000
    /// The most bytes the write-ahead log keeps after a checkpoint (`PRAGMA journal_size_limit`).
    public static let walSizeLimit = 4 << 20

    /// The database file.
    public let path: String
    /// The database file.
    public var location: String { path }

    private let database: SQLiteDatabase
    /// The lock held for the store's life; `nil` when reading only.
    private let file: StateDatabaseFile?
    /// Held while the database is used: by the writer for a commit, by readers otherwise.
    private let databaseLock = Mutex(())
    // Touched by the committing thread only (the database lock held):
    private var lastSequence: [String: Int64] = [:]
    /// Each name's count of journaled actions, as committed with the last batch or since.
    private var transitionCounts: [String: Int64] = [:]
    private var statements: WriterStatements?
    /// The write-ahead log's device and inode, as the first commit that found it saw them.
    private var writeAheadLogKey: (device: UInt64, inode: UInt64)?
    /// `--state-max-size`, in bytes, when set.
    private var maxDatabaseSize: Int64?
    /// Whether the file has format 2's tables, the counts of transitions and the receipts (a
    /// format 1 file read only has not).
    private var countsTransitions = true

    /// Opens the database at `path` for a host, or creates it when there is no file (or an
    /// empty one), and locks it for this store's life.
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - options: How it writes (its sync policy and size limit).
    public init(path: String, options: JournalOptions = .init()) throws(PluginJournalError) {
        self.path = path
        maxDatabaseSize = options.maxDatabaseSize
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
            // Receipts past their time are kept no longer.
            try database.execute("DELETE FROM receipts WHERE expires < \(wallClockMilliseconds())")
        } catch {
            database.close()
            file.release()
            throw PluginJournalError(Self.reason(for: error), at: path)
        }
        self.file = file
        // The write-ahead log as it is now (the receipts' cleanup wrote it): a log deleted
        // before the first commit is noticed too.
        _ = file.problem(at: path, log: &writeAheadLogKey)
    }

    /// Opens the database at `path` to read what it holds, writing nothing (not even a
    /// schema into an empty file); it may be in use by a host meanwhile.
    public init(readingAt path: String) throws(PluginJournalError) {
        self.path = path
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
    }

    /// A database a host stopped in the middle of writing (a rollback journal beside it) needs a
    /// repair before it can be read, and reading must not write.
    static let leftMidWrite = PluginJournalError.Reason.unreadable(
        "it was left in the middle of a write (a host stopped while writing it), and reading it needs a repair that reading "
            + "must not make: run the host on it once (run or serve with --state), which repairs it")

    deinit {
        close(clean: false)
    }

    /// From the first timer key no timer in the file uses to the largest integer. A key at
    /// the end (an edited file) leaves none: the next key overflowed, and trapped the host.
    public func timerKeys() throws(PluginJournalError.Reason) -> Range<Int64> {
        let largest = try reading { () throws in try database.integer("SELECT coalesce(max(key), 0) FROM timers") ?? 0 }
        return largest >= Int64.max - 1 ? Int64.max..<Int64.max : (max(largest, 0) + 1)..<Int64.max
    }

    /// Checkpoints the write-ahead log down to nothing when `clean`, closes the connection and
    /// drops the lock: when this returns, the files are free for another connection or host.
    public func close(clean: Bool) {
        databaseLock.withLock { _ in
            guard !database.isClosed else { return }
            statements = nil
            if file != nil, clean { try? database.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
            database.close()
            file?.release()
        }
    }

    /// Runs `body` with the database lock held; SQLite's errors as a journal's reasons.
    private func reading<T>(_ body: () throws -> T) throws(PluginJournalError.Reason) -> T {
        do {
            return try databaseLock.withLock { _ in
                guard !database.isClosed else { throw PluginJournalError.Reason.closed }
                return try body()
            }
        } catch {
            throw Self.reason(for: error)
        }
    }

    static func reason(for error: any Error) -> PluginJournalError.Reason {
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

    /// Brings an older file up to this format, in one transaction. From format 1, each name's
    /// count of transitions starts where format 1 numbered them (the journal's number of its last
    /// action). A format 2 file needs no change: its `transitions` table holds every name's count.
    private static func upgrade(_ database: SQLiteDatabase) throws {
        let format = try database.integer("PRAGMA user_version") ?? 0
        guard format < formatVersion else { return }
        guard format < 2 else {
            try database.execute("PRAGMA user_version = \(formatVersion)")
            return
        }
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
            PRAGMA user_version = \(formatVersion);
            COMMIT;
            """)
    }

    // MARK: Reading

    /// What the file holds for `name`: its snapshots (the newest
    /// ``JournalRecovery/maxSnapshotsRead``, each at most ``PluginLimits/maxSnapshotBytes``), actions and
    /// timers (at most ``JournalRecovery/maxTimers``). Rows of an edited file were read whole,
    /// however many and however large.
    public func recovery(for name: String) throws(PluginJournalError.Reason) -> JournalRecovery {
        try reading { () throws in
            let snapshots = try database.prepare("""
                SELECT seq, version, CASE WHEN length(state) <= ?2 THEN state END, length(state) FROM snapshots WHERE plugin = ?1
                ORDER BY seq DESC LIMIT ?3
                """)
            snapshots.bind(.text(name), .integer(Int64(PluginLimits.maxSnapshotBytes)), .integer(Int64(JournalRecovery.maxSnapshotsRead)))
            var recovery = JournalRecovery(snapshots: [], actions: [], startsAtTheBeginning: true, timers: [])
            if countsTransitions {
                let count = try database.prepare(Self.transitionCountQuery)
                count.bind(.text(name))
                if try count.step() { recovery.transitionCount = count.integer(0) }
            }
            while try snapshots.step() {
                guard !snapshots.isNull(2) else {
                    throw JournalRecovery.snapshotTooLarge(snapshots.integer(0), of: name, bytes: snapshots.integer(3), limit: PluginLimits.maxSnapshotBytes)
                }
                recovery.snapshots.append(JournaledSnapshot(sequence: snapshots.integer(0), version: snapshots.text(1), bytes: snapshots.blob(2)))
            }
            recovery.actions = try actionsHoldingTheLock(of: name, after: recovery.snapshots.first?.sequence ?? 0)
            let pruned = try database.prepare("SELECT through FROM pruned WHERE plugin = ?")
            pruned.bind(.text(name))
            recovery.startsAtTheBeginning = try !pruned.step()
            let timers = try database.prepare("""
                SELECT key, action, \(Self.readableArguments), due, interval, effect_id, queue, policy, max_count FROM timers WHERE plugin = ?
                ORDER BY key LIMIT ?
                """)
            timers.bind(.text(name), .integer(Int64(JournalRecovery.maxTimers + 1)))
            while try timers.step() {
                guard recovery.timers.count < JournalRecovery.maxTimers else {
                    throw JournalRecovery.tooManyTimers(of: name, limit: JournalRecovery.maxTimers)
                }
                // Unreadable, it is reported and ended, as a timer whose interval is impossible is.
                let arguments = timers.isNull(2) ? nil : ArgumentCoding.decode(timers.blob(2))
                var timer = JournaledTimer(
                    key: timers.integer(0), plugin: name, action: timers.text(1), arguments: arguments ?? [], due: timers.integer(3),
                    interval: timers.isNull(4) ? nil : timers.integer(4),
                    options: JournaledTimer.options(id: timers.isNull(5) ? nil : timers.text(5), queue: timers.isNull(6) ? nil : timers.text(6),
                                                    policy: timers.integer(7), maxCount: timers.integer(8)))
                timer.unreadableArguments = arguments == nil
                timer.unreadableQueue = !timers.isNull(6) && timer.options.queue == nil
                recovery.timers.append(timer)
            }
            try recovery.check(name: name)
            return recovery
        }
    }

    /// A row's coded arguments when they are within ``JournaledAction/maxArgumentBytes``, else
    /// NULL (unreadable), as a column of a query.
    static let readableArguments = "CASE WHEN length(args) <= \(JournaledAction.maxArgumentBytes) THEN args END"

    /// The actions of `name` after `sequence`, oldest first (the database lock held).
    private func actionsHoldingTheLock(of name: String, after sequence: Int64) throws -> [JournaledAction] {
        let statement = try database.prepare("SELECT seq, version, action, \(Self.readableArguments) FROM actions WHERE plugin = ? AND seq > ? ORDER BY seq")
        statement.bind(.text(name), .integer(sequence))
        var actions: [JournaledAction] = []
        while try statement.step() {
            // Unreadable, it is reported as an action that cannot be replayed; the others replay.
            let arguments = statement.isNull(3) ? nil : ArgumentCoding.decode(statement.blob(3))
            actions.append(JournaledAction(sequence: statement.integer(0), version: statement.text(1), action: statement.text(2),
                                           arguments: arguments ?? [], unreadableArguments: arguments == nil))
        }
        return actions
    }

    /// The actions of `name` after `sequence`, oldest first.
    public func actions(of name: String, after sequence: Int64) throws(PluginJournalError.Reason) -> [JournaledAction] {
        try reading { () throws in try actionsHoldingTheLock(of: name, after: sequence) }
    }

    /// The receipts kept until `now` or later, the latest to expire first, at most `limit`,
    /// their answers read while they add up to at most `answerBytes` (the rest, and any past
    /// ``JournaledReceipt/maxAnswerBytes``, left in the journal); none from a format 1 file
    /// read without upgrading it.
    public func receipts(keptAfter now: Int64, limit: Int, answerBytes: Int) throws(PluginJournalError.Reason) -> [JournaledReceipt] {
        guard countsTransitions else { return [] }
        return try reading { () throws in
            let statement = try database.prepare("""
                SELECT plugin, key, fingerprint, answer, expires FROM receipts WHERE expires >= ? ORDER BY expires DESC LIMIT ?
                """)
            statement.bind(.integer(now), .integer(Int64(limit)))
            var receipts: [JournaledReceipt] = []
            var read = 0
            while try statement.step() {
                let size = statement.byteCount(3)
                let fits = size <= JournaledReceipt.maxAnswerBytes && size <= answerBytes - read
                if fits { read += size }
                receipts.append(JournaledReceipt(plugin: statement.text(0), key: statement.text(1), fingerprint: statement.text(2),
                                                 answer: fits ? statement.text(3) : nil, answerBytes: size, expires: statement.integer(4)))
            }
            return receipts
        }
    }

    /// How many transitions `name` has had in all (0 for none, and in a format 1 file read
    /// without upgrading it).
    public func transitionCount(of name: String) throws(PluginJournalError.Reason) -> Int64 {
        guard countsTransitions else { return 0 }
        return try reading { () throws in
            let statement = try database.prepare(Self.transitionCountQuery)
            statement.bind(.text(name))
            return try statement.step() ? statement.integer(0) : 0
        }
    }

    /// The receipt kept under `key` for `name`, if any; none from a format 1 file read without
    /// upgrading it.
    public func receipt(of name: String, key: String) throws(PluginJournalError.Reason) -> JournaledReceipt? {
        guard countsTransitions else { return nil }
        return try reading { () throws in
            let statement = try database.prepare("SELECT fingerprint, answer, expires FROM receipts WHERE plugin = ? AND key = ?")
            statement.bind(.text(name), .text(key))
            guard try statement.step() else { return nil }
            // An answer past the limit is not copied: its size says what is wrong.
            let size = statement.byteCount(1)
            return JournaledReceipt(plugin: name, key: key, fingerprint: statement.text(0),
                                    answer: size <= JournaledReceipt.maxAnswerBytes ? statement.text(1) : nil, answerBytes: size,
                                    expires: statement.integer(2))
        }
    }

    /// The messages of `name`'s transitions numbered above `ordinal` or journaled after
    /// `position`, in the order journaled, at most `limit`, each with its number and position;
    /// none from a format 1 file read without upgrading it.
    public func messages(of name: String, after ordinal: Int64, orJournaledAfter position: Int64,
                         limit: Int) throws(PluginJournalError.Reason) -> [(ordinal: Int64, message: String, position: Int64)] {
        guard countsTransitions else { return [] }
        return try reading { () throws in
            let statement = try database.prepare("""
                SELECT ordinal, message, seq FROM actions WHERE plugin = ? AND (ordinal > ? OR seq > ?) ORDER BY seq LIMIT ?
                """)
            statement.bind(.text(name), .integer(ordinal), .integer(position), .integer(Int64(limit)))
            var messages: [(ordinal: Int64, message: String, position: Int64)] = []
            while try statement.step(), !statement.isNull(1) {
                let size = statement.byteCount(1)
                guard size <= JournaledReceipt.maxMessageBytes else {
                    throw JournaledReceipt.messageTooLong(size, of: name, ordinal: statement.integer(0))
                }
                messages.append((statement.integer(0), statement.text(1), statement.integer(2)))
            }
            return messages
        }
    }

    /// Every name the file holds something for, with what it holds.
    public func summaries() throws(PluginJournalError.Reason) -> [JournalSummary] {
        try reading { () throws in
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
    }

    // MARK: Writing

    /// Writes `records` in one transaction.
    public func commit(_ records: [JournalRecord]) throws {
        try databaseLock.withLock { _ in
            guard !database.isClosed else { throw PluginJournalError.Reason.closed }
            if statements == nil { statements = try WriterStatements(database) }
            let statements = statements!
            try database.execute("BEGIN IMMEDIATE")
            do {
                for record in records { try apply(record, statements) }
                try database.execute("COMMIT")
            } catch {
                try? database.execute("ROLLBACK")
                statements.resetAll()
                // Read again from what was committed.
                transitionCounts = [:]
                lastSequence = [:]
                throw limitReached(error) ?? error
            }
            statements.resetAll()
            try checkStillTheOpenedFile()
        }
    }

    /// Throws when the database, or its write-ahead log, is no longer the file this store
    /// opened (deleted, or another put in its place): a commit there is as good as lost, so it
    /// is not acknowledged, and nothing after it is. A log deleted while the database is still
    /// ours is checkpointed into the database first (SQLite still holds it open), which keeps
    /// what it held.
    private func checkStillTheOpenedFile() throws {
        guard let file, let problem = file.problem(at: path, log: &writeAheadLogKey) else { return }
        var saved = ""
        if problem.log {
            let checkpointed = (try? database.execute("PRAGMA wal_checkpoint(TRUNCATE)")) != nil
            saved = checkpointed ? " (what the log held was checkpointed into the database first)"
                : " (what the log held since the last checkpoint is lost)"
        }
        throw PluginJournalError.Reason.writeFailed("the state database is no longer the file the host opened: \(problem.text)\(saved); "
                                                    + "nothing after this commit is acknowledged")
    }

    /// SQLite's "database or disk is full" when the database is within a commit of its
    /// `maxDatabaseSize`: the limit, not the disk, and said so. Its file alone, smaller than the
    /// limit while its write-ahead log held pages, misled a user who read it. `nil` otherwise.
    private func limitReached(_ error: any Error) -> PluginJournalError.Reason? {
        guard let limit = maxDatabaseSize, let failure = error as? SQLiteDatabase.Failure, failure.code & 0xFF == SQLITE_FULL,
              let pages = try? database.integer("PRAGMA page_count"), let most = try? database.integer("PRAGMA max_page_count"),
              (pages + Self.maxPagesPerCommitGuess) >= most
        else { return nil }
        return .writeFailed("the database reached its size limit, --state-max-size (\(limit) bytes; \(pages) of its \(most) pages "
                            + "of 4 KiB in use, its write-ahead log's included)")
    }

    /// How many pages a commit that found the database full may have needed, at most: a
    /// database within this of its limit is full because of it.
    private static let maxPagesPerCommitGuess: Int64 = 256

    /// `plugin`'s count of transitions, read once and then kept (the database lock held).
    private func cachedTransitionCount(of plugin: String, _ statements: WriterStatements) throws -> Int64 {
        if let count = transitionCounts[plugin] { return count }
        let statement = statements.transitions.bind(.text(plugin))
        let count = try statement.step() ? statement.integer(0) : 0
        statement.reset()
        transitionCounts[plugin] = count
        return count
    }

    private func apply(_ record: JournalRecord, _ statements: WriterStatements) throws {
        switch record {
        case let .action(plugin, version, name, arguments, fired, timers, cancelledIDs, receipt, message):
            if let receipt {
                try statements.insertReceipt.bind(.text(plugin), .text(receipt.key), .text(receipt.fingerprint), .text(receipt.answer ?? ""),
                                                  .integer(receipt.expires)).run()
            }
            // The action carries its number: the count needs no row of its own until pruned.
            let before = try cachedTransitionCount(of: plugin, statements)
            guard before < JournalRecovery.maxTransitionCount else {
                throw PluginJournalError.Reason.badRecord("the count of transitions of \(plugin) is \(before), past the most a host writes "
                                                          + "(\(JournalRecovery.maxTransitionCount))")
            }
            let count = before + 1
            transitionCounts[plugin] = count
            try statements.insertAction.bind(.text(plugin), .text(version), .text(name), .blob(ArgumentCoding.encode(arguments)),
                                             .integer(count), message.map { .text($0()) } ?? .null).run()
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
        case let .snapshot(plugin, version, bytes, keepingActions):
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
            // one), the actions after the older one, and at least the last `keepingActions`.
            let previous = statements.previousSnapshot.bind(.text(plugin), .integer(sequence))
            if try previous.step() {
                let kept = previous.integer(0)
                previous.reset()
                try statements.deleteOldSnapshots.bind(.text(plugin), .integer(kept)).run()
                let prunedThrough = min(kept, sequence - keepingActions)
                if prunedThrough >= 1 {
                    // The count outlives the actions that carried it.
                    try statements.setTransitions.bind(.text(plugin), .integer(cachedTransitionCount(of: plugin, statements))).run()
                    try statements.deleteOldActions.bind(.text(plugin), .integer(prunedThrough)).run()
                    try statements.markPruned.bind(.text(plugin), .integer(prunedThrough)).run()
                }
            }
        case let .timerEnded(key, _):
            try statements.deleteTimer.bind(.integer(key)).run()
        case let .forget(plugin):
            for table in ["actions", "snapshots", "timers", "pruned", "transitions", "receipts"] {
                try database.prepare("DELETE FROM \(table) WHERE plugin = ?").bind(.text(plugin)).run()
            }
            lastSequence[plugin] = nil
            transitionCounts[plugin] = nil
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
            transitions = try database.prepare(SQLiteJournalStore.transitionCountQuery)
            setTransitions = try database.prepare("INSERT OR REPLACE INTO transitions (plugin, count) VALUES (?, ?)")
            insertReceipt = try database.prepare("INSERT OR REPLACE INTO receipts (plugin, key, fingerprint, answer, expires) VALUES (?, ?, ?, ?, ?)")
        }
    }
}
