import ActomatonHost
import NIOCore
import PostgresNIO
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The journal's records in a PostgreSQL database that several hosts share
/// (`--state postgres://…`): the same records as `SQLiteJournalStore`, in the tables of
/// ``ClusterSchema``, written under this host's ownership of each name (``ClusterHost``).
///
/// Each commit is one transaction that first locks the rows of the names it writes and checks
/// that this host owns each at the epoch it claimed; when another host took one over, nothing
/// is written and the commit throws `JournalStoreFencing` with those names (the journal then
/// commits the others' records alone). A timer's key is unique in the cluster: this host's
/// number in its upper 32 bits.
///
/// It uses two connections, one for commits and one for reads, each called from threads of
/// the host's own (the journal's writer, readers' threads), never from the concurrency pool.
public final class PostgresJournalStore: JournalStore, @unchecked Sendable {
    /// Refuses journal options a cluster cannot keep its promises with: `--sync batch`
    /// acknowledges an action before its commit, and a host paused past its lease then loses
    /// what it acknowledged while another host answers the same `seq` again (seen under
    /// SIGSTOP: acknowledged actions lost, sequence numbers answered twice). `always` and
    /// `off` acknowledge after the commit, where fencing is checked.
    public static func check(_ options: JournalOptions) throws(ClusterError) {
        if options.sync == .batch {
            throw .badOption("--sync batch acknowledges an action before its commit: in a cluster, a host paused past its lease "
                             + "would lose what it acknowledged; use --sync always (the default) or off with --state postgres://…")
        }
    }

    /// The host whose ownership the commits are checked against; `nil` when reading only.
    public let host: ClusterHost?
    /// The shared database.
    public let address: PostgresAddress
    private let writer: PostgresLink
    private let reader: PostgresLink

    /// The database's address, without its password.
    public var location: String { address.description }

    /// A store that writes for `host`, in the database `host` joined.
    public convenience init(host: ClusterHost) {
        self.init(host: host, answerTimeout: PostgresLink.defaultAnswerTimeout, maxSnapshotBytes: PluginLimits.maxSnapshotBytes)
    }

    /// A store that writes for `host`, whose queries wait `answerTimeout` for an answer, whose
    /// commits wait `lockTimeout` for a row's lock, and whose recoveries read snapshots of at
    /// most `maxSnapshotBytes` and at most `maxTimers` timers of a name (tests lower them).
    init(host: ClusterHost, answerTimeout: TimeAmount, maxSnapshotBytes: Int, maxTimers: Int = JournalRecovery.maxTimers,
         lockTimeout: Duration = PostgresJournalStore.writerLockTimeout) {
        self.host = host
        self.maxSnapshotBytes = maxSnapshotBytes
        self.maxTimers = maxTimers
        address = host.address
        // A commit left idle (its host paused) holds its rows' locks: the server ends it once
        // the host's lease has lapsed, so that the host taking over is not kept waiting.
        // A row locked by another session (an operator's `SELECT … FOR UPDATE`) fails the commit
        // after `writerLockTimeout`, which is then run again, instead of holding it 15 s.
        writer = PostgresLink(host.address, name: "journal", idleInTransactionTimeout: host.leaseTTL,
                              lockTimeout: lockTimeout, answerTimeout: answerTimeout)
        reader = PostgresLink(host.address, name: "reader", answerTimeout: answerTimeout)
    }

    /// A store that only reads the cluster's database at `address` (`cluster status`,
    /// `journal`); its commits are refused. Refuses a database without the cluster's tables,
    /// or with newer ones.
    public init(readingAt address: PostgresAddress) throws(ClusterError) {
        host = nil
        self.address = address
        maxSnapshotBytes = PluginLimits.maxSnapshotBytes
        maxTimers = JournalRecovery.maxTimers
        writer = PostgresLink(address, name: "journal")
        reader = PostgresLink(address, name: "reader")
        let rows = try reader.run("SELECT to_regclass('actomaton_schema') IS NOT NULL").rows
        guard (try? rows.first?.decode(Bool.self)) == true else {
            throw .notAClusterDatabase("it has no actomaton_schema table; a host started with --state \(address) makes it")
        }
        let version = try? reader.run("SELECT version FROM actomaton_schema").rows.first?.decode(Int64.self)
        guard let version else { throw .notAClusterDatabase("actomaton_schema does not hold one version") }
        guard version <= ClusterSchema.version else { throw .newerSchema(found: version, supported: ClusterSchema.version) }
    }

