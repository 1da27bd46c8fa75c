#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where effects' sleeps on a real clock wait: one timer thread for the process, and an
/// ``EffectTimerQueue`` of the sleeping tasks' continuations.
///
/// `Task.sleep` (and so `ContinuousClock.sleep`) arms a timer job that lives until its deadline
/// even when its task is cancelled: on Linux about 800 bytes per cancelled sleep, held for as
/// long as the sleep would have lasted. 100,000 effects cancelled in one-hour sleeps kept 74 MB
/// that way (78.5 MiB for bare tasks, in the `sleep-cancelled` benchmark). Here a cancelled sleep's continuation is resumed and dropped in its task's
/// cancellation handler, so its memory goes when it is cancelled.
///
/// The thread is started at the first sleep, waits on a condition variable (`CLOCK_MONOTONIC`)
/// for the earliest deadline and resumes the sleeps that are due; it holds no task.
final class EffectTimers: @unchecked Sendable {
    /// The process's timers.
    static let shared = EffectTimers()

    private typealias Queue = EffectTimerQueue<UnsafeContinuation<Void, Error>>

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    /// Guarded by `mutex`.
    private var queue = Queue()
    /// Guarded by `mutex`.
    private var threadStarted = false

    /// Creates timers with their own thread; the effect runtime uses ``shared``.
    init() {
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

    /// How many sleeps are waiting.
    var count: Int { withLock { $0.count } }

    /// How many sleeps the tables have room for (for tests of the idle footprint).
    var capacity: Int { withLock { $0.capacity } }

    /// Sleeps for `duration` of real time; throws `CancellationError` at once when the task is
    /// cancelled, before or during the sleep.
    func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        guard duration > .zero else { return }
        let deadline = Self.monotonicNow() &+ Self.nanoseconds(roundingUp: duration)
        let id = withLock { $0.reserve() }
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, Error>) in
                let (cancelled, isEarliest) = withLock { queue in
                    queue.arm(id, deadline: deadline, waiter: continuation)
                }
                if let cancelled {
                    cancelled.resume(throwing: CancellationError())
                } else if isEarliest {
                    wake()
                }
            }
        } onCancel: {
            withLock { $0.cancel(id) }?.resume(throwing: CancellationError())
        }
    }

    // MARK: The thread

    /// Starts the thread if it is not running, or wakes it to wait for an earlier deadline.
    private func wake() {
        let start = withLock { _ -> Bool in
            defer { threadStarted = true }
            return !threadStarted
        }
        if start {
            var thread = pthread_t()
            let result = pthread_create(&thread, nil, { argument in
                Unmanaged<EffectTimers>.fromOpaque(argument!).takeUnretainedValue().runThread()
                return nil
            }, Unmanaged.passRetained(self).toOpaque())  // the thread keeps its timers alive
            precondition(result == 0, "cannot start the effect timer thread (error \(result))")
            pthread_detach(thread)
        } else {
            pthread_mutex_lock(mutex)
            pthread_cond_signal(condition)
            pthread_mutex_unlock(mutex)
        }
    }

    /// The timer thread: resumes due sleeps, then waits for the next deadline or a wake-up.
    private func runThread() {
        pthread_mutex_lock(mutex)
        while true {
            let due = queue.popDue(now: Self.monotonicNow())
            if !due.isEmpty {
                pthread_mutex_unlock(mutex)
                for continuation in due { continuation.resume() }
                pthread_mutex_lock(mutex)
                continue
            }
            if let deadline = queue.nextDeadline {
                var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
                pthread_cond_timedwait(condition, mutex, &time)
            } else {
                pthread_cond_wait(condition, mutex)
            }
        }
    }

    private func withLock<Result>(_ body: (inout Queue) -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body(&queue)
    }

    // MARK: Time

    /// Nanoseconds on `CLOCK_MONOTONIC`, the clock the condition variable waits on.
    private static func monotonicNow() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// A positive duration in nanoseconds, rounded up, so a sleep never ends early.
    private static func nanoseconds(roundingUp duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        let (nanoseconds, rest) = attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        let total = UInt64(clamping: seconds).multipliedReportingOverflow(by: 1_000_000_000)
        guard !total.overflow else { return .max / 2 }
        return total.partialValue &+ UInt64(nanoseconds) &+ (rest > 0 ? 1 : 0)
    }
}

/// A real clock (`ContinuousClock` or `SuspendingClock`) whose sleeps wait in ``EffectTimers``,
/// so that a cancelled sleep frees its memory at once. It tells the time of `base`; it is what
/// effects see as `context.clock` when the manager was given a real clock.
///
/// The timer thread waits on `CLOCK_MONOTONIC`: a sleep on a `ContinuousClock` that spans a
/// system suspension ends that much later than `ContinuousClock.sleep` would.
struct EffectTimerClock<Base: Clock>: Clock where Base.Duration == Duration {
    let base: Base

    var now: Base.Instant { base.now }

    var minimumResolution: Duration { base.minimumResolution }

    func sleep(until deadline: Base.Instant, tolerance: Duration?) async throws {
        // `base` first: the monotonic time read after it can only push the deadline later.
        try await EffectTimers.shared.sleep(for: base.now.duration(to: deadline))
    }
}
