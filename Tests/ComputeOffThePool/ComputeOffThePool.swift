import Dispatch

/// Runs a test's long computation on a thread outside the concurrency pool, in the test's own
/// task: its `#expect`s still belong to the test.
///
/// The pool has one thread per core, and tests run in parallel on it. A test that computes
/// for minutes without a suspension point (compiling a chart of 4,096 states in a debug build)
/// holds a thread the whole time; two of them held both threads of a 2-core machine, and every
/// test waiting on an event — a server of this process answering, a timer — waited too, past
/// its deadline. Here the computation runs on a serial dispatch queue, whose thread the system
/// schedules beside the pool's. One queue for every test, so one computation at a time: a
/// dozen at once, each on a thread of its own, left the pool's thread a dozenth of a core.
///
/// - Parameter body: The computation; the test's task runs it, on the queue's thread.
/// - Returns: What `body` returns.
package func computeOffThePool<Value>(_ body: () async throws -> Value) async rethrows -> Value {
    try await withTaskExecutorPreference(ComputingThread.shared) {
        try await body()
    }
}

/// A task executor with a serial dispatch queue: a thread outside the cooperative pool, for as
/// long as the queue has work.
private final class ComputingThread: TaskExecutor {
    static let shared = ComputingThread()

    private let queue = DispatchQueue(label: "actomaton.tests.computing")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
