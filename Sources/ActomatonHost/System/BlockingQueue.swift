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

    /// Work the queue's thread does while it has no item: reading a descriptor that may become
    /// readable at any time (a worker's log lines between two requests), on the thread that
    /// owns what is read, between items and never during one.
    package struct IdleWatch: Sendable {
        /// The descriptor the idle thread waits on, beside its queue.
        package let descriptor: Int32
        /// Whether ``handle`` has work without the descriptor becoming readable (what an item
        /// left buffered); asked each time the queue runs dry. Must not block.
        package let isPending: @Sendable () -> Bool
        /// Does a bounded amount of the work without blocking for long; `false` when the
        /// watch is over (the descriptor closed), after which it is not called again.
        package let handle: @Sendable () -> Bool

        /// Makes a watch of `descriptor`.
        package init(descriptor: Int32, isPending: @escaping @Sendable () -> Bool, handle: @escaping @Sendable () -> Bool) {
            self.descriptor = descriptor
            self.isPending = isPending
            self.handle = handle
        }
    }

    /// Sets (or, with `nil`, ends) what the thread watches while it has no item; replaces the
    /// watch before. When the system has no event descriptor to spare, nothing is watched.
    package func watchWhileIdle(_ watch: IdleWatch?) {
        storage.watchWhileIdle(watch)
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
        private var watch: IdleWatch?
        /// Bumped with each new watch: a watch's `false` ends that watch only.
        private var watchGeneration = 0
        /// Wakes the thread from its idle `poll`; made with the first watch.
        private var event: Int32 = -1
        private var pollsWhileIdle = false

        init(name: String) {
            self.name = name
            pthread_mutex_init(mutex, nil)
            pthread_cond_init(wake, nil)
        }

        deinit {
            if event >= 0 { SystemCall.close(event) }
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
            wakeThread()
            return true
        }

        /// Wakes the thread wherever it waits; with the lock held.
        private func wakeThread() {
            if pollsWhileIdle {
                var one: UInt64 = 1
                _ = withUnsafeBytes(of: &one) { try? SystemCall.write(event, $0) }
            } else {
                pthread_cond_signal(wake)
            }
        }

        func watchWhileIdle(_ newWatch: IdleWatch?) {
            var replaced: IdleWatch?
            pthread_mutex_lock(mutex)
            if newWatch != nil, event < 0 {
                let made = actomaton_event_descriptor()
                if made >= 0 { event = made }
            }
            if newWatch == nil || event >= 0 {
                replaced = watch
                watch = newWatch
                watchGeneration += 1
                wakeThread()
            }
            pthread_mutex_unlock(mutex)
            // Released outside the lock: what a watch holds may take long to let go.
            withExtendedLifetime(replaced) {}
        }

        /// Marks the queue closing; `true` for the first call only.
        func close() -> Bool {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            guard !closing else { return false }
            closing = true
            wakeThread()
            return true
        }

        /// The thread: runs the work in order until the queue is closed and empty.
        func serve() {
            _ = actomaton_set_thread_name(name)
            pthread_mutex_lock(mutex)
            while true {
                while head == items.count && !closing && watch == nil { pthread_cond_wait(wake, mutex) }
                if head == items.count {
                    if closing { break }
                    if let watch { waitWhileIdle(watching: watch) }
                    continue
                }
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

        /// With the lock held and no item: does the watch's pending work, or sleeps until an
        /// item comes or its descriptor is readable, then does its work. Returns with the lock
        /// held.
        private func waitWhileIdle(watching current: IdleWatch) {
            let generation = watchGeneration
            pthread_mutex_unlock(mutex)
            var ready = current.isPending()
            if !ready {
                pthread_mutex_lock(mutex)
                let sleeps = head == items.count && !closing && watchGeneration == generation
                if sleeps { pollsWhileIdle = true }
                pthread_mutex_unlock(mutex)
                guard sleeps else {
                    pthread_mutex_lock(mutex)
                    return
                }
                var pollers = (pollfd(fd: event, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: current.descriptor, events: Int16(POLLIN), revents: 0))
                let polled = withUnsafeMutableBytes(of: &pollers) { bytes in
                    try? SystemCall.poll(UnsafeMutableBufferPointer(start: bytes.baseAddress!.assumingMemoryBound(to: pollfd.self), count: 2),
                                         milliseconds: -1)
                }
                pthread_mutex_lock(mutex)
                pollsWhileIdle = false
                pthread_mutex_unlock(mutex)
                if pollers.0.revents != 0 {
                    var count: UInt64 = 0
                    _ = withUnsafeMutableBytes(of: &count) { try? SystemCall.read(event, into: $0) }
                }
                // A failed poll (a descriptor the system cannot wait on) ends the watch rather
                // than spinning on it.
                ready = polled == nil || pollers.1.revents != 0
            }
            pthread_mutex_lock(mutex)
            // An item that came meanwhile goes first; the watch is asked again after it.
            guard ready, head == items.count, watchGeneration == generation else { return }
            pthread_mutex_unlock(mutex)
            let goesOn = current.handle()
            pthread_mutex_lock(mutex)
            if !goesOn, watchGeneration == generation { watch = nil }
        }
    }
}
