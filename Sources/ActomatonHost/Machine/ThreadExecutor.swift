import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A serial executor with a thread of its own: the jobs of an actor that uses it run there,
/// one at a time, in order, never on the concurrency pool's threads. A ``PluginMachine``
/// whose runtime blocks (a worker process: each call waits on a socket, up to the action
/// deadline) runs on one, so a hung plugin holds its own thread only, and every other machine,
/// timer and input loop keeps the pool.
///
/// Like the worker channel (``WorkerChannel/spinWindow``), the thread polls for a next job for
/// a moment before it sleeps: waking a sleeping thread costs tens of microseconds on small
/// machines, more than a worker's round trip. The thread ends when ``shutDown()`` is called
/// and the jobs queued before it have run.
final class ThreadExecutor: SerialExecutor, @unchecked Sendable {
    /// Guarded by `mutex`.
    private var jobs: [UnownedJob] = []
    private var isShutDown = false
    private var isSleeping = false
    /// How many jobs are queued, read without the lock while the thread polls.
    private let queued = Atomic<Int>(0)
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let wake: UnsafeMutablePointer<pthread_cond_t>

    /// Starts the thread.
    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        wake = .allocate(capacity: 1)
        wake.initialize(to: pthread_cond_t())
        pthread_cond_init(wake, nil)
        let box = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { argument in
            let executor = Unmanaged<ThreadExecutor>.fromOpaque(argument!).takeRetainedValue()
            executor.serve()
            return nil
        }, box)
        precondition(started == 0, "cannot start a thread for a plugin machine (\(started))")
        pthread_detach(thread)
    }

    deinit {
        pthread_cond_destroy(wake)
        pthread_mutex_destroy(mutex)
        wake.deallocate()
        mutex.deallocate()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pthread_mutex_lock(mutex)
        jobs.append(job)
        queued.add(1, ordering: .releasing)
        if isSleeping { pthread_cond_signal(wake) }
        pthread_mutex_unlock(mutex)
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Lets the thread end once the jobs queued so far have run: for the actor's `deinit`,
    /// after which no job can come.
    func shutDown() {
        pthread_mutex_lock(mutex)
        isShutDown = true
        queued.add(1, ordering: .releasing)
        pthread_cond_signal(wake)
        pthread_mutex_unlock(mutex)
    }

    private func serve() {
        var batch: [UnownedJob] = []
        while true {
            let spinUntil = ContinuousClock.now + WorkerChannel.spinWindow
            while queued.load(ordering: .acquiring) == 0 && ContinuousClock.now < spinUntil {}
            pthread_mutex_lock(mutex)
            while true {
                if !jobs.isEmpty {
                    swap(&batch, &jobs)
                    queued.subtract(batch.count, ordering: .relaxed)
                    break
                }
                if isShutDown {
                    pthread_mutex_unlock(mutex)
                    return
                }
                isSleeping = true
                pthread_cond_wait(wake, mutex)
                isSleeping = false
            }
            pthread_mutex_unlock(mutex)
            for job in batch { job.runSynchronously(on: asUnownedSerialExecutor()) }
            batch.removeAll(keepingCapacity: true)
        }
    }
}

/// Runs `body` on a thread of its own and returns what it returns: for a rare call that can
/// block for long — starting a worker process and waiting for its hello — which must not hold
/// a thread of the concurrency pool meanwhile.
func onThreadOfItsOwn<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    let result: Result<T, E> = await withCheckedContinuation { continuation in
        let work = Unmanaged.passRetained(ThreadWork { continuation.resume(returning: Result { () throws(E) in try body() }) })
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { argument in
            Unmanaged<ThreadWork>.fromOpaque(argument!).takeRetainedValue().run()
            return nil
        }, work.toOpaque())
        if started == 0 {
            pthread_detach(thread)
        } else {
            work.takeRetainedValue().run() // no thread to be had: run here rather than fail
        }
    }
    return try result.get()
}

/// What a thread of ``onThreadOfItsOwn(_:)`` runs.
private final class ThreadWork {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}
