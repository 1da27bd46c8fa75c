import ActomatonHost
import PostgresNIO
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// This host's membership in a cluster of hosts sharing one PostgreSQL database: its lease,
/// and the instances it owns.
///
/// **The lease.** The host registers itself (a row in `actomaton_hosts`, with the URL the other
/// hosts reach it at) and renews its lease every third of ``leaseTTL`` from a thread of its
/// own. The database's clock is the only one compared, so the hosts' clocks may differ.
///
/// **Ownership, with fencing.** Each instance (a journal name) has one owner and an *epoch*
/// that grows with every change of owner. ``claim(_:)`` takes an instance that nobody owns, or
/// whose owner's lease has lapsed or who stopped, and bumps its epoch; it answers with the
/// live owner otherwise. Every commit of the journal (``PostgresJournalStore``) checks, in its
/// own transaction and with the instance's row locked, that this host still owns each name at
/// the epoch it claimed: a host paused past its lease (SIGSTOP, a long stall, a partition)
/// cannot write after another host took over. It finds out at its next commit (the records
/// are refused, `JournalStoreFencing`) or at its next renewal (the lease had lapsed: it
/// forgets every instance it owned, ``onLeaseLost(_:)``), and drops those instances.
///
/// The ownership of one instance is kept per instance, under the host's lease: renewing costs
/// one query per host whatever the number of instances, and a host that dies frees all of its
/// instances when its lease lapses (as Orleans' membership and grain directory do).
public final class ClusterHost: @unchecked Sendable {
    /// The shortest lease.
    public static let minLeaseTTL: Duration = .seconds(1)
    /// The longest lease.
    public static let maxLeaseTTL: Duration = .seconds(3600)
    /// The most bytes of an advertised URL.
    public static let maxAdvertiseLength = 512

    /// The shared database.
    public let address: PostgresAddress
    /// How the other hosts reach this one (`--advertise`).
    public let advertise: String
    /// How long the lease lasts without a renewal (`--lease-ttl`).
    public let leaseTTL: Duration
    /// This host's number in the cluster, unique for every start of every host.
    public let id: Int64
    /// The numbers a host may have: its timer keys are its number times 2^32 plus a count.
    public static let hostNumbers: ClosedRange<Int64> = 1...Int64(Int32.max)

    /// The lease's connection: renewals, sweeps, the schema.
    private let link: PostgresLink
    /// The claims' connection: a claim stuck behind a locked row must not hold up the lease's
    /// renewal (it did, and the host lost its lease).
    private let claimLink: PostgresLink
    /// How long a claim (or a release) waits for a row another transaction locked before it
    /// fails (503, retry) instead of waiting for ever: 5 s.
    static let defaultClaimLockTimeout: Duration = .seconds(5)
    /// Set on the claims' connection before each claim and release (``defaultClaimLockTimeout``).
    private let claimLockTimeout: PostgresQuery
    /// The epoch at which this host owns each name.
    private let owned = Mutex<[String: Int64]>([:])
    /// Claims of one name on this host, one at a time: two at once both took it, the second
    /// at a higher epoch, which fenced the machine the first made (both requests failed).
    private let claimLocks: [ClaimLock] = (0..<64).map { _ in ClaimLock() }
    private let keeperState = Mutex(KeeperState())
    private let keeperWake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let keeperMutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var keeper: pthread_t?
    private let leaseLostHandler = Mutex<(@Sendable (_ names: [String]) -> Void)?>(nil)
    private let timersAdoptedHandler = Mutex<(@Sendable (_ names: [String]) -> Void)?>(nil)
    private let overShareHandler = Mutex<(@Sendable (_ count: Int) -> Void)?>(nil)
    /// The most instances with due timers one sweep adopts: ownership moves at a bounded rate.
    public static let maxAdoptedPerSweep = 100
    /// The most instances a host gives up per sweep when it owns more than its share: ownership
    /// moves to a host that joined at this bounded rate (every third of the lease).
    public static let maxShedPerSweep = 10

    private struct KeeperState {
        var stopping = false
        var renewals = 0
        var lastError: ClusterError?
    }

    /// What ``claim(_:)`` found.
    public enum Claim: Sendable, Hashable {
        /// This host owns the instance now, at this epoch.
        case owned(epoch: Int64)
        /// Another host owns it and its lease is alive: its number and URL.
        case elsewhere(host: Int64, advertise: String)
    }

