import Synchronization

/// The watchers of the whole service, at most ``limit`` at a time (`--max-watchers`): a watcher
/// holds its connection for as long as it watches, so without a limit of their own watchers
/// could take every connection `--max-connections` allows, and leave none for requests and
/// health checks.
final class WatcherBudget: Sendable {
    /// The most watchers at a time.
    let limit: Int
    private let count = Mutex(0)

    init(limit: Int) {
        self.limit = max(limit, 0)
    }

    /// How many watchers there are.
    var current: Int { count.withLock { $0 } }

    /// Whether another watcher may start now (the check before a WebSocket upgrade).
    var hasRoom: Bool { current < limit }

    /// Counts a watcher in; `false`, counting nothing, at the limit.
    func take() -> Bool {
        count.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    /// Counts out a watcher ``take()`` counted in.
    func giveBack() {
        count.withLock { $0 = max($0 - 1, 0) }
    }

    /// The refusal past the limit: 429.
    var refusal: ServiceError {
        .overLimit("the service already has \(limit) watchers, its limit (--max-watchers)")
    }
}
