#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Hands the memory of a burst of effects back to the system once the burst is over.
///
/// Every effect runs in a task of its own, about 1.5 KB from the C allocator. After a burst
/// of 100,000 effects, all of that is freed, but glibc keeps it: the Swift runtime's executor
/// allocates a small record per job it schedules (libdispatch's continuations) and keeps some
/// cached per thread (about 1,800 of 64 bytes after a burst, in all), scattered through the
/// memory the burst used, and glibc gives memory back to the system only above the last
/// block in use. So the resident set stays at the burst's peak (155 MB for 100,000 effects,
/// against 18 MB before it), and with several threads, each with its own allocator arena, it
/// can climb to the worst bursts several times over. Only `malloc_trim` returns such memory.
///
/// The effect runtime counts the effects' tasks it creates in the whole process. Once
/// ``Configuration/minimumBurst`` of them were created since the last look, this reclaimer's
/// thread waits for the burst to end: a ``Configuration/settleDelay`` in which fewer than a
/// sixteenth of that many effects started, with no more than that many in flight (while few
/// start but many are still in flight, it looks again after twice as long each time, up to
/// 10 s). Then it calls `malloc_trim(0)`, and once
/// more ten delays later for the tasks whose last references their callers held a little
/// longer, unless a new burst began. A trim after 100,000 effects takes 10–50 ms, on the
/// reclaimer's own thread, never on the concurrency pool's threads nor on a machine's actor;
/// after a steady trickle it finds little to do. On a C library without `malloc_trim` (musl,
/// Darwin) nothing is trimmed.
///
/// ```swift
/// // Look after every 50,000 effects, and wait half a second for a burst to settle:
/// EffectMemoryReclaimer.shared.configuration = .init(minimumBurst: 50_000, settleDelay: .milliseconds(500))
/// ```
public final class EffectMemoryReclaimer: @unchecked Sendable {
    /// When the reclaimer hands memory back.
    public struct Configuration: Sendable, Equatable {
        /// Whether memory is handed back at all.
        public var isEnabled: Bool
        /// How many effects make a burst worth a look; 16 to 1,000,000,000.
        public var minimumBurst: Int
        /// How long the effects must have been quiet before a trim; 1 ms to 1 hour. The second
        /// trim is ten of these later.
        public var settleDelay: Duration

        /// Creates a configuration; values out of range are clamped to the documented limits.
        ///
        /// - Parameters:
        ///   - isEnabled: Whether memory is handed back at all.
        ///   - minimumBurst: How many effects make a burst; 10,000 by default (about 15 MB of
        ///     tasks).
        ///   - settleDelay: How long the effects must have been quiet; 100 ms by default.
        public init(isEnabled: Bool = true, minimumBurst: Int = 10_000, settleDelay: Duration = .milliseconds(100)) {
            self.isEnabled = isEnabled
            self.minimumBurst = min(max(minimumBurst, 16), 1_000_000_000)
            self.settleDelay = min(max(settleDelay, .milliseconds(1)), .seconds(3600))
        }
    }

    /// The reclaimer the effect runtime reports to.
    public static let shared = EffectMemoryReclaimer()

    /// Effects' tasks created, ever.
    private let created = Atomic<Int>(0)
    /// Effects' tasks not ended.
    private let inFlight = Atomic<Int>(0)
    /// The value of `created` that arms the reclaimer; `Int.max` while it is armed or disabled.
    private let armsAt: Atomic<Int>
    private let trims = Atomic<Int>(0)
    /// How many times the thread looked whether a burst was over (for tests).
    private let looks = Atomic<Int>(0)
    private let condition = MonotonicCondition()
    /// Guarded by `condition`'s lock.
    private var settings: Configuration
    /// Guarded by `condition`'s lock.
    private var armed = false
    /// Guarded by `condition`'s lock.
    private var threadStarted = false
    private let trim: @Sendable () -> Void

    /// Creates a reclaimer that calls `trim` to hand memory back (by default `malloc_trim(0)`
    /// where the C library has it); the runtime uses ``shared``.
    init(configuration: Configuration = Configuration(), trim: @escaping @Sendable () -> Void = EffectMemoryReclaimer.trimCHeap) {
        settings = configuration
        armsAt = Atomic(configuration.isEnabled ? configuration.minimumBurst : .max)
        self.trim = trim
    }

