import ActomatonPluginContract
import Synchronization

/// A live instance: its address, its machine, and the watchers of its transitions.
public final class Instance: Sendable {
    /// Its plugin and key.
    public let address: InstanceAddress
    /// Its machine.
    public let machine: InstanceMachine
    /// Who watches its transitions.
    let watchers: WatcherSet

    init(address: InstanceAddress, machine: InstanceMachine, watchers: WatcherSet) {
        self.address = address
        self.machine = machine
        self.watchers = watchers
    }

    /// How many watchers it has.
    public var watcherCount: Int { watchers.count }
}

/// An instance's watchers, at most `limit` of them; each transition goes to all as one JSON
/// text (made once, only when someone watches).
final class WatcherSet: Sendable {
    private struct State {
        var watchers: [ObjectIdentifier: Watcher] = [:]
        var closed: Watcher.EndReason?
    }

    private let state = Mutex(State())
    private let limit: Int
    private let address: InstanceAddress
    private let onChange: @Sendable (Int) -> Void

    /// - Parameters:
    ///   - limit: The most watchers at a time.
    ///   - onChange: Told the change in the count of watchers (+1, -1), for metrics.
    init(address: InstanceAddress, limit: Int, onChange: @escaping @Sendable (Int) -> Void) {
        self.address = address
        self.limit = limit
        self.onChange = onChange
    }

    var count: Int { state.withLock { $0.watchers.count } }

    /// Adds a watcher buffering `buffer` messages; throws ``ServiceError/overLimit(_:)`` past the limit.
    func add(buffer: Int) throws(ServiceError) -> Watcher {
        let watcher = Watcher(buffer: buffer)
        let outcome: Result<Void, ServiceError> = state.withLock { state in
            if let closed = state.closed { return .failure(closed == .shuttingDown ? .shuttingDown : .notFound("no instance \(address)")) }
            guard state.watchers.count < limit else {
                return .failure(.overLimit("\(address) already has \(limit) watchers, its limit (--max-watchers-per-instance)"))
            }
            state.watchers[ObjectIdentifier(watcher)] = watcher
            return .success(())
        }
        try outcome.get()
        onChange(1)
        return watcher
    }

    /// Forgets a watcher whose connection ended.
    func remove(_ watcher: Watcher) {
        let removed = state.withLock { $0.watchers.removeValue(forKey: ObjectIdentifier(watcher)) != nil }
        watcher.finish()
        if removed { onChange(-1) }
    }

    /// Sends a transition to every watcher.
    func broadcast(_ transition: InstanceTransition) {
        let watchers = state.withLock { Array($0.watchers.values) }
        guard !watchers.isEmpty else { return }
        let message = ServiceJSON.watchMessage(transition, address: address)
        for watcher in watchers { watcher.offer(message) }
    }

    /// Ends every watcher for `why`; later ones are refused.
    func endAll(_ why: Watcher.EndReason) {
        let watchers = state.withLock { state in
            state.closed = why
            return Array(state.watchers.values)
        }
        for watcher in watchers { watcher.end(why) }
    }
}
