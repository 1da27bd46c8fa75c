import Synchronization

/// The most actions per second that delayed and repeating effects may send, all the machines
/// that share it together (a service's `--max-timer-actions-per-second`), in bursts of up to a
/// second's worth.
///
/// A repeating action sends actions without a request: one client could start a 1-ms ticker
/// on each of a few hundred instances, a hundred thousand actions a second, and the host spent
/// both cores on them (and sent every tick a busy machine missed at once): requests waited
/// seconds each, and a shutdown did not end. Paced, a
/// timer whose action has no slot yet waits for one (first come, first served), and a
/// repeating one skips the ticks it missed meanwhile rather than sending them in a burst.
///
/// Slots are kept as in the generic cell rate algorithm: each action takes the next one,
/// `1 s / perSecond` after the one before, and may go up to a second ahead of it.
public final class EffectActionPace: Sendable {
    /// The most actions a second, in bursts of as many.
    public let perSecond: Int
    private let spacing: Duration
    private let tolerance: Duration
    /// The slot the next action takes (the theoretical arrival time).
    private let nextSlot: Mutex<ContinuousClock.Instant>

    /// A pace of `perSecond` actions a second (at least 1).
    public init(perSecond: Int) {
        self.perSecond = max(perSecond, 1)
        spacing = .seconds(1) / self.perSecond
        tolerance = .seconds(1) - spacing
        nextSlot = Mutex(.now)
    }

    /// The default of a service: 10,000 actions a second, a third of what the service
    /// applies in memory on two cores, so requests keep the rest.
    public static let defaultPerSecond = 10_000

    /// How long an action sent now waits for its slot; the slot is taken.
    func delay(now: ContinuousClock.Instant = .now) -> Duration {
        nextSlot.withLock { slot in
            let start = max(slot, now)
            slot = start + spacing
            let allowed = start - tolerance
            return allowed > now ? allowed - now : .zero
        }
    }

    /// Waits for an action's slot; throws `CancellationError` when the task is cancelled first.
    func waitForSlot() async throws {
        let wait = delay()
        if wait > .zero { try await Task.sleep(for: wait) }
    }
}