    /// This host's number in the upper 32 bits, from 1 to 2^32 - 1 in the lower: 2^32 - 1
    /// timers per run of a host (the next run has another number). The key past them is the
    /// next host's first: it is not given, and an action that asks for a timer then fails.
    public func timerKeys() throws(PluginJournalError.Reason) -> Range<Int64> {
        // A host's number is at most 2^31 - 1 (`ClusterHost.hostNumbers`): the last one's keys
        // end below 2^63, which no number after it has.
        let number = min(max(host?.id ?? 0, 0), Int64.max >> 32)
        return (number << 32 | 1)..<(number == Int64.max >> 32 ? Int64.max : (number + 1) << 32)
    }

    /// Closes both connections.
    public func close(clean: Bool) {
        writer.close()
        reader.close()
    }

    // MARK: Writing

    /// Writes `records` in one transaction, after checking that this host owns each of their
    /// names at the epoch it claimed; throws `JournalStoreFencing` (nothing written) when not.
    public func commit(_ records: [JournalRecord]) throws {
        try commit(records, epochs: Array(repeating: nil, count: records.count))
    }

    /// Writes `records` like ``commit(_:)``; a record whose epoch is given is refused too (with
    /// every record of its name) when this host owns the name at another epoch: its writer is a
    /// machine of an earlier claim.
    public func commit(_ records: [JournalRecord], epochs written: [Int64?]) throws {
        try commit(records, epochs: written, runsAgainIfNotWritten: true)
    }

    private func commit(_ records: [JournalRecord], epochs written: [Int64?], runsAgainIfNotWritten: Bool) throws {
        guard let host else { throw PluginJournalError.Reason.closed }
        let names = Set(records.compactMap(\.name))
        var epochs: [String: Int64] = [:]
        var fenced: Set<String> = []
        for name in names {
            if let epoch = host.epoch(of: name) { epochs[name] = epoch } else { fenced.insert(name) }
        }
        for (record, epoch) in zip(records, written) {
            if let name = record.name, let epoch, epochs[name] != epoch { fenced.insert(name) }
        }
        if !fenced.isEmpty { throw refuse(fenced) }
        var receiptNames: [String] = []
        var receiptKeys: [String] = []
        for record in records {
            if case let .action(name, _, _, _, _, _, _, receipt?, _) = record {
                receiptNames.append(name)
                receiptKeys.append(receipt.key)
            }
        }
        // The server's ID of the last attempt's transaction: what tells, when the answer to its
        // `COMMIT` is lost, whether it was written.
        var transactionID: Int64?
        do {
            try committingAgainIfNotWritten { try writer.transaction { transaction in
                fenced = []
                transactionID = nil
                // The receipts are read once the rows are locked: every writer of a name holds
                // its row's lock, so none is written meanwhile.
                var locking: [PostgresQuery] = ["""
                    SELECT name, owner, epoch,
                           \(unescaped: Self.transitionCount)
                    FROM actomaton_instances i WHERE name = ANY(\(Array(names))) FOR UPDATE
                    """, "SELECT txid_current()"]
                if !receiptKeys.isEmpty {
                    locking.append("""
                        SELECT r.name FROM actomaton_receipts r JOIN unnest(\(receiptNames)::text[], \(receiptKeys)::text[]) AS k(name, key)
                            ON r.name = k.name AND r.key = k.key
                        WHERE r.expires > (extract(epoch FROM clock_timestamp()) * 1000)::bigint
                        """)
                }
                let results = try transaction.run(locking)
                let rows = results[0].rows
                transactionID = try results[1].rows.first?.decode(Int64.self)
                // An action whose request's key already has a receipt in its window was applied
                // once already: its request was checked for one before another host applied it,
                // and ownership came back here before its turn (`make test-cluster`: one
                // increment of 4,823 applied twice). Refused like a name taken over: the host drops
                // the machine, its client is told to retry, and the retry gets the receipt.
                for row in results.dropFirst(2).first?.rows ?? [] { fenced.insert(try row.decode(String.self)) }
                var counts: [String: Int64] = [:]
                for row in rows {
                    let (name, owner, epoch, transitions) = try row.decode((String, Int64?, Int64, Int64).self)
                    // A count no host writes (an edit since the name was claimed): refused like
                    // a name taken over; the next claim's recovery says why, in one line.
                    let counted = transitions < JournalRecovery.maxTransitionCount
                    if owner == host.id, epoch == epochs[name], counted { counts[name] = transitions } else { fenced.insert(name) }
                }
                fenced.formUnion(names.filter { counts[$0] == nil })
                if !fenced.isEmpty { throw JournalStoreFencing(names: fenced) }
                let before = counts
                var queries: [PostgresQuery] = []
                for record in records { queries += Self.queries(for: record, counts: &counts) }
                for (name, count) in counts where before[name] != count {
                    queries.append("UPDATE actomaton_instances SET transitions = \(count) WHERE name = \(name)")
                    // Wakes the watchers other hosts serve, when this commits.
                    queries.append("SELECT pg_notify(\(JournalNotifications.channel), \(name))")
                }
                try transaction.run(queries)
            } }
        } catch let fencing as JournalStoreFencing {
            throw refuse(fencing.names)
        } catch let lost as PostgresLink.CommitOutcomeUnknown {
            // The `COMMIT` was sent and its answer lost with the connection (the server ended the
            // session, restarted, or was slow): the server says whether it was written, once it
            // knows. A host stopped for each of these: 8 of 30 when every session was ended once.
            guard let transactionID else { throw lost.cause }
            switch try outcome(ofTransaction: transactionID) {
            case .committed: return
            case .notCommitted where runsAgainIfNotWritten: try commit(records, epochs: written, runsAgainIfNotWritten: false)
            case .notCommitted, .unknown: throw lost.cause
            }
        }
    }

