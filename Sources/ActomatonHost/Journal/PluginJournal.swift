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
/// records per transaction (group commit). What "acknowledged" means is the
/// ``JournalSyncPolicy``.
///
/// The database is refused, with one line, when it cannot be read, is another application's,
/// was written by a newer host, or fails SQLite's integrity check: the host never starts
/// empty over state it could not read.
public final class PluginJournal: @unchecked Sendable {
    /// The format this host writes and reads (`PRAGMA user_version`).
    public static let formatVersion: Int64 = 1
    /// Marks the file as this host's (`PRAGMA application_id`, "ACTJ").
    static let applicationID: Int64 = 0x4143_544A

    /// The database file.
    public let path: String
    /// How it writes.
    public let options: JournalOptions

    private let database: SQLiteDatabase
    /// Held while the database is used: by the writer for a commit, by readers otherwise.
    private let databaseLock = Mutex(())
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Guarded by `mutex`:
    private var pending: [(ticket: UInt64, record: JournalRecord, acknowledge: (@Sendable () -> Void)?)] = []
    private var nextTicket: UInt64 = 1
    private var durableTicket: UInt64 = 0
    private var waiters: [(ticket: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
    private var closing = false
    private var writerFinished = false
    private var nextTimerKey: Int64
    private var reportedWriteFailure = false
    // Touched by the writer thread only:
    private var lastSequence: [String: Int64] = [:]
    private var statements: WriterStatements?

    /// Opens the database at `path`, or creates it when there is no file (or an empty one).
    public init(path: String, options: JournalOptions = .init()) throws(PluginJournalError) {
        self.path = path
        self.options = options
        var status = stat()
        let exists = stat(path, &status) == 0 && status.st_size > 0
        do {
            database = try SQLiteDatabase(path: path, create: !exists)
        } catch {
            throw PluginJournalError(.unreadable(error.message), at: path)
        }
        do {
            if exists {
                try Self.check(database)
            } else {
                try Self.createSchema(database)
            }
            try database.execute("PRAGMA journal_mode = WAL")
            try database.execute("PRAGMA synchronous = \(options.sync == .off ? "OFF" : "FULL")")
            nextTimerKey = try database.integer("SELECT coalesce(max(key), 0) + 1 FROM timers") ?? 1
        } catch let error as PluginJournalError.Reason {
            throw PluginJournalError(error, at: path)
        } catch let failure as SQLiteDatabase.Failure {
            throw PluginJournalError(Self.reason(for: failure), at: path)
        } catch {
            throw PluginJournalError(.unreadable("\(error)"), at: path)
        }
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(wake, nil)
        startWriter()
    }

    deinit {
        close()
        pthread_cond_destroy(wake)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        wake.deallocate()
    }

    private static func reason(for failure: SQLiteDatabase.Failure) -> PluginJournalError.Reason {
        switch failure.code & 0xFF {
        case SQLITE_NOTADB: .corrupt("it is not a SQLite database")
        case SQLITE_CORRUPT: .corrupt(failure.message)
        default: .unreadable(failure.message)
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
        try database.execute("""
            PRAGMA application_id = \(applicationID);
            PRAGMA user_version = \(formatVersion);
            CREATE TABLE actions (seq INTEGER PRIMARY KEY AUTOINCREMENT, plugin TEXT NOT NULL, version TEXT NOT NULL,
                                  action TEXT NOT NULL, args BLOB NOT NULL);
            CREATE INDEX actions_by_plugin ON actions (plugin, seq);
            CREATE TABLE snapshots (plugin TEXT NOT NULL, seq INTEGER NOT NULL, version TEXT NOT NULL, state BLOB NOT NULL,
                                    PRIMARY KEY (plugin, seq));
            CREATE TABLE timers (key INTEGER PRIMARY KEY, plugin TEXT NOT NULL, action TEXT NOT NULL, args BLOB NOT NULL,
                                 due INTEGER NOT NULL, interval INTEGER, effect_id TEXT, queue TEXT, policy INTEGER, max_count INTEGER);
            CREATE TABLE pruned (plugin TEXT PRIMARY KEY, through INTEGER NOT NULL);
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
        } catch let error as PluginJournalError.Reason {
            throw PluginJournalError(error, at: path)
        } catch let failure as SQLiteDatabase.Failure {
            throw PluginJournalError(Self.reason(for: failure), at: path)
        } catch {
            throw PluginJournalError(.unreadable("\(error)"), at: path)
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
        } catch let error as PluginJournalError.Reason {
            throw PluginJournalError(error, at: path)
        } catch let failure as SQLiteDatabase.Failure {
            throw PluginJournalError(Self.reason(for: failure), at: path)
        } catch {
            throw PluginJournalError(.unreadable("\(error)"), at: path)
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
        } catch let failure as SQLiteDatabase.Failure {
            throw PluginJournalError(Self.reason(for: failure), at: path)
        } catch {
            throw PluginJournalError(.unreadable("\(error)"), at: path)
        }
    }

    // MARK: Writing

    /// A new timer key, unique in this database.
    func makeTimerKey() -> Int64 {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        nextTimerKey += 1
        return nextTimerKey - 1
    }

    /// Queues `record`; `acknowledge` runs once it counts as acknowledged (see
    /// ``JournalSyncPolicy``): after its commit under `always`, at once otherwise. Returns
    /// its ticket, for ``waitUntilDurable(_:)``.
    @discardableResult
    func append(_ record: JournalRecord, acknowledge: (@Sendable () -> Void)? = nil) -> UInt64 {
        pthread_mutex_lock(mutex)
        let ticket = nextTicket
        nextTicket += 1
        let later = options.sync == .always && !closing
        // Only an empty queue can have the writer asleep on `wake`.
        if pending.isEmpty { pthread_cond_broadcast(wake) }
        pending.append((ticket, record, later ? acknowledge : nil))
        pthread_mutex_unlock(mutex)
        if !later { acknowledge?() }
        return ticket
    }

    /// Returns once the record of `ticket` counts as acknowledged.
    func waitUntilDurable(_ ticket: UInt64) async {
        guard options.sync == .always else { return }
        pthread_mutex_lock(mutex)
        if durableTicket >= ticket || writerFinished {
            pthread_mutex_unlock(mutex)
            return
        }
        await withCheckedContinuation { continuation in
            waiters.append((ticket, continuation))
            pthread_mutex_unlock(mutex)
        }
    }

    /// Whether the journal is closing: effects ended by the shutdown are not forgotten.
    var isClosing: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return closing
    }

    /// Writes what is queued and stops the writer; later records are not written.
    public func close() {
        pthread_mutex_lock(mutex)
        guard !closing else {
            pthread_mutex_unlock(mutex)
            return
        }
        closing = true
        pthread_cond_signal(wake)
        while !writerFinished { pthread_cond_wait(wake, mutex) }
        pthread_mutex_unlock(mutex)
    }

    private func startWriter() {
        let context = Unmanaged.passUnretained(self).toOpaque()
        var thread = pthread_t()
        // The writer holds no reference: `close` (from `deinit` at the latest) waits for it.
        pthread_create(&thread, nil, { context in
            Unmanaged<PluginJournal>.fromOpaque(context!).takeUnretainedValue().writeLoop()
            return nil
        }, context)
        pthread_detach(thread)
    }

    private func writeLoop() {
        while true {
            pthread_mutex_lock(mutex)
            while pending.isEmpty && !closing { pthread_cond_wait(wake, mutex) }
            if pending.isEmpty && closing {
                writerFinished = true
                let left = waiters
                waiters = []
                pthread_cond_broadcast(wake)
                pthread_mutex_unlock(mutex)
                left.forEach { $0.continuation.resume() }
                return
            }
            if options.sync == .batch && !closing {
                // Gather the batch: what arrives within the window is committed together.
                pthread_mutex_unlock(mutex)
                var pause = timespec(tv_sec: Int(options.batchWindow.components.seconds),
                                     tv_nsec: Int(options.batchWindow.components.attoseconds / 1_000_000_000))
                nanosleep(&pause, nil)
                pthread_mutex_lock(mutex)
            }
            let batch = pending
            pending = []
            pthread_mutex_unlock(mutex)

            commit(batch.map(\.record))

            pthread_mutex_lock(mutex)
            durableTicket = batch.last!.ticket
            let ready = waiters.filter { $0.ticket <= durableTicket }
            waiters.removeAll { $0.ticket <= durableTicket }
            pthread_mutex_unlock(mutex)
            for entry in batch { entry.acknowledge?() }
            for waiter in ready { waiter.continuation.resume() }
        }
    }

    /// Writes `records` in one transaction.
    private func commit(_ records: [JournalRecord]) {
        do {
            try databaseLock.withLock { _ in
                if statements == nil { statements = try WriterStatements(database) }
                let statements = statements!
                try database.execute("BEGIN IMMEDIATE")
                do {
                    for record in records { try apply(record, statements) }
                    try database.execute("COMMIT")
                } catch {
                    try? database.execute("ROLLBACK")
                    throw error
                }
            }
        } catch {
            pthread_mutex_lock(mutex)
            let first = !reportedWriteFailure
            reportedWriteFailure = true
            pthread_mutex_unlock(mutex)
            if first {
                printToStandardError("error: \(PluginJournalError(.writeFailed("\(error)"), at: path)); actions are no longer durable")
            }
        }
    }

    private func apply(_ record: JournalRecord, _ statements: WriterStatements) throws {
        switch record {
        case let .action(plugin, version, name, arguments, fired, timers, cancelledIDs):
            try statements.insertAction.bind(.text(plugin), .text(version), .text(name), .blob(ArgumentCoding.encode(arguments))).run()
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
                let statement = try statements.lastAction.bind(.text(plugin))
                sequence = try statement.step() ? statement.integer(0) : 0
            }
            try statements.insertSnapshot.bind(.text(plugin), .integer(sequence), .text(version), .blob(bytes)).run()
            // Keep this snapshot and the one before it (a fallback if `restore` refuses this
            // one), and the actions after the older one.
            let previous = try statements.previousSnapshot.bind(.text(plugin), .integer(sequence))
            if try previous.step() {
                let kept = previous.integer(0)
                try statements.deleteOldSnapshots.bind(.text(plugin), .integer(kept)).run()
                try statements.deleteOldActions.bind(.text(plugin), .integer(kept)).run()
                try statements.markPruned.bind(.text(plugin), .integer(kept)).run()
            }
        case let .timerEnded(key):
            try statements.deleteTimer.bind(.integer(key)).run()
        }
    }

    /// The writer's prepared statements.
    private final class WriterStatements {
        let insertAction, lastAction, insertSnapshot, previousSnapshot, deleteOldSnapshots, deleteOldActions, markPruned: SQLiteDatabase.Statement
        let insertTimer, deleteTimer, advanceTimer, deleteTimersWithID: SQLiteDatabase.Statement

        init(_ database: SQLiteDatabase) throws {
            insertAction = try database.prepare("INSERT INTO actions (plugin, version, action, args) VALUES (?, ?, ?, ?)")
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
        }
    }
}

/// Milliseconds since 1970 on the wall clock: when journaled timers are due.
func wallClockMilliseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}
