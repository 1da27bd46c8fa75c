import ActomatonPluginContract
import Synchronization

/// A live instance: its address, its machine, and the watchers of its transitions.
public final class Instance: Sendable {
    /// Its plugin and key.
    public let address: InstanceAddress
    /// Its machine.
    public let machine: InstanceMachine
    /// Who watches its transitions.
    let watchers: WatcherSet

    init(address: InstanceAddress, machine: InstanceMachine, watchers: WatcherSet) {
        self.address = address
        self.machine = machine
        self.watchers = watchers
    }

    /// How many watchers it has.
    public var watcherCount: Int { watchers.count }
}

/// An instance's watchers, at most `limit` of them; each transition goes to all as one JSON
/// text (made once, only when someone watches).
///
/// It keeps the last `history` transitions, so that a watcher that reconnects with the `seq`
/// it saw last (`?after=SEQ`) gets the ones it missed, then the new ones, without a gap or a
/// duplicate. The history lives as long as the set: an instance passivated without watchers,
/// or a restarted service, starts a new one. Its bytes count against the service's
/// `WatchHistoryBudget` too.
final class WatcherSet: Sendable {
    private struct State {
        var watchers: [ObjectIdentifier: Watcher] = [:]
        var closed: Watcher.EndReason?
        /// The last transitions, oldest first, from `history[head]` on.
        var history: [InstanceTransition] = []
        var head = 0
        /// The size of the kept transitions (``WatcherSet/size(of:)``).
        var keptBytes = 0
        /// The size of those let go and not yet removed, before `history[head]`: they still
        /// take memory, so the service's total counts them until they are removed.
        var heldBytes = 0
        /// The seq of the last transition the set saw, or the instance's seq when it began.
        var lastSeq: UInt64 = 0
        /// The history holds every transition after this seq.
        var keptAfter: UInt64 = 0
        /// Whether the service's ``WatchHistoryBudget`` knows the set keeps some history.
        var holding = false

        var keptCount: Int { history.count - head }

        /// Lets the oldest kept transition go: it stays in memory (and counted) until
        /// ``removeTheLetGo(budget:)``.
        mutating func letGoOfTheOldest() {
            let oldestSize = WatcherSet.size(of: history[head])
            keptAfter = history[head].seq
            keptBytes -= oldestSize
            heldBytes += oldestSize
            head += 1
        }

        /// Removes those let go, and gives the total back what they took.
        mutating func removeTheLetGo(budget: WatchHistoryBudget?) {
            history.removeFirst(head)
            head = 0
            budget?.release(heldBytes)
            heldBytes = 0
        }
    }

    private let state = Mutex(State())
    /// What its history holds, for the budget's reclaims.
    let historySize = HistorySize()
    private let limit: Int
    private let historyLimit: Int
    private let historyByteLimit: Int
    private let historyBudget: WatchHistoryBudget?
    private let address: InstanceAddress
    private let onChange: @Sendable (Int) -> Void

    /// - Parameters:
    ///   - limit: The most watchers at a time.
    ///   - history: How many of the last transitions are kept for `after`.
    ///   - historyBytes: The most bytes of them kept (``size(of:)``): the oldest go first.
    ///   - historyBudget: The bytes all instances' histories may keep together, or `nil` for no
    ///     bound beyond `historyBytes`.
    ///   - onChange: Told the change in the count of watchers (+1, -1), for metrics.
    init(address: InstanceAddress, limit: Int, history: Int = 0, historyBytes: Int = 1 << 20, historyBudget: WatchHistoryBudget? = nil,
         onChange: @escaping @Sendable (Int) -> Void) {
        self.address = address
        self.limit = limit
        historyLimit = max(0, history)
        historyByteLimit = max(0, historyBytes)
        self.historyBudget = historyBudget
        self.onChange = onChange
    }

    deinit {
        historyBudget?.release(state.withLock { $0.keptBytes + $0.heldBytes })
        historyBudget?.forget(ObjectIdentifier(self))
    }

    /// Tells the budget whether the set keeps some history now, when that changed.
    private func noteHolding(_ state: inout State) {
        historySize.bytes.store(state.keptBytes + state.heldBytes, ordering: .relaxed)
        let holding = state.keptBytes + state.heldBytes > 0
        guard holding != state.holding, let historyBudget else { return }
        state.holding = holding
        historyBudget.setHolding(self, holding)
    }