    /// When memory is handed back; a change counts the next burst from now.
    public var configuration: Configuration {
        get { condition.withLock { settings } }
        set {
            condition.withLock {
                settings = newValue
                if !armed { armsAt.store(nextArming(), ordering: .relaxed) }
            }
        }
    }

    /// How many times memory was handed back since the process started.
    public var trimCount: Int { trims.load(ordering: .relaxed) }

    /// The effects' tasks created since the process started (for tests).
    var effectsCreated: Int { created.load(ordering: .relaxed) }

    /// How many times the reclaimer looked whether a burst was over (for tests).
    var lookCount: Int { looks.load(ordering: .relaxed) }

    /// Whether a burst's end is awaited (for tests).
    var isArmed: Bool { condition.withLock { armed } }

    /// The effects' tasks not yet ended, in the whole process.
    public var effectsInFlight: Int { inFlight.load(ordering: .relaxed) }

    // MARK: What the runtime reports

    /// An effect's task was created.
    func effectBegan() {
        inFlight.add(1, ordering: .relaxed)
        let count = created.add(1, ordering: .relaxed).newValue
        guard count >= armsAt.load(ordering: .relaxed) else { return }
        let start = condition.withLock { () -> Bool in
            guard !armed, settings.isEnabled else { return false }
            armed = true
            armsAt.store(.max, ordering: .relaxed)
            defer { threadStarted = true }
            if threadStarted { condition.signal() }
            return !threadStarted
        }
        if start { MonotonicCondition.startThread(for: self) { $0.runThread() } }
    }

    /// An effect's task ended.
    func effectEnded() {
        inFlight.subtract(1, ordering: .relaxed)
    }

    // MARK: The thread

    /// Waits to be armed, then for the burst to end; trims twice, and waits for the next burst.
    private func runThread() {
        condition.lock()
        while true {
            while !armed { condition.wait(until: nil) }
            let delay = MonotonicCondition.nanoseconds(roundingUp: settings.settleDelay)
            var window = delay
            while true {
                switch quietness(after: window) {
                case .quiet: break
                case .starting: window = delay; continue
                case .running: window = min(window &* 2, 10_000_000_000); continue
                }
                break
            }
            handBack()
            if quietness(after: delay &* 10) == .quiet { handBack() }
            armed = false
            armsAt.store(nextArming(), ordering: .relaxed)
        }
    }

    /// What the effects did during a wait.
    private enum Quietness {
        /// Few started, few are in flight: the burst is over.
        case quiet
        /// Many started: the burst goes on; look again after a settle delay.
        case starting
        /// Few started, but many are still in flight: look again later and later.
        case running
    }

    /// Waits `nanoseconds` (holding the lock but while waiting), and tells what the effects
    /// did meanwhile.
    private func quietness(after nanoseconds: UInt64) -> Quietness {
        let before = created.load(ordering: .relaxed)
        let deadline = MonotonicCondition.now() &+ nanoseconds
        while MonotonicCondition.now() < deadline { condition.wait(until: deadline) }
        looks.add(1, ordering: .relaxed)
        let few = max(settings.minimumBurst / 16, 1)
        if created.load(ordering: .relaxed) - before >= few { return .starting }
        return inFlight.load(ordering: .relaxed) <= few ? .quiet : .running
    }

    /// Trims, outside the lock.
    private func handBack() {
        guard settings.isEnabled else { return }
        condition.unlock()
        trim()
        trims.add(1, ordering: .relaxed)
        condition.lock()
    }

    /// The count of created effects that arms the reclaimer next; call holding the lock.
    private func nextArming() -> Int {
        settings.isEnabled ? created.load(ordering: .relaxed) &+ settings.minimumBurst : .max
    }

    /// `malloc_trim(0)` where the C library has it (glibc); nothing elsewhere.
    public static let trimCHeap: @Sendable () -> Void = {
        #if canImport(Glibc)
        typealias Trim = @convention(c) (Int) -> Int32
        // Looked up, not linked: glibc's malloc.h is not in Swift's Glibc module.
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") {
            let trim = unsafeBitCast(symbol, to: Trim.self)
            return { _ = trim(0) }
        }
        #endif
        return {}
    }()
}
