import PostgresNIO

/// The cluster's tables in PostgreSQL, created and migrated by the first host that connects
/// (under an advisory lock, so hosts that start together do not race), and the version they
/// are at. A database whose tables are newer than this host knows is refused with one line.
///
/// Every table's name starts with `actomaton_`, so the cluster can share a database with
/// other applications.
public enum ClusterSchema {
    /// The version of the tables this host makes and reads.
    public static let version: Int64 = 1
    /// The advisory lock held while the tables are checked and made ("ACTC").
    static let migrationLock: Int64 = 0x4143_5443

    /// The tables of version 1.
    static let version1 = [
        """
        CREATE TABLE actomaton_hosts (
            id bigserial PRIMARY KEY,
            advertise text NOT NULL,
            started timestamptz NOT NULL DEFAULT clock_timestamp(),
            lease_expires timestamptz NOT NULL,
            stopped boolean NOT NULL DEFAULT false,
            fenced bigint NOT NULL DEFAULT 0)
        """,
        """
        CREATE TABLE actomaton_instances (
            name text PRIMARY KEY,
            owner bigint,
            epoch bigint NOT NULL DEFAULT 0,
            transitions bigint NOT NULL DEFAULT 0,
            pruned boolean NOT NULL DEFAULT false)
        """,
        "CREATE INDEX actomaton_instances_by_owner ON actomaton_instances (owner)",
        """
        CREATE TABLE actomaton_actions (
            seq bigserial PRIMARY KEY,
            name text NOT NULL,
            version text NOT NULL,
            action text NOT NULL,
            args bytea NOT NULL,
            ordinal bigint NOT NULL,
            message text)
        """,
        "CREATE INDEX actomaton_actions_by_name ON actomaton_actions (name, seq)",
        // No transition of an instance is journaled twice.
        "CREATE UNIQUE INDEX actomaton_actions_by_ordinal ON actomaton_actions (name, ordinal)",
        """
        CREATE TABLE actomaton_snapshots (
            name text NOT NULL,
            seq bigint NOT NULL,
            version text NOT NULL,
            state bytea NOT NULL,
            PRIMARY KEY (name, seq))
        """,
        """
        CREATE TABLE actomaton_timers (
            key bigint PRIMARY KEY,
            name text NOT NULL,
            action text NOT NULL,
            args bytea NOT NULL,
            due bigint NOT NULL,
            interval bigint,
            effect_id text,
            queue text,
            policy bigint,
            max_count bigint)
        """,
        "CREATE INDEX actomaton_timers_by_due ON actomaton_timers (due)",
        "CREATE INDEX actomaton_timers_by_name ON actomaton_timers (name)",
        """
        CREATE TABLE actomaton_receipts (
            name text NOT NULL,
            key text NOT NULL,
            fingerprint text NOT NULL,
            answer text NOT NULL,
            expires bigint NOT NULL,
            PRIMARY KEY (name, key))
        """,
    ]

    /// Makes the tables when there are none; checks their version otherwise.
    static func prepare(_ link: PostgresLink) throws(ClusterError) {
        do {
            try link.transaction { transaction in
                try transaction.run("SELECT pg_advisory_xact_lock(\(migrationLock))")
                let exists = try transaction.run("SELECT to_regclass('actomaton_schema') IS NOT NULL")
                let found = try exists.rows.first?.decode(Bool.self) ?? false
                if found {
                    let rows = try transaction.run("SELECT version FROM actomaton_schema").rows
                    guard rows.count == 1, let version = try? rows[0].decode(Int64.self) else {
                        throw ClusterError.notAClusterDatabase("actomaton_schema does not hold one version")
                    }
                    guard version <= Self.version else { throw ClusterError.newerSchema(found: version, supported: Self.version) }
                    // No host writes a version below 1: an edit (0 and -1 were taken silently).
                    guard version >= 1 else {
                        throw ClusterError.notAClusterDatabase("actomaton_schema holds version \(version), which no host writes")
                    }
                    return
                }
                let clashing = try transaction.run("""
                    SELECT string_agg(relname, ', ') FROM pg_class WHERE relname LIKE 'actomaton\\_%' AND relkind = 'r'
                    """).rows.first?.decode(String?.self)
                if let clashing {
                    throw ClusterError.notAClusterDatabase("tables \(clashing) exist without actomaton_schema")
                }
                try transaction.run(version1.map { PostgresQuery(unsafeSQL: $0) })
                try transaction.run([
                    "CREATE TABLE actomaton_schema (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), version bigint NOT NULL)",
                    "INSERT INTO actomaton_schema (version) VALUES (\(Self.version))",
                ])
            }
        } catch let error as ClusterError {
            throw error
        } catch {
            throw PostgresLink.clusterError(error)
        }
    }
}