    var count: Int { state.withLock { $0.watchers.count } }

    /// Sets where the instance's count of transitions stood when its machine started: the
    /// history holds what comes after (for a set carried over a passivation, nothing before).
    func began(at seq: UInt64) {
        state.withLock { state in
            guard seq > state.lastSeq else { return }
            historyBudget?.release(state.keptBytes + state.heldBytes)
            state.history = []
            state.head = 0
            state.keptBytes = 0
            state.heldBytes = 0
            state.lastSeq = seq
            state.keptAfter = seq
            noteHolding(&state)
        }
    }

    /// Cuts the history down to at most `target` bytes, its oldest transitions first, when it
    /// holds more (what it let go and still holds included): another instance needs its share
    /// of the service's total (``WatchHistoryBudget/reclaim(for:keeping:adding:)``).
    func cutHistory(downTo target: Int) {
        state.withLock { state in
            guard state.keptBytes + state.heldBytes > target else { return }
            while state.keptCount > 0, state.keptBytes > target { state.letGoOfTheOldest() }
            state.removeTheLetGo(budget: historyBudget)
            noteHolding(&state)
        }
    }

    /// Checks that a watcher can start after `seq`: throws 410 when transitions after it are
    /// no longer kept in memory, 400 when the instance has not reached it.
    func check(after seq: UInt64) throws(ServiceError) {
        try state.withLock { state throws(ServiceError) in _ = try backlog(after: seq, in: state, journaled: nil) }
    }

    /// The messages a watcher starting after `seq` missed: from `journaled` (the messages the
    /// journal keeps, by seq) up to where the history begins, then from the history.
    private func backlog(after seq: UInt64, in state: State, journaled: [(ordinal: Int64, message: String)]?) throws(ServiceError) -> [String] {
        guard seq <= state.lastSeq else {
            throw .badRequest("after=\(seq) is past \(address)'s last transition, seq \(state.lastSeq)")
        }
        var missed: [String] = []
        if seq < state.keptAfter {
            // The journal bridges the gap when it holds every transition from seq + 1 to where the history begins.
            let bridge = (journaled ?? []).filter { $0.ordinal > seq && $0.ordinal <= state.keptAfter }
            guard let first = bridge.first, first.ordinal == seq + 1, bridge.count == Int(state.keptAfter - seq) else {
                throw .gone("the transitions of \(address) after seq \(seq) are no longer kept (only those after seq \(state.keptAfter) "
                            + (journaled == nil ? "in memory: --watch-history keeps the last \(historyLimit), --watch-history-bytes at most \(historyByteLimit) bytes of them, "
                               + (historyBudget.map { "all instances' together at most \($0.limit) bytes (--watch-history-total-bytes), " } ?? "")
                               + "none across a passivation or a restart); "
                               : "in memory, and the journal keeps those since its older snapshot of the instance); ")
                            + "read its state (GET) and watch from its seq")
            }
            missed = bridge.map(\.message)
        }
        for transition in state.history[state.head...] where transition.seq > seq {
            missed.append(ServiceJSON.watchMessage(transition, address: address))
        }
        return missed
    }

    /// Adds a watcher buffering `buffer` messages and `bufferBytes` bytes of them (besides the
    /// ones it missed); throws ``ServiceError/overLimit(_:)`` past the limit, and what
    /// ``check(after:)`` throws.
    ///
    /// - Parameters:
    ///   - buffer: How many messages it buffers (besides the ones it missed).
    ///   - bufferBytes: How many bytes of messages it buffers (besides the ones it missed).
    ///   - after: The seq the watcher saw last: it first gets the kept transitions after it.
    ///     `nil` for only the new ones.
    ///   - journaled: The messages the journal keeps after `after` (by seq), for the transitions
    ///     no longer in memory; `nil` without a journal.
    func add(buffer: Int, bufferBytes: Int = .max, after: UInt64? = nil,
             journaled: [(ordinal: Int64, message: String)]? = nil) throws(ServiceError) -> Watcher {
        let watcher: Watcher = try state.withLock { state throws(ServiceError) in
            if let closed = state.closed { throw closed == .shuttingDown ? .shuttingDown : .notFound("no instance \(address)") }
            guard state.watchers.count < limit else {
                throw .overLimit("\(address) already has \(limit) watchers, its limit (--max-watchers-per-instance)")
            }
            let missed = try after.map { seq throws(ServiceError) in try backlog(after: seq, in: state, journaled: journaled) } ?? []
            let watcher = Watcher(buffer: buffer, bytes: bufferBytes, missed: missed.count)
            // Offered under the lock: a transition broadcast meanwhile comes after them.
            for message in missed { watcher.offer(message) }
            state.watchers[ObjectIdentifier(watcher)] = watcher
            return watcher
        }
        onChange(1)
        return watcher
    }

