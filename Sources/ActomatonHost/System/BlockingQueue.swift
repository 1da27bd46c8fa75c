import CProcessControl
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
    /// - Parameter name: The thread's name; cut to ``maxNameBytes`` bytes (at a character boundary).
    package init(name: String) throws(Errno) {
        self.name = String(name.prefix(utf8Bytes: Self.maxNameBytes))
        storage = Storage(name: self.name)
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
        private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        // Guarded by `mutex`:
        private var items: [@Sendable () -> Void] = []
        private var head = 0
        private var closing = false

        init(name: String) {
            self.name = name
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
            pthread_cond_signal(wake)
            return true
        }

        /// Marks the queue closing; `true` for the first call only.
        func close() -> Bool {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            guard !closing else { return false }
            closing = true
            pthread_cond_signal(wake)
            return true
        }

        /// The thread: runs the work in order until the queue is closed and empty.
        func serve() {
            _ = actomaton_set_thread_name(name)
            pthread_mutex_lock(mutex)
            while true {
                while head == items.count && !closing { pthread_cond_wait(wake, mutex) }
                if head == items.count { break }
                var work: (@Sendable () -> Void)? = items[head]
                items[head] = {} // what the work captured is released when it has run
                head += 1
                if head == items.count {
                    items.removeAll(keepingCapacity: true)
                    head = 0
                }
                pthread_mutex_unlock(mutex)
                work?()
                // Released before the lock is taken again: the work may hold the last
                // reference to its queue, whose `deinit` closes it (and takes the lock).
                work = nil
                pthread_mutex_lock(mutex)
            }
            pthread_mutex_unlock(mutex)
        }
    }
}
