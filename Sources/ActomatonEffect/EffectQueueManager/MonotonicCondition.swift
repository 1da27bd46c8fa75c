#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A pthread mutex and condition variable whose timed waits are on `CLOCK_MONOTONIC`, for the
/// threads that wait for a deadline or a wake-up and hold no task: the effect runtime's own
/// (``EffectTimers``, ``EffectMemoryReclaimer``) and the host's journal writer. The one place
/// the package waits on a condition variable.
package final class MonotonicCondition: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        #if canImport(Darwin)
        pthread_cond_init(condition, nil)
        #else
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        #endif
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deinitialize(count: 1)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }

    package func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` holding the lock. `body` must not lock it again.
    package func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Wakes the thread waiting, if any. Call holding the lock, or just after a change made
    /// holding it.
    package func signal() { pthread_cond_signal(condition) }

    /// Wakes every thread waiting. Call holding the lock, or just after a change made holding it.
    package func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits for a signal, or until `deadline` (nanoseconds on ``now()``) when there is one;
    /// call holding the lock. May return early: the caller checks what it waits for again.
    package func wait(until deadline: UInt64?) {
        if let deadline {
            var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            pthread_cond_timedwait(condition, mutex, &time)
        } else {
            pthread_cond_wait(condition, mutex)
        }
    }

    /// Nanoseconds on `CLOCK_MONOTONIC`, the clock the timed waits are on.
    package static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// A positive duration in nanoseconds, rounded up, so a wait never ends early; huge ones
    /// are capped far in the future.
    static func nanoseconds(roundingUp duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (nanoseconds, rest) = attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        let total = UInt64(clamping: seconds).multipliedReportingOverflow(by: 1_000_000_000)
        guard !total.overflow else { return .max / 2 }
        return total.partialValue &+ UInt64(nanoseconds) &+ (rest > 0 ? 1 : 0)
    }

    /// Starts a detached thread that runs `body` with `owner`, which the thread keeps alive.
    static func startThread<Owner: AnyObject>(for owner: Owner, _ body: @escaping (Owner) -> Void) {
        let start = ThreadStart { body(owner) }
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { argument in
            Unmanaged<ThreadStart>.fromOpaque(argument!).takeRetainedValue().run()
            return nil
        }, Unmanaged.passRetained(start).toOpaque())
        precondition(result == 0, "cannot start a thread of the effect runtime (error \(result))")
        pthread_detach(thread)
    }
}

/// What a thread started by ``MonotonicCondition/startThread(for:_:)`` runs.
private final class ThreadStart {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}
