import ActomatonService
import Logging
import PostgresNIO
import Synchronization

/// Wakes watchers of instances other hosts own when those hosts commit transitions: one
/// connection per host LISTENs on `actomaton_transitions`, to which every commit of a
/// ``PostgresJournalStore`` NOTIFYs the names it wrote (delivered when it commits). The journal
/// stays the truth: a watcher reads it again after every notification and, should one be lost
/// (the connection broke), when its wait times out. A broken connection is made again, one
/// second apart.
public final class JournalNotifications: JournalChangeSignal, Sendable {
    /// The channel commits notify.
    static let channel = "actomaton_transitions"

    private struct Waiters {
        var next = 0
        var byName: [String: [Int: CheckedContinuation<Void, Never>]] = [:]
    }

    private let waiters = Mutex(Waiters())
    private let listener = Mutex<Task<Void, Never>?>(nil)

    /// Starts listening on the database at `address`.
    public init(address: PostgresAddress) {
        let task = Task.detached { [weak self] in
            var logger = Logger(label: "actomaton-cluster")
            logger.logLevel = .critical
            while !Task.isCancelled {
                var configuration = PostgresConnection.Configuration(
                    host: address.host, port: address.port, username: address.user, password: address.password,
                    database: address.database, tls: .disable)
                configuration.options.additionalStartupParameters = [("application_name", "actomaton-host listen")]
                do {
                    let connection = try await PostgresConnection.connect(configuration: configuration, id: 2, logger: logger)
                    defer { Task { try? await connection.close() } }
                    try await connection.listen(on: Self.channel) { notifications in
                        for try await notification in notifications {
                            guard let self else { return }
                            self.wake(notification.payload)
                        }
                    }
                } catch {
                    // Watchers poll meanwhile.
                }
                guard self != nil else { return }
                try? await Task.sleep(for: .seconds(1))
            }
        }
        listener.withLock { $0 = task }
    }

    deinit {
        listener.withLock { $0?.cancel() }
    }

    /// Stops listening.
    public func stop() {
        listener.withLock { $0?.cancel() }
    }

    /// Returns when `name` was notified, after `timeout`, or when the task is cancelled.
    public func waitForChange(of name: String, timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.notified(name) }
            await group.next()
            group.cancelAll()
        }
    }

    private func notified(_ name: String) async {
        let id = waiters.withLock { waiters in
            defer { waiters.next += 1 }
            return waiters.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = waiters.withLock { waiters -> Bool in
                    if Task.isCancelled { return true }
                    waiters.byName[name, default: [:]][id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = waiters.withLock { waiters -> CheckedContinuation<Void, Never>? in
                let continuation = waiters.byName[name]?.removeValue(forKey: id)
                if waiters.byName[name]?.isEmpty == true { waiters.byName[name] = nil }
                return continuation
            }
            continuation?.resume()
        }
    }

    /// Resumes every waiter (the service is shutting down).
    public func wakeAll() {
        let woken = waiters.withLock { waiters in
            defer { waiters.byName = [:] }
            return waiters.byName.values.flatMap(\.values)
        }
        for continuation in woken { continuation.resume() }
    }

    /// Resumes every waiter of `name`.
    func wake(_ name: String) {
        let woken = waiters.withLock { $0.byName.removeValue(forKey: name) } ?? [:]
        for continuation in woken.values { continuation.resume() }
    }
}
