import ActomatonHost
import Synchronization

/// The bytes of watch history all the instances of a service keep together
/// (`--watch-history-total-bytes`), counted as ``WatcherSet`` counts a kept transition, and
/// shared fairly among the instances that keep some.
///
/// `--watch-history` and `--watch-history-bytes` bound one instance's history; this bounds
/// them all. Every active instance keeps its last transitions, watched or not (a client reads
/// the state at a seq, then watches from it), and 100,000 instances of 1 MiB each would have
/// been 100 GB.
///
/// Past the total, an instance that keeps less than its share (the total divided by the
/// instances keeping some, itself included) has instances keeping more than theirs cut down to
/// their share, until half a share is free (``reclaim(for:keeping:adding:)``), so that instances that stay in
/// memory — watched ones are never passivated — cannot hold the whole total and leave the
/// others none. An instance at its share lets its own oldest transitions go to keep a new one,
/// and keeps none when it has none to let go. A watcher asking for what was let go is answered
/// 410, as for any transition no longer kept (with `--state`, the journal bridges it).
final class WatchHistoryBudget: Sendable {
    private let total: BoundedTotal
    /// The sets that keep some history now, by identity, with what each holds: those a reclaim
    /// may cut down.
    private let holders = Mutex<[ObjectIdentifier: WeakWatcherSet]>([:])
    /// Whether a reclaim is running: one at a time, and the others' needs wait for their next
    /// transition.
    private let reclaiming = Atomic(false)
    /// How many sets reclaims looked at so far (tests).
    let setsLookedAt = Atomic(0)

    /// A total of at most `limit` bytes (0 when negative).
    init(limit: Int) {
        total = BoundedTotal(limit: limit)
    }

    /// The most bytes all histories may keep together.
    var limit: Int { total.limit }

    /// The bytes kept (and let go but not yet removed) now.
    var used: Int { total.used }

    /// What is left.
    var available: Int { total.available }

    /// Takes `amount` bytes when they fit; whether they did.
    func reserve(_ amount: Int) -> Bool { total.reserve(amount) }

    /// Gives back `amount` bytes taken before.
    func release(_ amount: Int) { total.release(amount) }

    /// How many sets keep some history now.
    var holderCount: Int { holders.withLock { $0.count } }

    /// Notes that `set` keeps some history now (a reclaim may cut it down) or none.
    func setHolding(_ set: WatcherSet, _ holding: Bool) {
        let id = ObjectIdentifier(set)
        holders.withLock { holders in
            if holding {
                holders[id] = WeakWatcherSet(set: set, held: set.historySize)
            } else {
                holders[id] = nil
            }
        }
    }

    /// Forgets a set that is going away.
    func forget(_ id: ObjectIdentifier) {
        _ = holders.withLock { $0.removeValue(forKey: id) }
    }

    /// Makes room for `needy`, which keeps `own` bytes and needs `size` more that the total
    /// lacks: when that stays within its share, other sets keeping more than their share are
    /// cut down to it (their oldest transitions go first), until half a share (or `size`, when
    /// larger) is free: a new instance takes a little from each, not half of every history.
    /// Nothing happens when another reclaim is running, or when `needy` would go past its
    /// share: it then lets its own oldest go.
    ///
    /// The share is known at once: an instance at its share (the steady state of a full
    /// total) looks at no other. Under it, the sets keeping some history are looked at — their
    /// sizes read without their locks — only until enough over their shares is found; what it
    /// frees lets the needy set keep about half a share before it runs again.
    ///
    /// Called with no set's lock held: it takes each set's own.
    func reclaim(for needy: WatcherSet, keeping own: Int, adding size: Int) {
        guard !reclaiming.exchange(true, ordering: .acquiring) else { return }
        defer { reclaiming.store(false, ordering: .releasing) }
        let id = ObjectIdentifier(needy)
        let sharers = holders.withLock { $0.count + ($0[id] == nil ? 1 : 0) }
        let share = total.limit / max(sharers, 1)
        guard own + size <= share else { return }
        let enough = max(size, share / 2)
        let over: [WatcherSet] = holders.withLock { holders in
            var found = 0
            var sets: [WatcherSet] = []
            for (key, entry) in holders where key != id {
                setsLookedAt.add(1, ordering: .relaxed)
                let held = entry.held.bytes.load(ordering: .relaxed)
                guard held > share, let set = entry.set else { continue }
                sets.append(set)
                found += held - share
                if found >= enough { break }
            }
            return sets
        }
        for set in over { set.cutHistory(downTo: share) }
    }
}

/// A set a ``WatchHistoryBudget`` knows without keeping it alive, and the bytes it holds.
struct WeakWatcherSet: Sendable {
    weak var set: WatcherSet?
    let held: HistorySize
}

/// The bytes a ``WatcherSet``'s history holds (kept, and let go but not yet removed), readable
/// without the set's lock.
final class HistorySize: Sendable {
    let bytes = Atomic(0)
}
