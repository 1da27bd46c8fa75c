/// Which host of a cluster runs each instance (`--state postgres://…`): the service asks
/// before it makes or restores an instance, gives the instance up when it passivates it, and
/// drops the instances the placement says it lost.
///
/// Every call may block (a query to the shared database): the service makes them from threads
/// of their own, never from the concurrency pool. `ActomatonCluster`'s `ClusterHost` is the
/// implementation.
public protocol InstancePlacement: AnyObject, Sendable {
    /// Takes the instance journaled as `name` for this host, or says which host owns it.
    func place(_ name: String) throws -> InstancePlace
    /// Gives the instance up: any host may take it at once.
    func release(_ name: String)
    /// How other hosts reach this one (its `--advertise` URL), to tell a request that was
    /// forwarded here from one it should not have been.
    var advertisedURL: String { get }
    /// Whether any host ever made the instance journaled as `name` (claimed it to make it): a
    /// request that does not make one (GET, DELETE, a watch) asks first, so that it claims —
    /// and writes — nothing for a name nobody made.
    func knows(_ name: String) throws -> Bool
    /// Why this host cannot serve now — the shared database did not answer the last renewal of
    /// its lease — or `nil`: `/readyz` answers 503 with it, so that a load balancer sends
    /// requests to the other hosts meanwhile. Read without blocking.
    var unavailability: String? { get }
}

extension InstancePlacement {
    /// Every name is taken as known: the request claims it, and finds whether it exists.
    public func knows(_ name: String) throws -> Bool { true }

    /// Always available.
    public var unavailability: String? { nil }
}

/// Where an instance runs.
public enum InstancePlace: Sendable, Hashable {
    /// On this host, claimed at `epoch`: it may make or restore the instance, whose records
    /// carry the epoch (a machine of an older epoch can never write again).
    case here(epoch: Int64)
    /// On another host, reached at this URL (`http://10.0.0.6:8080`).
    case elsewhere(String)
}
