import ActomatonHost
import PostgresNIO

/// What `actomaton-host cluster status` shows: the hosts of a cluster, their leases, and how
/// many instances each owns.
public struct ClusterStatus: Sendable, Hashable {
    /// The most hosts listed (the newest first); older ones are counted in ``hostsLeftOut``.
    public static let maxHostsListed = 1000

    /// One host.
    public struct Host: Sendable, Hashable {
        /// Its number in the cluster.
        public var id: Int64
        /// How the other hosts reach it.
        public var advertise: String
        /// Whether its lease is alive now.
        public var alive: Bool
        /// Whether it stopped (gave up its instances).
        public var stopped: Bool
        /// Seconds until its lease lapses (negative: since it lapsed).
        public var leaseSecondsLeft: Double
        /// How many instances it owns.
        public var instances: Int
        /// How many of its records were refused because another host had taken their instance over.
        public var fencingRefusals: Int
    }

    /// The hosts the database remembers, the newest first (one that stopped or lapsed more
    /// than a day ago and owns nothing is forgotten when another host starts).
    public var hosts: [Host]
    /// Hosts not listed, past ``maxHostsListed``.
    public var hostsLeftOut: Int
    /// Instances nobody owns (released, or never claimed since they were journaled).
    public var unownedInstances: Int
    /// The version of the database's tables.
    public var schemaVersion: Int64

    /// Reads the status from the database of `store`.
    public static func read(from store: PostgresJournalStore) throws(ClusterError) -> ClusterStatus {
        let link = PostgresLink(store.address, name: "status")
        defer { link.close() }
        // Leases are clamped to a century either way: one written as 'infinity' by hand made
        // the whole status fail ("cannot subtract infinite timestamps").
        let results = try link.run([
            """
            SELECT h.id, h.advertise, h.lease_expires > clock_timestamp() AND NOT h.stopped, h.stopped,
                   extract(epoch FROM least(greatest(h.lease_expires, clock_timestamp() - interval '100 years'),
                                            clock_timestamp() + interval '100 years') - clock_timestamp())::float8,
                   (SELECT count(*) FROM actomaton_instances i WHERE i.owner = h.id), h.fenced
            FROM actomaton_hosts h
            ORDER BY h.id DESC LIMIT \(Int64(maxHostsListed))
            """,
            "SELECT count(*) FROM actomaton_instances WHERE owner IS NULL",
            "SELECT version FROM actomaton_schema",
            "SELECT count(*) FROM actomaton_hosts",
        ])
        var hosts: [Host] = []
        do {
            for row in results[0].rows {
                let (id, advertise, alive, stopped, left, instances, fenced)
                    = try row.decode((Int64, String, Bool, Bool, Double, Int64, Int64).self)
                hosts.append(Host(id: id, advertise: advertise, alive: alive, stopped: stopped, leaseSecondsLeft: left,
                                  instances: Int(instances), fencingRefusals: Int(fenced)))
            }
            let unowned = try results[1].rows.first?.decode(Int64.self) ?? 0
            let version = try results[2].rows.first?.decode(Int64.self) ?? 0
            // Counted apart: the list stops at its limit (every host past it was counted as one).
            let total = try results[3].rows.first?.decode(Int64.self) ?? 0
            let leftOut = max(0, Int(clamping: total) - hosts.count)
            return ClusterStatus(hosts: hosts, hostsLeftOut: leftOut, unownedInstances: Int(unowned),
                                 schemaVersion: version)
        } catch {
            throw .queryFailed(PostgresLink.message(of: error))
        }
    }

    /// The status as lines of text: a header, then a line per host.
    public var lines: [String] {
        var lines = ["schema \(schemaVersion); \(hosts.filter(\.alive).count) hosts alive; \(unownedInstances) instances unowned"]
        lines.append("host  state    lease     instances  fenced  advertise")
        for host in hosts {
            let state = host.alive ? "alive" : host.stopped ? "stopped" : "lapsed"
            let lease = host.alive ? "\(Int(host.leaseSecondsLeft.rounded(.up)))s left" : "-"
            lines.append([String(host.id).padding(5), state.padding(8), lease.padding(9), String(host.instances).padding(10),
                          String(host.fencingRefusals).padding(6), host.advertise.cut(utf8Bytes: ClusterHost.maxAdvertiseLength)].joined(separator: " "))
        }
        if hostsLeftOut > 0 { lines.append("… and \(hostsLeftOut) older hosts") }
        return lines
    }
}

private extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