    /// What became of a transaction whose `COMMIT` answer was lost.
    private enum TransactionOutcome { case committed, notCommitted, unknown }

    /// What became of the transaction `id`, asked on a new connection (`txid_status`) until the
    /// server knows (a slow commit's session may still be finishing it), for up to
    /// ``commitRetryTime``.
    private func outcome(ofTransaction id: Int64) throws -> TransactionOutcome {
        var backoff = Backoff(for: Self.commitRetryTime)
        while true {
            var status: String?
            try committingAgainIfNotWritten { try writer.transaction { transaction in
                status = try transaction.run("SELECT txid_status(\(id))").rows.first?.decode(String?.self)
            } }
            switch status {
            case "committed": return .committed
            case "aborted": return .notCommitted
            case "in progress":
                guard backoff.waitIfTimeIsLeft() else { return .unknown }
            default:
                // Too old for the server to remember: not said either way.
                return .unknown
            }
        }
    }

    /// Waits between attempts on the writer's thread, from 50 ms doubling up to 1 s, for as
    /// long as the time it was given lasts.
    private struct Backoff {
        private let deadline: ContinuousClock.Instant
        private var pause: Duration = .milliseconds(50)

        init(for time: Duration) {
            deadline = .now + time
        }

        /// Waits the next pause and returns `true`, or returns `false` when it would end past the time.
        mutating func waitIfTimeIsLeft() -> Bool {
            guard ContinuousClock.now + pause < deadline else { return false }
            var wait = timespec(tv_sec: Int(pause.components.seconds), tv_nsec: Int(pause.components.attoseconds / 1_000_000_000))
            var left = timespec()
            while nanosleep(&wait, &left) != 0, errno == EINTR { wait = left }
            pause = min(pause * 2, .seconds(1))
            return true
        }
    }

    /// How long a commit waits for a row another session has locked before it fails (and is
    /// run again).
    static let writerLockTimeout: Duration = .seconds(5)

    /// How long a commit that keeps failing before its `COMMIT` for a passing reason (the
    /// server restarting or unreachable, a row locked) is run again, backing off from 50 ms to
    /// 1 s between attempts, before the host stops.
    static let commitRetryTime: Duration = .seconds(30)

