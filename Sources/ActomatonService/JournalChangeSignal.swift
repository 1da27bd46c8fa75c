/// In a cluster, wakes the watchers a host serves for instances other hosts own: the journal is
/// the truth, and this signal says when to read it again (`ActomatonCluster`'s
/// `JournalNotifications`, on PostgreSQL's LISTEN/NOTIFY). A lost signal costs at most the
/// poll interval: the watcher reads the journal again when the wait times out.
public protocol JournalChangeSignal: Sendable {
    /// Returns when the instance journaled as `name` may have new transitions, or after
    /// `timeout`, or when the task is cancelled.
    func waitForChange(of name: String, timeout: Duration) async

    /// Wakes every waiter at once (the service is shutting down).
    func wakeAll()
}