    /// Forgets a watcher whose connection ended.
    func remove(_ watcher: Watcher) {
        let removed = state.withLock { $0.watchers.removeValue(forKey: ObjectIdentifier(watcher)) != nil }
        watcher.finish()
        if removed { onChange(-1) }
    }

    /// Sends a transition to every watcher, and keeps it in the history.
    func broadcast(_ transition: InstanceTransition) {
        let (historyLimit, historyByteLimit, budget) = (self.historyLimit, self.historyByteLimit, historyBudget)
        let size = historyLimit > 0 ? Self.size(of: transition) : 0
        if let budget, historyLimit > 0, size <= historyByteLimit, budget.available < size {
            // The total is full: others over their share make room for this one's.
            budget.reclaim(for: self, keeping: state.withLock { $0.keptBytes }, adding: size)
        }
        let watchers = state.withLock { state in
            state.lastSeq = transition.seq
            if historyLimit > 0 {
                var letGoForBytes = false
                func letGoOfTheOldest() { state.letGoOfTheOldest() }
                func removeTheLetGo() { state.removeTheLetGo(budget: budget) }
                // The oldest go first, past either limit of the instance's, then while the
                // service's total has no room: one transition larger than the byte limit, or
                // than what the total has left, leaves none kept.
                while state.keptCount > 0, state.keptCount >= historyLimit || state.keptBytes + size > historyByteLimit {
                    if state.keptCount < historyLimit { letGoForBytes = true }
                    letGoOfTheOldest()
                }
                var kept = size <= historyByteLimit
                while kept, !(budget?.reserve(size) ?? true) {
                    if state.head == 0 {
                        guard state.keptCount > 0 else {
                            kept = false
                            break
                        }
                        letGoOfTheOldest()
                    }
                    removeTheLetGo()
                }
                if kept {
                    state.history.append(transition)
                    state.keptBytes += size
                } else {
                    letGoForBytes = true
                    while state.keptCount > 0 { letGoOfTheOldest() }
                    state.keptAfter = transition.seq
                }
                // Large states are freed at once; small ones, 64 or more at a time.
                if state.head > 0, letGoForBytes || (state.head >= 64 && state.head * 2 >= state.history.count) {
                    removeTheLetGo()
                }
                noteHolding(&state)
            } else {
                state.keptAfter = transition.seq
            }
            return state.watchers.isEmpty ? [] : Array(state.watchers.values)
        }
        guard !watchers.isEmpty else { return }
        let message = ServiceJSON.watchMessage(transition, address: address)
        for watcher in watchers { watcher.offer(message) }
    }

    /// The bytes (``size(of:)``) of the last `count` kept transitions: for tests.
    func keptBytesOfTheLast(_ count: Int) -> Int {
        state.withLock { state in state.history.suffix(count).reduce(0) { $0 + Self.size(of: $1) } }
    }

    /// What a kept transition counts against ``historyByteLimit``: its text's bytes (the state's
    /// description, the action, the effect IDs) and 64 for the rest.
    static func size(of transition: InstanceTransition) -> Int {
        64 + (transition.state?.utf8.count ?? 0) + transition.actionText.utf8.count + transition.action.utf8.count
            + (transition.effectID?.utf8.count ?? 0) + transition.started.reduce(0) { $0 + $1.utf8.count }
            + transition.cancelled.reduce(0) { $0 + $1.utf8.count } + (transition.active?.reduce(0) { $0 + $1.utf8.count } ?? 0)
    }

    /// Ends every watcher for `why`; later ones are refused.
    func endAll(_ why: Watcher.EndReason) {
        let watchers = state.withLock { state in
            state.closed = why
            return Array(state.watchers.values)
        }
        for watcher in watchers { watcher.end(why) }
    }
}