    /// Runs `attempt` (a transaction) again when it failed before its `COMMIT` was sent:
    /// nothing of it was written, and its ownership check runs again, on a new connection when
    /// the old one was lost. Once at once for any failure (a host paused in the middle of a
    /// commit past its lease, whose transaction the server ended: the names another host took
    /// are refused by fencing, the others committed); for a passing one (``PostgresLink/isTransient(_:)``)
    /// for up to ``commitRetryTime``: 2 of 3 hosts stopped at a 0.2 s restart of the server.
    /// The last failure is thrown (the host stops). Runs on the journal's writer thread, which
    /// waits between attempts, the actions behind it unacknowledged.
    private func committingAgainIfNotWritten(_ attempt: () throws -> Void) throws {
        var backoff = Backoff(for: Self.commitRetryTime)
        var attempts = 0
        while true {
            do {
                try attempt()
                return
            } catch let failure as PostgresLink.NotCommitted {
                attempts += 1
                // The first failure runs again at once; a passing one after it, backing off.
                guard attempts == 1 || (PostgresLink.isTransient(failure.cause) && backoff.waitIfTimeIsLeft()) else {
                    throw failure.cause
                }
            }
        }
    }

    /// Forgets `names` as owned and counts the refusal.
    private func refuse(_ names: Set<String>) -> JournalStoreFencing {
        for name in names { host?.drop(name) }
        host?.countFencing(names.count)
        return JournalStoreFencing(names: names)
    }

    private static func bytes(_ array: [UInt8]) -> ByteBuffer {
        ByteBuffer(bytes: array)
    }

    /// An instance's count of transitions (`i` its row): the larger of the count kept and its
    /// last action's ordinal, as the SQLite store reads it. A count lowered by hand made the
    /// next action's ordinal collide with a kept one, and the failed commit stopped every host
    /// that took the instance in turn.
    static let transitionCount = "greatest(i.transitions, coalesce((SELECT max(a.ordinal) FROM actomaton_actions a WHERE a.name = i.name), 0))"

    /// The statements that write `record`; `counts` holds each name's count of transitions.
    private static func queries(for record: JournalRecord, counts: inout [String: Int64]) -> [PostgresQuery] {
        switch record {
        case let .action(name, version, action, arguments, fired, timers, cancelledIDs, receipt, message):
            var queries: [PostgresQuery] = []
            if let receipt {
                queries.append("""
                    INSERT INTO actomaton_receipts (name, key, fingerprint, answer, expires)
                    VALUES (\(name), \(receipt.key), \(receipt.fingerprint), \(receipt.answer ?? ""), \(receipt.expires))
                    ON CONFLICT (name, key) DO UPDATE SET fingerprint = excluded.fingerprint, answer = excluded.answer, expires = excluded.expires
                    """)
            }
            let ordinal = counts[name, default: 0] + 1
            counts[name] = ordinal
            queries.append("""
                INSERT INTO actomaton_actions (name, version, action, args, ordinal, message)
                VALUES (\(name), \(version), \(action), \(bytes(ArgumentCoding.encode(arguments))), \(ordinal), \(message.map { $0() }))
                """)
            if let fired {
                queries.append(fired.repeating
                    ? "UPDATE actomaton_timers SET due = due + interval WHERE key = \(fired.key)"
                    : "DELETE FROM actomaton_timers WHERE key = \(fired.key)")
            }
            for id in cancelledIDs {
                queries.append("DELETE FROM actomaton_timers WHERE name = \(name) AND effect_id = \(id)")
            }
            for timer in timers {
                let queue = timer.options.queue
                queries.append("""
                    INSERT INTO actomaton_timers (key, name, action, args, due, interval, effect_id, queue, policy, max_count)
                    VALUES (\(timer.key), \(name), \(timer.action), \(bytes(ArgumentCoding.encode(timer.arguments))), \(timer.due),
                            \(timer.interval), \(timer.options.id), \(queue?.name), \(queue.map { Int64($0.policy.abiPolicy) }),
                            \(queue.map { Int64($0.policy.maxCount) }))
                    ON CONFLICT (key) DO UPDATE SET name = excluded.name, action = excluded.action, args = excluded.args,
                        due = excluded.due, interval = excluded.interval, effect_id = excluded.effect_id, queue = excluded.queue,
                        policy = excluded.policy, max_count = excluded.max_count
                    """)
            }
            return queries
        case let .snapshot(name, version, state, keepingActions):
            // Kept: this snapshot and the one before it, the actions after the older one, and at
            // least the last `keepingActions`: pruned through the older one's seq, or through
            // `keepingActions` before this one's, whichever is earlier (LEAST skips a NULL: the
            // CASE keeps a name without an older snapshot unpruned).
            return [
                """
                INSERT INTO actomaton_snapshots (name, seq, version, state)
                SELECT \(name), coalesce((SELECT max(seq) FROM actomaton_actions WHERE name = \(name)), 0), \(version), \(bytes(state))
                ON CONFLICT (name, seq) DO UPDATE SET version = excluded.version, state = excluded.state
                """,
                """
                UPDATE actomaton_instances SET pruned = true WHERE name = \(name) AND EXISTS (
                    SELECT 1 FROM actomaton_actions a WHERE a.name = \(name) AND a.seq <= (
                        SELECT CASE WHEN max(s.seq) IS NULL THEN NULL
                            ELSE least(max(s.seq), (SELECT max(seq) FROM actomaton_snapshots t WHERE t.name = \(name)) - \(keepingActions)) END
                        FROM actomaton_snapshots s WHERE s.name = \(name)
                            AND s.seq < (SELECT max(seq) FROM actomaton_snapshots t WHERE t.name = \(name))))
                """,
                """
                DELETE FROM actomaton_actions WHERE name = \(name) AND seq <= (
                    SELECT CASE WHEN max(s.seq) IS NULL THEN NULL
                            ELSE least(max(s.seq), (SELECT max(seq) FROM actomaton_snapshots t WHERE t.name = \(name)) - \(keepingActions)) END
                    FROM actomaton_snapshots s WHERE s.name = \(name)
                        AND s.seq < (SELECT max(seq) FROM actomaton_snapshots t WHERE t.name = \(name)))
                """,
                """
                DELETE FROM actomaton_snapshots WHERE name = \(name) AND seq < (
                    SELECT max(seq) FROM actomaton_snapshots s WHERE s.name = \(name)
                        AND s.seq < (SELECT max(seq) FROM actomaton_snapshots t WHERE t.name = \(name)))
                """,
            ]
        case let .timerEnded(key, _):
            return ["DELETE FROM actomaton_timers WHERE key = \(key)"]
        case let .forget(name):
            counts[name] = 0
            return [
                "DELETE FROM actomaton_actions WHERE name = \(name)",
                "DELETE FROM actomaton_snapshots WHERE name = \(name)",
                "DELETE FROM actomaton_timers WHERE name = \(name)",
                "DELETE FROM actomaton_receipts WHERE name = \(name)",
                "UPDATE actomaton_instances SET pruned = false WHERE name = \(name)",
            ]
        }
    }

