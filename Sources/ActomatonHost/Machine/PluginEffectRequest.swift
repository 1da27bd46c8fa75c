import ActomatonEffect
import Synchronization
import ActomatonPluginContract

/// The ID and queue a plugin gave a delayed or repeating action.
public struct PluginEffectOptions: Sendable, Hashable {
    /// A queue's policy (`ACTOMATON_QUEUE_*`).
    public typealias Policy = PluginQueuePolicy

    /// A named queue and its policy.
    public struct Queue: Sendable, Hashable {
        /// The queue's name.
        public var name: String
        /// How many of its effects run at once, and what happens to the rest.
        public var policy: Policy
    }

    /// The effect ID, if any.
    public var id: String?
    /// The queue, if any.
    public var queue: Queue?

    /// No ID, no queue.
    public init(id: String? = nil, queue: Queue? = nil) {
        self.id = id
        self.queue = queue
    }
}

/// An effect a plugin requested through its host table during one action.
public enum PluginEffectRequest: Sendable, Hashable, CustomStringConvertible {
    /// Feed the action back at once, within the same send.
    case next(PluginAction)
    /// Send the action after a delay on the machine's clock.
    case delayed(PluginAction, after: Duration, PluginEffectOptions)
    /// Send the action every interval on the machine's clock, until cancelled.
    case repeating(PluginAction, every: Duration, PluginEffectOptions)
    /// Cancel the effects with this ID.
    case cancel(id: String)

    /// How the CLI prints it: `loginOK after 1s (id login)`.
    public var description: String {
        switch self {
        case let .next(action): "next: \(action)"
        case let .delayed(action, delay, options): "after \(seconds(delay)): \(action)\(describe(options))"
        case let .repeating(action, interval, options): "every \(seconds(interval)): \(action)\(describe(options))"
        case let .cancel(id): "cancel: \(id)"
        }
    }
}

/// A duration as the host prints it: `2s`, `300ms`, `1.5s`; under a microsecond, `5ns` (a
/// nanosecond's period was `every 0ms`).
package func seconds(_ duration: Duration) -> String {
    let (whole, fraction) = duration.components
    if fraction == 0 { return "\(whole)s" }
    if whole == 0, fraction < 1_000_000_000_000 { return "\(fraction / 1_000_000_000)ns" }
    let milliseconds = Double(whole) * 1000 + Double(fraction) / 1e15
    if milliseconds < 1000 { return "\(formatted(milliseconds))ms" }
    return "\(formatted(milliseconds / 1000))s"
}

private func formatted(_ value: Double) -> String {
    let rounded = (value * 1000).rounded() / 1000
    return rounded == rounded.rounded() ? "\(Int(rounded))" : "\(rounded)"
}

private func describe(_ options: PluginEffectOptions) -> String {
    var parts: [String] = []
    if let id = options.id { parts.append("id \(id)") }
    if let queue = options.queue {
        switch queue.policy {
        case let .runNewest(maxCount): parts.append("queue \(queue.name): newest \(maxCount)")
        case let .runOldest(maxCount, discardNew): parts.append("queue \(queue.name): oldest \(maxCount), \(discardNew ? "discard" : "suspend") new")
        }
    }
    return parts.isEmpty ? "" : " (\(parts.joined(separator: ", ")))"
}

/// A plugin's effect ID, scoped to its machine like every ``EffectID``.
struct PluginEffectID: EffectID, CustomStringConvertible {
    let name: String
    var description: String { name }
}

/// A plugin's named queue: effects with the same queue name share a lane, which follows the
/// policy of the latest effect sent to it.
struct PluginEffectQueue: EffectQueue {
    let name: String
    let policy: PluginEffectOptions.Policy

    static func == (lhs: PluginEffectQueue, rhs: PluginEffectQueue) -> Bool { lhs.name == rhs.name }
    func hash(into hasher: inout Hasher) { hasher.combine(name) }

    var effectQueuePolicy: EffectQueuePolicy {
        switch policy {
        case let .runNewest(maxCount): .runNewest(maxCount: maxCount)
        case let .runOldest(maxCount, discardNew): .runOldest(maxCount: maxCount, discardNew ? .discardNew : .suspendNew)
        }
    }
}

