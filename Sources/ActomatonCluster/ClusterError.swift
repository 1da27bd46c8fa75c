/// Why a host cannot join or use its cluster's shared database, in one line.
public enum ClusterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `--state postgres://…` address (or its password file) is wrong.
    case badAddress(String)
    /// The server cannot be reached, or refused the connection: what it said.
    case unreachable(String)
    /// The database's tables were made by a newer host.
    case newerSchema(found: Int64, supported: Int64)
    /// The database holds tables of the same names that are not a cluster's.
    case notAClusterDatabase(String)
    /// A query failed: the server's message.
    case queryFailed(String)
    /// The host's lease lapsed before it could renew it: another host may own its instances now.
    case leaseLost
    /// An option is out of its bounds.
    case badOption(String)

    /// One line.
    public var description: String {
        switch self {
        case let .badAddress(why): why
        case let .unreachable(why): "cannot reach the cluster's database: \(why)"
        case let .newerSchema(found, supported):
            "the cluster's database was set up by a newer actomaton-host (schema \(found); this host knows \(supported)); refusing to use it"
        case let .notAClusterDatabase(why): "the database is not a cluster's of actomaton-host (\(why)); refusing to use it"
        case let .queryFailed(why): "the cluster's database refused a query: \(why)"
        case .leaseLost: "this host's lease lapsed before it was renewed; its instances may be owned by another host now"
        case let .badOption(why): why
        }
    }
}
