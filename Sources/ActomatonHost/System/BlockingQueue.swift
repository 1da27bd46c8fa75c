import CProcessControl
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A first-in, first-out queue of work served by one dedicated thread of its own: the place for
/// blocking work (a commit to disk, a round trip to a worker process) that must never run on the
/// concurrency pool's threads.
///
/// Work runs in the order it was enqueued, one item at a time, on the queue's thread (named
/// ``name``, which `top -H` and debuggers show). ``close()`` refuses new work, lets the queued
/// work finish, and joins the thread; after it, ``enqueue(_:)`` throws ``Closed``. Dropping the
/// last reference closes the queue the same way.
///
/// With `pollsBeforeSleeping`, the thread polls for new work for that long after its queue
/// empties before it sleeps: waking a sleeping thread costs tens of microseconds on small
/// machines, more than the work itself when it comes in quick succession (a machine's jobs
/// around a worker's round trip).
///
/// ```swift
/// let queue = try BlockingQueue(name: "journal")
/// try queue.enqueue { commit(batch) }
/// queue.close() // returns once `commit` has run and the thread has ended
/// ```
package final class BlockingQueue: @unchecked Sendable {
    /// The longest thread name Linux keeps, in bytes (`PR_SET_NAME`); a longer name is cut.
    package static let maxNameBytes = 15

    /// The thread's name, at most ``maxNameBytes`` bytes.
    package let name: String

    /// ``enqueue(_:)`` after ``close()``: the work was not queued and will not run.
    package struct Closed: Error, Hashable, CustomStringConvertible {
        /// The queue's name.
        package let name: String
        /// One line.
        package var description: String { "the blocking queue '\(name)' is closed: no more work is accepted" }
    }

    private let storage: Storage
    private let thread: pthread_t

    /// Starts the queue's thread; throws when the system cannot start one.
    ///
    /// - Parameters:
    ///   - name: The thread's name; cut to ``maxNameBytes`` bytes (at a character boundary).
    ///   - pollsBeforeSleeping: How long the thread polls for new work before it sleeps.
    package init(name: String, pollsBeforeSleeping: Duration = .zero) throws(Errno) {
        var cut = Substring(name)
        while cut.utf8.count > Self.maxNameBytes { cut.removeLast() }
        self.name = String(cut)
        storage = Storage(name: self.name, pollsBeforeSleeping: pollsBeforeSleeping)
        let context = Unmanaged.passRetained(storage).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { context in
            let storage = Unmanaged<Storage>.fromOpaque(context!).takeRetainedValue()
            storage.serve()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<Storage>.fromOpaque(context).release()
            throw Errno(status)
        }
        self.thread = thread
    }

    deinit {
        close()
    }

    /// Queues `work` to run after everything queued before it; throws ``Closed`` after ``close()``.
    package func enqueue(_ work: @Sendable @escaping () -> Void) throws(Closed) {
        guard storage.enqueue(work) else { throw Closed(name: name) }
    }

    /// Whether the caller runs on this queue's thread.
    package var isCurrent: Bool {
        pthread_equal(pthread_self(), thread) != 0
    }

    /// Refuses new work, waits for the queued work to finish, and joins the thread. Idempotent.
    /// Called from the queue's own thread (by its work), it only refuses new work: the thread
    /// ends after the queued work, on its own.
    package func close() {
        guard storage.close() else { return }
        if isCurrent {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
    }

    /// The queue's state, shared with its thread (which holds it until it ends).
    private final class Storage: @unchecked Sendable {
        let name: String
        let pollsBeforeSleeping: Duration
        /// Work queued and not yet taken, read without the lock while the thread polls.
        private let queued = Atomic<Int>(0)
        private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        // Guarded by `mutex`:
        private var items: [@Sendable () -> Void] = []
        private var head = 0
        private var closing = false
        private var isSleeping = false

        init(name: String, pollsBeforeSleeping: Duration) {
            self.name = name
            self.pollsBeforeSleeping = pollsBeforeSleeping
            pthread_mutex_init(mutex, nil)
            pthread_cond_init(wake, nil)
        }

        deinit {
            pthread_cond_destroy(wake)
            pthread_mutex_destroy(mutex)
            mutex.deallocate()
            wake.deallocate()
        }

        /// Queues `work`; `false` once closing.
        func enqueue(_ work: @escaping @Sendable () -> Void) -> Bool {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            guard !closing else { return false }
            items.append(work)
            queued.add(1, ordering: .releasing)
            if isSleeping { pthread_cond_signal(wake) }
            return true
        }

        /// Marks the queue closing; `true` for the first call only.
        func close() -> Bool {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            guard !closing else { return false }
            closing = true
            queued.add(1, ordering: .releasing) // ends a poll
            pthread_cond_signal(wake)
            return true
        }

        /// The thread: runs the work in order until the queue is closed and empty.
        func serve() {
            _ = actomaton_set_thread_name(name)
            pthread_mutex_lock(mutex)
            while true {
                if head == items.count && !closing && pollsBeforeSleeping > .zero {
                    pthread_mutex_unlock(mutex)
                    let until = ContinuousClock.now + pollsBeforeSleeping
                    while queued.load(ordering: .acquiring) == 0 && ContinuousClock.now < until {}
                    pthread_mutex_lock(mutex)
                }
                while head == items.count && !closing {
                    isSleeping = true
                    pthread_cond_wait(wake, mutex)
                    isSleeping = false
                }
                if head == items.count { break }
                queued.subtract(1, ordering: .relaxed)
                let work = items[head]
                items[head] = {} // what the work captured is released when it has run
                head += 1
                if head == items.count {
                    items.removeAll(keepingCapacity: true)
                    head = 0
                }
                pthread_mutex_unlock(mutex)
                work()
                pthread_mutex_lock(mutex)
            }
            pthread_mutex_unlock(mutex)
        }
    }
}
