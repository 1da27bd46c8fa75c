import ActomatonService

/// A service started with `--state postgres://…` asks the cluster which host runs each instance.
extension ClusterHost: InstancePlacement {
    /// Claims `name` for this host (``ClusterHost/claim(_:)``): here, or at the owner's URL.
    public func place(_ name: String) throws -> InstancePlace {
        switch try claim(name) {
        case let .owned(epoch): .here(epoch: epoch)
        case let .elsewhere(_, advertise): .elsewhere(advertise)
        }
    }

    /// This host's `--advertise` URL.
    public var advertisedURL: String { advertise }

    /// Why this host cannot serve now: the last renewal of its lease (or the sweep after it)
    /// failed, the database unreachable; `nil` once one succeeds.
    public var unavailability: String? {
        lastKeeperError.map { "this host could not renew its lease in the shared database: \($0)" }
    }

    /// Whether the instance has a row: some host claimed it to make it (``ClusterHost/holds(_:)``).
    public func knows(_ name: String) throws -> Bool {
        try holds(name)
    }
}