    // MARK: Reading

    /// Runs `body` with the reader; failures as a journal's reasons.
    private func reading<T>(_ body: () throws -> T) throws(PluginJournalError.Reason) -> T {
        do {
            return try body()
        } catch let reason as PluginJournalError.Reason {
            throw reason
        } catch let error as ClusterError {
            throw .unreadable("\(error)")
        } catch {
            throw .unreadable(PostgresLink.message(of: error))
        }
    }

    private static func array(_ buffer: ByteBuffer) -> [UInt8] {
        Array(buffer.readableBytesView)
    }

    /// The largest snapshot a recovery reads: `PluginLimits.maxSnapshotBytes` (tests lower it).
    let maxSnapshotBytes: Int
    /// The most timers of a name a recovery reads: `JournalRecovery.maxTimers` (tests lower it).
    let maxTimers: Int

    /// What the database holds for `name`: its snapshots (the newest 4, each at
    /// most `PluginLimits.maxSnapshotBytes`: rows from an edited database were read whole,
    /// 800 MB of them for one request), actions and timers.
    public func recovery(for name: String) throws(PluginJournalError.Reason) -> JournalRecovery {
        try reading {
            let results = try reader.run([
                // The newest few (a host keeps two), each checked for its size before it is sent.
                """
                SELECT seq, version, CASE WHEN octet_length(state) <= \(Int64(maxSnapshotBytes)) THEN state END, octet_length(state)
                FROM actomaton_snapshots WHERE name = \(name) ORDER BY seq DESC LIMIT \(Int64(JournalRecovery.maxSnapshotsRead))
                """,
                "SELECT \(unescaped: Self.transitionCount), pruned FROM actomaton_instances i WHERE name = \(name)",
                """
                SELECT key, action, \(unescaped: Self.readableArguments), due, interval, effect_id, queue, policy, max_count
                FROM actomaton_timers WHERE name = \(name) ORDER BY key LIMIT \(Int64(maxTimers + 1))
                """,
            ])
            var recovery = JournalRecovery(snapshots: [], actions: [], startsAtTheBeginning: true, timers: [])
            for row in results[0].rows {
                let (sequence, version, state, size) = try row.decode((Int64, String, ByteBuffer?, Int32).self)
                guard let state else {
                    throw JournalRecovery.snapshotTooLarge(sequence, of: name, bytes: Int64(size), limit: maxSnapshotBytes)
                }
                recovery.snapshots.append(JournaledSnapshot(sequence: sequence, version: version, bytes: Self.array(state)))
            }
            if let row = results[1].rows.first {
                let (transitions, pruned) = try row.decode((Int64, Bool).self)
                recovery.transitionCount = transitions
                recovery.startsAtTheBeginning = !pruned
            }
            for row in results[2].rows {
                guard recovery.timers.count < maxTimers else { throw JournalRecovery.tooManyTimers(of: name, limit: maxTimers) }
                let (key, action, args, due, interval, id, queue, policy, maxCount)
                    = try row.decode((Int64, String, ByteBuffer?, Int64, Int64?, String?, String?, Int64?, Int64?).self)
                // Unreadable, it is reported and ended, as a timer whose interval is impossible is.
                let arguments = args.flatMap { ArgumentCoding.decode(Self.array($0)) }
                var timer = JournaledTimer(
                    key: key, plugin: name, action: action, arguments: arguments ?? [], due: due, interval: interval,
                    options: JournaledTimer.options(id: id, queue: queue, policy: policy ?? 0, maxCount: maxCount ?? 0))
                timer.unreadableArguments = arguments == nil
                timer.unreadableQueue = queue != nil && timer.options.queue == nil
                recovery.timers.append(timer)
            }
            try recovery.check(name: name)
            recovery.actions = try actionsReading(of: name, after: recovery.snapshots.first?.sequence ?? 0)
            return recovery
        }
    }

