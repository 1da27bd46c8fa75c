
/// A serial executor with a thread of its own (a ``BlockingQueue``): the jobs of the actors
/// that use it run there, one at a time, in order, never on the concurrency pool's threads. A
/// ``PluginMachine`` whose runtime blocks (a worker process: each call waits on a socket, up
/// to the action deadline) runs on one of its own, so a hung plugin holds its own thread only,
/// and every other machine, timer and input loop keeps the pool; the machines of a sandboxed
/// plugin share a few (``SandboxThreads``).
///
/// The thread sleeps as soon as it has no job: polling for the next one, as the worker channel
/// does, was measured slower on 2 cores (a third spinning thread beside the caller and the
/// worker). It ends when ``shutDown()`` is called and the jobs queued before it have run.
///
/// It is also a task executor: a task that prefers it (`withTaskExecutorPreference`) runs on
/// the same thread, so its sends to the machine and their answers need no thread to be woken.
final class ThreadExecutor: SerialExecutor, TaskExecutor, @unchecked Sendable {
    private let queue: BlockingQueue

    /// Starts the thread, named `name`; throws when the system cannot start one.
    init(name: String = "plugin machine") throws(Errno) {
        queue = try BlockingQueue(name: name)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        do {
            try queue.enqueue { job.runSynchronously(on: executor) }
        } catch {
            // Only after `shutDown`, which the actor's `deinit` calls, so no job should come
            // then; were one to, it runs on a thread of its own (the queue's `deinit` waits for
            // it) rather than trapping.
            let late = try? BlockingQueue(name: "late machine job")
            try? late?.enqueue { job.runSynchronously(on: executor) }
        }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Sets what the thread reads while the actor has no job (an isolated runtime's log lines
    /// between two calls); see ``BlockingQueue/IdleWatch``.
    func watchWhileIdle(_ watch: BlockingQueue.IdleWatch?) {
        queue.watchWhileIdle(watch)
    }

    /// Lets the thread end once the jobs queued so far have run: for the actor's `deinit`,
    /// after which no job can come.
    func shutDown() {
        queue.close()
    }
}

/// Runs `body` on a thread of its own (started for this one call) and returns what it returns:
/// for a rare call that can block for long — starting a worker process and waiting for its
/// hello, reading the journal while a commit syncs — which must not hold a thread of the
/// concurrency pool meanwhile.
///
/// - Parameter body: The blocking work.
public func onThreadOfItsOwn<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    guard let queue = try? BlockingQueue(name: "blocking call") else {
        return try body() // no thread to be had: run here rather than fail
    }
    defer { queue.close() } // the work has run: the join is at once
    let result: Result<T, E> = await withCheckedContinuation { continuation in
        do {
            try queue.enqueue { continuation.resume(returning: Result { () throws(E) in try body() }) }
        } catch {
            continuation.resume(returning: Result { () throws(E) in try body() })
        }
    }
    return try result.get()
}
