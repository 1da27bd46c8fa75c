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

    private let condition = MonotonicCondition()
    /// Guarded by `condition`'s lock.
    private var queue = Queue()
    /// Guarded by `condition`'s lock.
    private var threadStarted = false

    /// Creates timers with their own thread; the effect runtime uses ``shared``.
    init() {}

    /// How many sleeps are waiting.
    var count: Int { withLock { $0.count } }

    /// How many sleeps the tables have room for (for tests of the idle footprint).
    var capacity: Int { withLock { $0.capacity } }

    /// Sleeps for `duration` of real time; throws `CancellationError` at once when the task is
    /// cancelled, before or during the sleep.
    func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        guard duration > .zero else { return }
        let deadline = MonotonicCondition.now() &+ MonotonicCondition.nanoseconds(roundingUp: duration)
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
        let start = condition.withLock { () -> Bool in
            defer { threadStarted = true }
            if threadStarted { condition.signal() }
            return !threadStarted
        }
        if start { MonotonicCondition.startThread(for: self) { $0.runThread() } }
    }

    /// The timer thread: resumes due sleeps, then waits for the next deadline or a wake-up.
    private func runThread() {
        condition.lock()
        while true {
            let due = queue.popDue(now: MonotonicCondition.now())
            if !due.isEmpty {
                condition.unlock()
                for continuation in due { continuation.resume() }
                condition.lock()
                continue
            }
            condition.wait(until: queue.nextDeadline)
        }
    }

    private func withLock<Result>(_ body: (inout Queue) -> Result) -> Result {
        condition.withLock { body(&queue) }
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