    /// A row's coded arguments when they are within `JournaledAction.maxArgumentBytes`, else
    /// NULL (unreadable), as a column of a query: an edited row of 1 GB was read whole.
    static let readableArguments = "CASE WHEN octet_length(args) <= \(JournaledAction.maxArgumentBytes) THEN args END"

    private func actionsReading(of name: String, after sequence: Int64) throws -> [JournaledAction] {
        let rows = try reader.run("""
            SELECT seq, version, action, \(unescaped: Self.readableArguments) FROM actomaton_actions WHERE name = \(name) AND seq > \(sequence)
            ORDER BY seq
            """).rows
        return try rows.map { row in
            let (seq, version, action, args) = try row.decode((Int64, String, String, ByteBuffer?).self)
            // Unreadable, it is reported as an action that cannot be replayed; the others replay.
            let arguments = args.flatMap { ArgumentCoding.decode(Self.array($0)) }
            return JournaledAction(sequence: seq, version: version, action: action, arguments: arguments ?? [], unreadableArguments: arguments == nil)
        }
    }

    /// The actions of `name` after `sequence`, oldest first.
    public func actions(of name: String, after sequence: Int64) throws(PluginJournalError.Reason) -> [JournaledAction] {
        try reading { try actionsReading(of: name, after: sequence) }
    }

    /// The receipts kept until `now` or later, the latest to expire first, at most `limit`,
    /// their answers read while they add up to at most `answerBytes` (the rest, and any past
    /// `JournaledReceipt.maxAnswerBytes`, left in the journal).
    public func receipts(keptAfter now: Int64, limit: Int, answerBytes: Int) throws(PluginJournalError.Reason) -> [JournaledReceipt] {
        // The running sum counts only the answers read, as the one store of one host does.
        let maxAnswer = Int64(JournaledReceipt.maxAnswerBytes)
        let rows: [(String, String, String, Int64, Int64)] = try reading {
            try reader.run("""
                SELECT name, key, fingerprint, octet_length(answer), expires FROM actomaton_receipts WHERE expires >= \(now)
                ORDER BY expires DESC LIMIT \(Int64(limit))
                """).rows.map { try $0.decode((String, String, String, Int64, Int64).self) }
        }
        var receipts: [JournaledReceipt] = []
        var read = 0
        for (name, key, fingerprint, length, expires) in rows {
            let size = Int(clamping: length)
            var answer: String?
            if length <= maxAnswer, size <= answerBytes - read, let kept = try receipt(of: name, key: key)?.answer {
                answer = kept
                read += size
            }
            receipts.append(JournaledReceipt(plugin: name, key: key, fingerprint: fingerprint, answer: answer, answerBytes: size, expires: expires))
        }
        return receipts
    }