    /// Joins the cluster in the database at `address`: makes or checks its tables, registers
    /// this host and takes its first lease; renews it from a thread of its own until ``stop()``.
    ///
    /// Blocks: call it from a thread of your own, or at start-up.
    ///
    /// - Parameters:
    ///   - address: The shared database.
    ///   - advertise: How the other hosts reach this one (`http://10.0.0.5:8080`).
    ///   - leaseTTL: How long the lease lasts without a renewal, from 1 s to an hour.
    public convenience init(address: PostgresAddress, advertise: String, leaseTTL: Duration = .seconds(10)) throws(ClusterError) {
        try self.init(address: address, advertise: advertise, leaseTTL: leaseTTL, claimLockTimeout: Self.defaultClaimLockTimeout)
    }

    /// Joins the cluster with claims that wait at most `claimLockTimeout` for a locked row
    /// (whole milliseconds, at least one): tests wait longer or shorter than the default.
    init(address: PostgresAddress, advertise: String, leaseTTL: Duration, claimLockTimeout: Duration) throws(ClusterError) {
        self.claimLockTimeout = PostgresQuery(unsafeSQL: "SET lock_timeout = '\(max(Int64(claimLockTimeout / .milliseconds(1)), 1))ms'")
        guard leaseTTL >= Self.minLeaseTTL, leaseTTL <= Self.maxLeaseTTL else {
            throw .badOption("--lease-ttl must be from 1 to 3600 seconds")
        }
        // Hosts forward requests to each other in plain HTTP: an https:// address (or a port out
        // of range) was accepted here, and every request forwarded to the host failed.
        guard (try? ClusterForwarder.hostAndPort(of: advertise)) != nil else {
            throw .badOption("--advertise must be an http://HOST[:PORT] URL of at most \(Self.maxAdvertiseLength) bytes, such as "
                             + "http://10.0.0.5:8080 (hosts forward requests to each other in plain HTTP)")
        }
        self.address = address
        self.advertise = advertise
        self.leaseTTL = leaseTTL
        link = PostgresLink(address, name: "lease")
        // A claim may wait its lock timeout for a row before the server answers: the answer's
        // deadline comes after it (a test's hour-long lock timeout was cut at 15 s).
        let claimWait = TimeAmount.milliseconds(max(Int64(claimLockTimeout / .milliseconds(1)), 1))
        claimLink = PostgresLink(address, name: "claim", idleInTransactionTimeout: leaseTTL,
                                 answerTimeout: PostgresLink.defaultAnswerTimeout + claimWait)
        try ClusterSchema.prepare(link)
        let rows = try link.run("""
            INSERT INTO actomaton_hosts (advertise, lease_expires)
            VALUES (\(advertise), clock_timestamp() + make_interval(secs => \(Self.seconds(leaseTTL))))
            RETURNING id
            """).rows
        guard let id = try? rows.first?.decode(Int64.self) else { throw .queryFailed("registering the host returned no number") }
        // Its timer keys are its number times 2^32 plus a count: a number past 2^31 - 1 lost its
        // upper bits, and two hosts shared keys, one taking over the other's pending timers (the
        // number comes from the database: review).
        guard Self.hostNumbers.contains(id) else {
            _ = try? link.run("UPDATE actomaton_hosts SET stopped = true WHERE id = \(id)")
            link.close()
            claimLink.close()
            throw .notAClusterDatabase("it numbered this host \(id), outside 1 to \(Self.hostNumbers.upperBound), the numbers whose timer "
                                       + "keys cannot meet another host's; its sequence actomaton_hosts_id_seq was set past them")
        }
        self.id = id
        // Hosts that stopped or lapsed a day ago and own nothing are forgotten.
        _ = try? link.run("""
            DELETE FROM actomaton_hosts h WHERE h.lease_expires < clock_timestamp() - interval '1 day'
                AND NOT EXISTS (SELECT 1 FROM actomaton_instances i WHERE i.owner = h.id)
            """)
        pthread_mutex_init(keeperMutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(keeperWake, &attributes)
        pthread_condattr_destroy(&attributes)
        startKeeper()
    }

    deinit {
        stop()
        pthread_cond_destroy(keeperWake)
        pthread_mutex_destroy(keeperMutex)
        keeperWake.deallocate()
        keeperMutex.deallocate()
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    // MARK: Ownership

    /// Takes the instance `name` when nobody owns it, its owner's lease lapsed or its owner
    /// stopped (its epoch grows), or keeps it when this host owns it already; says who owns it
    /// otherwise. Blocks for one query.
    public func claim(_ name: String) throws(ClusterError) -> Claim {
        if let epoch = owned.withLock({ $0[name] }) { return .owned(epoch: epoch) }
        var hasher = Hasher()
        hasher.combine(name)
        let lock = claimLocks[Int(UInt(bitPattern: hasher.finalize()) % UInt(claimLocks.count))]
        return try lock.mutex.withLock { _ throws(ClusterError) -> Claim in
            // Claimed by another request meanwhile: it stands.
            if let epoch = owned.withLock({ $0[name] }) { return .owned(epoch: epoch) }
            return try claimAlone(name)
        }
    }

    private func claimAlone(_ name: String) throws(ClusterError) -> Claim {
        let taken = try claimLink.run([claimLockTimeout, """
            INSERT INTO actomaton_instances AS i (name, owner, epoch) VALUES (\(name), \(id), 1)
            ON CONFLICT (name) DO UPDATE SET owner = \(id), epoch = i.epoch + 1
            WHERE i.owner IS NULL OR i.owner = \(id)
               OR NOT EXISTS (SELECT 1 FROM actomaton_hosts h
                              WHERE h.id = i.owner AND h.lease_expires > clock_timestamp() AND NOT h.stopped)
            RETURNING epoch
            """])[1].rows
        if let epoch = try? taken.first?.decode(Int64.self) {
            owned.withLock { $0[name] = epoch }
            return .owned(epoch: epoch)
        }
        let owner = try claimLink.run("""
            SELECT h.id, h.advertise FROM actomaton_instances i JOIN actomaton_hosts h ON h.id = i.owner WHERE i.name = \(name)
            """).rows
        guard let (host, url) = try? owner.first?.decode((Int64, String).self) else {
            // The owner went away meanwhile: try once more.
            return try claimOnce(name)
        }
        return .elsewhere(host: host, advertise: url)
    }

    private func claimOnce(_ name: String) throws(ClusterError) -> Claim {
        let taken = try claimLink.run("""
            UPDATE actomaton_instances SET owner = \(id), epoch = epoch + 1 WHERE name = \(name) AND owner IS NULL RETURNING epoch
            """).rows
        guard let epoch = try? taken.first?.decode(Int64.self) else { throw .queryFailed("the ownership of \(name) kept changing") }
        owned.withLock { $0[name] = epoch }
        return .owned(epoch: epoch)
    }

    /// Gives up the instance `name` (after passivating it, or when it is dropped): any host may
    /// take it at once. Blocks for one query.
    public func release(_ name: String) {
        guard let epoch = owned.withLock({ $0.removeValue(forKey: name) }) else { return }
        // On the claims' connection, with their lock timeout: behind a locked row, a release on
        // the lease's connection held up the renewal, and the host lost its lease.
        _ = try? claimLink.run([claimLockTimeout,
                                "UPDATE actomaton_instances SET owner = NULL WHERE name = \(name) AND owner = \(id) AND epoch = \(epoch)"])
    }

    /// Whether the database has a row for `name`: some host claimed it. Blocks for one query.
    public func holds(_ name: String) throws(ClusterError) -> Bool {
        if owned.withLock({ $0[name] != nil }) { return true }
        return try !claimLink.run("SELECT 1 FROM actomaton_instances WHERE name = \(name)").rows.isEmpty
    }

    /// Forgets that this host owns `name`, writing nothing (another host took it over).
    public func drop(_ name: String) {
        owned.withLock { _ = $0.removeValue(forKey: name) }
    }

    /// The epoch at which this host owns `name`, if it does.
    public func epoch(of name: String) -> Int64? {
        owned.withLock { $0[name] }
    }

    /// The names this host owns.
    public var ownedNames: [String] {
        owned.withLock { Array($0.keys) }
    }

    /// Counts `count` records refused as fenced, for ``ClusterStatus``.
    func countFencing(_ count: Int) {
        _ = try? link.run("UPDATE actomaton_hosts SET fenced = fenced + \(Int64(count)) WHERE id = \(id)")
    }

    /// Tells `handler`, on the lease keeper's thread, the names this host owned when it found
    /// its lease had lapsed: it owns none of them any more and must drop their machines.
    public func onLeaseLost(_ handler: @escaping @Sendable (_ names: [String]) -> Void) {
        leaseLostHandler.withLock { $0 = handler }
    }

    // MARK: Durable timers

    /// Tells `handler`, on the lease keeper's thread, the instances this host adopted because
    /// their timers fall due and nobody alive owns them (their owner died or stopped): the
    /// service brings each back from the journal, which arms its timers.
    public func onTimersAdopted(_ handler: @escaping @Sendable (_ names: [String]) -> Void) {
        timersAdoptedHandler.withLock { $0 = handler }
    }

    /// Claims up to ``maxAdoptedPerSweep`` instances that have a timer due within the lease
    /// and no live owner — `FOR UPDATE SKIP LOCKED`, so hosts sweeping together take different
    /// ones — and tells ``onTimersAdopted(_:)``'s handler. Returns their names. The keeper
    /// sweeps after every renewal; a timer that fell due while its owner was dead fires once,
    /// on the host that adopted it.
    @discardableResult
    public func adoptInstancesWithDueTimers(nowMilliseconds: Int64) throws(ClusterError) -> [String] {
        let horizon = nowMilliseconds + Int64(Self.seconds(leaseTTL) * 1000)
        let rows: [(String, Int64)]
        do {
            rows = try link.transaction { transaction in
                try transaction.run("""
                    UPDATE actomaton_instances i SET owner = \(id), epoch = i.epoch + 1
                    FROM (SELECT c.name FROM actomaton_instances c
                          WHERE EXISTS (SELECT 1 FROM actomaton_timers t WHERE t.name = c.name AND t.due <= \(horizon))
                            AND c.epoch < \(Int64.max)
                            AND (c.owner IS NULL OR NOT EXISTS (
                                SELECT 1 FROM actomaton_hosts h
                                WHERE h.id = c.owner AND h.lease_expires > clock_timestamp() AND NOT h.stopped))
                          LIMIT \(Int64(Self.maxAdoptedPerSweep)) FOR UPDATE OF c SKIP LOCKED) due
                    WHERE i.name = due.name
                    RETURNING i.name, i.epoch
                    """).rows.map { try $0.decode((String, Int64).self) }
            }
        } catch let error as ClusterError {
            throw error
        } catch {
            throw PostgresLink.clusterError(error)
        }
        guard !rows.isEmpty else { return [] }
        owned.withLock { owned in
            for (name, epoch) in rows { owned[name] = epoch }
        }
        let names = rows.map(\.0)
        if let handler = timersAdoptedHandler.withLock({ $0 }) { handler(names) }
        return names
    }

    // MARK: Sharing

    /// How many instances this host should give up now: those it owns past its share of the
    /// instances live hosts own (that count over the live hosts, rounded up), when it is past
    /// its share by more than a tenth of it (at least one, so that a balanced cluster does not
    /// churn); at most ``maxShedPerSweep``. Blocks for one query.
    public func excessOverShare() throws(ClusterError) -> Int {
        let rows = try link.run("""
            SELECT (SELECT count(*) FROM actomaton_hosts WHERE lease_expires > clock_timestamp() AND NOT stopped),
                   (SELECT count(*) FROM actomaton_instances i JOIN actomaton_hosts h ON h.id = i.owner
                    WHERE h.lease_expires > clock_timestamp() AND NOT h.stopped),
                   (SELECT count(*) FROM actomaton_instances WHERE owner = \(id))
            """).rows
        guard let (hosts, total, mine) = try? rows.first?.decode((Int64, Int64, Int64).self), hosts > 0 else { return 0 }
        let share = (total + hosts - 1) / hosts
        guard mine > share + max(1, share / 10) else { return 0 }
        return Int(min(mine - share, Int64(Self.maxShedPerSweep)))
    }

    /// Tells `handler`, on the lease keeper's thread after a renewal, how many instances this
    /// host owns past its share (``excessOverShare()``): the service gives up that many idle
    /// ones, which the next host asked for them takes.
    public func onOverShare(_ handler: @escaping @Sendable (_ count: Int) -> Void) {
        overShareHandler.withLock { $0 = handler }
    }

    // MARK: The lease

    /// How many times the lease was renewed (for tests).
    public var renewals: Int { keeperState.withLock { $0.renewals } }

    /// What failed in the lease keeper's last round (a renewal, or the sweep after it), or `nil`.
    public var lastKeeperError: ClusterError? { keeperState.withLock { $0.lastError } }

    /// Renews the lease now; returns whether it was still alive (when not, every owned name is
    /// forgotten and ``onLeaseLost(_:)``'s handler is told).
    @discardableResult
    public func renew() throws(ClusterError) -> Bool {
        let rows = try link.run("""
            UPDATE actomaton_hosts h SET lease_expires = clock_timestamp() + make_interval(secs => \(Self.seconds(leaseTTL))), stopped = false
            FROM (SELECT lease_expires > clock_timestamp() AND NOT stopped AS alive FROM actomaton_hosts WHERE id = \(id) FOR UPDATE) old
            WHERE h.id = \(id) RETURNING old.alive
            """).rows
        let alive = (try? rows.first?.decode(Bool.self)) ?? false
        if rows.isEmpty {
            // Its row was deleted (by hand): the host registers again under its number (never
            // given to another host), its instances dropped as after a lapse. It used to serve on
            // unregistered, its instances looking unowned to every other host.
            try link.run("""
                INSERT INTO actomaton_hosts (id, advertise, lease_expires)
                VALUES (\(id), \(advertise), clock_timestamp() + make_interval(secs => \(Self.seconds(leaseTTL))))
                ON CONFLICT (id) DO NOTHING
                """)
        }
        keeperState.withLock { $0.renewals += 1 }
        if !alive {
            let lost = owned.withLock { owned in
                defer { owned = [:] }
                return Array(owned.keys)
            }
            if !lost.isEmpty, let handler = leaseLostHandler.withLock({ $0 }) { handler(lost) }
        }
        return alive
    }

    private func startKeeper() {
        // The keeper holds no reference: `stop` (from `deinit` at the latest) joins it.
        let context = Unmanaged.passUnretained(self).toOpaque()
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { context in
            Unmanaged<ClusterHost>.fromOpaque(context!).takeUnretainedValue().keepLease()
            return nil
        }, context)
        if started == 0 { keeper = thread }
    }

    /// The keeper's loop: renews every third of the lease until ``stop()``.
    private func keepLease() {
        let interval = UInt64(Self.seconds(leaseTTL) / 3 * 1e9)
        while true {
            pthread_mutex_lock(keeperMutex)
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let deadline = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec) + interval
            var until = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            while !keeperState.withLock({ $0.stopping }) {
                if pthread_cond_timedwait(keeperWake, keeperMutex, &until) == ETIMEDOUT { break }
            }
            pthread_mutex_unlock(keeperMutex)
            if keeperState.withLock({ $0.stopping }) { return }
            do {
                if try renew() {
                    var now = timespec()
                    clock_gettime(CLOCK_REALTIME, &now)
                    try adoptInstancesWithDueTimers(nowMilliseconds: Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000)
                    if let handler = overShareHandler.withLock({ $0 }) {
                        let excess = try excessOverShare()
                        if excess > 0 { handler(excess) }
                    }
                }
                keeperState.withLock { $0.lastError = nil }
            } catch {
                keeperState.withLock { $0.lastError = error }
            }
        }
    }

    /// Stops renewing, gives up every instance this host owns and marks it stopped, so other
    /// hosts take its instances at once. Blocks for one transaction; later claims fail.
    public func stop() {
        let first = keeperState.withLock { state in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        pthread_mutex_lock(keeperMutex)
        pthread_cond_broadcast(keeperWake)
        pthread_mutex_unlock(keeperMutex)
        if let keeper, !pthread_equal(keeper, pthread_self()).boolValue { pthread_join(keeper, nil) }
        owned.withLock { $0 = [:] }
        _ = try? link.run([
            "UPDATE actomaton_instances SET owner = NULL WHERE owner = \(id)",
            "UPDATE actomaton_hosts SET stopped = true, lease_expires = clock_timestamp() WHERE id = \(id)",
        ])
        link.close()
        claimLink.close()
    }
}

private extension Int32 {
    var boolValue: Bool { self != 0 }
}

/// One of the locks ``ClusterHost`` serialises the claims of a name with.
private final class ClaimLock: Sendable {
    let mutex = Mutex(())
}