/// The actions a repeating effect sends: one per interval on the machine's clock, counted
/// from when the plugin asked (so ticks do not drift, and do not depend on when the effect's
/// task happens to start).
struct TimerSequence<C: Clock<Duration>, Element: Sendable>: AsyncSequence, Sendable {
    let clock: C
    let start: C.Instant
    let interval: Duration
    let element: Element
    /// The timer's place in its machine's effect budget, held while it ticks.
    let token: EffectBudget.Token
    /// Its journal entry, held while it ticks.
    let timer: JournalTimerToken?
    /// What paces its actions with other machines' timers; `nil` for nothing.
    let pace: EffectActionPace?

    struct AsyncIterator: AsyncIteratorProtocol {
        let clock: C
        var deadline: C.Instant
        let interval: Duration
        let element: Element
        let token: EffectBudget.Token
        let timer: JournalTimerToken?
        let pace: EffectActionPace?

        mutating func next() async throws -> Element? {
            deadline = deadline.advanced(by: interval)
            let now = clock.now
            if now < deadline {
                try await clock.sleep(until: deadline, tolerance: nil)
            } else if deadline.advanced(by: interval) <= now {
                // A whole tick or more behind (its actions paced, or the machine busy): the
                // ticks missed are skipped, not sent in a burst; the next comes an interval on.
                deadline = now
            }
            try await pace?.waitForSlot()
            return element
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(clock: clock, deadline: start, interval: interval, element: element, token: token, timer: timer, pace: pace)
    }
}

extension PluginEffectRequest {
    /// The request as an async-layer ``Effect`` on the machine's `EffectQueueManager`;
    /// `wrap` turns the plugin action into the machine's action. Delays count from now, when
    /// the plugin asked, on `clock` (the machine's); `firstTickAfter` moves a repeating
    /// action's first tick (a timer armed again after a restart).
    /// Each delayed or repeating effect holds a place in `budget`, and its journal entry
    /// (`timer`), until the effect is released (completed, cancelled or dropped).
    func effect<C: Clock<Duration>, Action: Sendable>(
        clock: C, budget: EffectBudget, timer: JournalTimerToken? = nil, firstTickAfter: Duration? = nil,
        _ wrap: @escaping @Sendable (PluginAction, PluginEffectRequest) -> Action
    ) -> Effect<Action> {
        switch self {
        case let .next(action):
            return .nextAction(wrap(action, self))
        case let .delayed(action, delay, options):
            let next = wrap(action, self)
            let deadline = clock.now.advanced(by: delay)
            let token = budget.token(bytes: carriedBytes)
            let pace = budget.pace
            return Effect(id: options.id.map(PluginEffectID.init), queue: options.queue.map(queue)) { _ in
                withExtendedLifetime(token) {}
                if clock.now < deadline { try await clock.sleep(until: deadline, tolerance: nil) }
                try await pace?.waitForSlot()
                timer?.fire()
                return next
            }
        case let .repeating(action, interval, options):
            let next = wrap(action, self)
            let start = clock.now.advanced(by: (firstTickAfter ?? interval) - interval)
            let token = budget.token(bytes: carriedBytes)
            return Effect(id: options.id.map(PluginEffectID.init), queue: options.queue.map(queue), sequence: { _ in
                TimerSequence(clock: clock, start: start, interval: interval, element: next, token: token, timer: timer, pace: budget.pace)
            })
        case let .cancel(id):
            return .cancel(id: PluginEffectID(name: id))
        }
    }
}

/// A journaled timer's entry, held by its effect: when the effect ends without firing
/// (cancelled, dropped by a queue policy) the journal forgets the timer. A delayed action that
/// fired is forgotten with the action it sent, in one record; nothing is forgotten while the
/// journal closes, so a shut-down host arms its timers again on restart.
final class JournalTimerToken: Sendable {
    let journal: PluginJournal
    let key: Int64
    /// The name its machine is journaled under.
    let name: String
    /// The epoch its machine writes at (see ``PluginMachine/writeJournal(atEpoch:)``).
    let epoch: Int64?
    private let fired = Atomic(false)

    init(journal: PluginJournal, key: Int64, name: String, epoch: Int64?) {
        self.journal = journal
        self.key = key
        self.name = name
        self.epoch = epoch
    }

    /// The delayed action is about to be sent: its record forgets the timer.
    func fire() { fired.store(true, ordering: .relaxed) }

    deinit {
        if !fired.load(ordering: .relaxed) && !journal.isClosing { journal.append(epoch: epoch, .timerEnded(key: key, plugin: name)) }
    }
}

extension Duration {
    /// The duration in whole milliseconds.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

private func queue(_ queue: PluginEffectOptions.Queue) -> PluginEffectQueue {
    PluginEffectQueue(name: queue.name, policy: queue.policy)
}