    /// How many transitions `name` has had in all (0 for none).
    public func transitionCount(of name: String) throws(PluginJournalError.Reason) -> Int64 {
        try reading {
            try reader.run("SELECT \(unescaped: Self.transitionCount) FROM actomaton_instances i WHERE name = \(name)").rows.first?.decode(Int64.self) ?? 0
        }
    }

    /// The receipt kept under `key` for `name`, if any.
    public func receipt(of name: String, key: String) throws(PluginJournalError.Reason) -> JournaledReceipt? {
        try reading {
            // An answer past the limit is not read: its length says what is wrong.
            let limit = Int64(JournaledReceipt.maxAnswerBytes)
            let rows = try reader.run("""
                SELECT fingerprint, CASE WHEN octet_length(answer) <= \(limit) THEN answer ELSE '' END, octet_length(answer), expires
                FROM actomaton_receipts WHERE name = \(name) AND key = \(key)
                """).rows
            guard let row = rows.first else { return nil }
            let (fingerprint, answer, length, expires) = try row.decode((String, String, Int64, Int64).self)
            return JournaledReceipt(plugin: name, key: key, fingerprint: fingerprint, answer: length <= limit ? answer : nil,
                                    answerBytes: Int(clamping: length), expires: expires)
        }
    }

    /// The messages of `name`'s transitions numbered above `ordinal` or journaled after
    /// `position`, in the order journaled, at most `limit`, each with its number and position.
    public func messages(of name: String, after ordinal: Int64, orJournaledAfter position: Int64,
                         limit: Int) throws(PluginJournalError.Reason) -> [(ordinal: Int64, message: String, position: Int64)] {
        try reading {
            try Self.positionedMessages(try reader.run("""
                SELECT ordinal, \(unescaped: Self.messageColumns), seq FROM actomaton_actions
                WHERE name = \(name) AND (ordinal > \(ordinal) OR seq > \(position)) ORDER BY seq LIMIT \(Int64(limit))
                """).rows, of: name)
        }
    }

    /// A message, when it is within `JournaledReceipt.maxMessageBytes` (an edited row past it
    /// is not read), and its size.
    private static let messageColumns = """
        CASE WHEN octet_length(message) <= \(JournaledReceipt.maxMessageBytes) THEN message END, octet_length(message)
        """

    /// The messages of `rows` (ordinal, ``messageColumns``, seq), stopping before the first
    /// action kept without one; throws for one past `JournaledReceipt.maxMessageBytes`.
    private static func positionedMessages(_ rows: [PostgresRow], of name: String) throws -> [(ordinal: Int64, message: String, position: Int64)] {
        var messages: [(ordinal: Int64, message: String, position: Int64)] = []
        for row in rows {
            let (number, message, size, position) = try row.decode((Int64, String?, Int64?, Int64).self)
            guard let size else { break }
            guard let message else { throw JournaledReceipt.messageTooLong(Int(clamping: size), of: name, ordinal: number) }
            messages.append((number, message, position))
        }
        return messages
    }

    /// Every name the database holds something for, with what it holds.
    public func summaries() throws(PluginJournalError.Reason) -> [JournalSummary] {
        try reading {
            try reader.run("""
                SELECT name,
                       (SELECT count(*) FROM actomaton_actions a WHERE a.name = n.name),
                       (SELECT max(seq) FROM actomaton_snapshots s WHERE s.name = n.name),
                       (SELECT octet_length(state) FROM actomaton_snapshots s WHERE s.name = n.name ORDER BY seq DESC LIMIT 1),
                       (SELECT count(*) FROM actomaton_timers t WHERE t.name = n.name)
                FROM (SELECT name FROM actomaton_actions UNION SELECT name FROM actomaton_snapshots
                      UNION SELECT name FROM actomaton_timers) n
                ORDER BY name COLLATE "C"
                """).rows.map { row in
                let (name, actions, snapshot, size, timers) = try row.decode((String, Int64, Int64?, Int32?, Int64).self)
                return JournalSummary(plugin: name, actionCount: Int(actions), lastSnapshot: snapshot.map { ($0, Int(size ?? 0)) },
                                      timerCount: Int(timers))
            }
        }
    }
}
