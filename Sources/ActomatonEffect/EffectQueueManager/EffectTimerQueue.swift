/// The sleeps waiting in ``EffectTimers``, with nothing else: a min-heap of deadlines and, per
/// sleep, its phase. A pure value: it reads no clock, takes no lock and resumes nothing; each
/// transition returns the waiters to resume, and ``EffectTimers`` resumes them after unlocking.
///
/// It is generic over what it holds for a sleeping task, so that tests run it with plain values
/// (`EffectTimerQueueTests`).
///
/// One sleep goes through these phases:
///
///     reserve ──▶ reserved ──arm──▶ armed ──deadline passes──▶ removed: resume it
///                    │                │
///                 cancel           cancel ──▶ removed: resume it with CancellationError
///                    ▼
///                cancelled ──arm──▶ removed: resume it with CancellationError at once
///
/// A cancelled sleep gives back its waiter at once; what is left of it is a 16-byte heap entry,
/// and the heap is rebuilt without those entries once they outnumber the live ones.
struct EffectTimerQueue<Waiter> {
    private enum Phase {
        /// Reserved before its task installed a cancellation handler; not in the heap yet.
        case reserved
        /// Its task was cancelled before it armed.
        case cancelled
        /// In the heap, waiting for its deadline.
        case armed(Waiter)
    }

    private struct Entry {
        let deadline: UInt64
        let id: UInt64
    }

    /// A binary min-heap on `deadline`; entries whose sleep is gone are skipped when popped.
    private var heap: [Entry] = []
    private var phases: [UInt64: Phase] = [:]
    private var nextID: UInt64 = 0

    /// Creates an empty queue.
    init() {}

    /// How many sleeps are reserved or armed.
    var count: Int { phases.count }

    /// How many entries the heap holds, those of cancelled sleeps included (for tests).
    var heapCount: Int { heap.count }

    /// How many sleeps the tables have room for without growing (for tests of the idle footprint).
    var capacity: Int { max(phases.capacity, heap.capacity) }

    /// The earliest deadline in the heap (perhaps a cancelled sleep's: waking for it is harmless).
    var nextDeadline: UInt64? { heap.first?.deadline }

    /// Starts a sleep; call it before its task installs its cancellation handler.
    mutating func reserve() -> UInt64 {
        let id = nextID
        nextID += 1
        phases[id] = .reserved
        return id
    }

    /// Puts a reserved sleep in the heap with its waiter. Returns the waiter back when the sleep
    /// was cancelled meanwhile (resume it with `CancellationError`); otherwise `nil`, and
    /// `isEarliest` tells whether the timer thread must wake to wait for this deadline instead.
    mutating func arm(_ id: UInt64, deadline: UInt64, waiter: Waiter) -> (cancelled: Waiter?, isEarliest: Bool) {
        guard case .reserved = phases[id] else {
            phases[id] = nil
            return (waiter, false)
        }
        phases[id] = .armed(waiter)
        heap.append(Entry(deadline: deadline, id: id))
        siftUp(heap.count - 1)
        return (nil, heap[0].id == id)
    }

    /// Cancels a sleep. Returns its waiter, to resume with `CancellationError`, if it was armed;
    /// a reserved sleep is marked, and ``arm(_:deadline:waiter:)`` gives its waiter back.
    mutating func cancel(_ id: UInt64) -> Waiter? {
        switch phases[id] {
        case .reserved:
            phases[id] = .cancelled
            return nil
        case let .armed(waiter):
            phases[id] = nil
            compactIfMostlyCancelled()
            return waiter
        case .cancelled, nil:
            // Already cancelled, or its deadline passed first.
            return nil
        }
    }

    /// Removes the sleeps whose deadline is at or before `now`; returns their waiters, to resume.
    mutating func popDue(now: UInt64) -> [Waiter] {
        var due: [Waiter] = []
        while let first = heap.first, first.deadline <= now {
            removeFirst()
            if case let .armed(waiter) = phases[first.id] {
                phases[first.id] = nil
                due.append(waiter)
            }
        }
        if phases.isEmpty { releaseStorage() }
        return due
    }

    // MARK: Storage

    /// Drops the entries of cancelled sleeps once they are most of the heap, so a churn of
    /// cancelled sleeps holds no more than twice the live ones.
    private mutating func compactIfMostlyCancelled() {
        if phases.isEmpty {
            releaseStorage()
            return
        }
        guard heap.count > 64, heap.count > 2 * phases.count else { return }
        heap = heap.filter { if case .armed = phases[$0.id] { true } else { false } }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    /// With nothing left, gives back the tables' storage: a burst of sleeps would otherwise
    /// keep its buckets for as long as the process lives.
    private mutating func releaseStorage() {
        if heap.capacity > 64 || phases.capacity > 64 {
            heap = []
            phases = [:]
        } else {
            heap.removeAll(keepingCapacity: true)
        }
    }

    // MARK: Heap

    private mutating func removeFirst() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(0)
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            var smallest = left
            if left + 1 < heap.count, heap[left + 1].deadline < heap[left].deadline { smallest = left + 1 }
            guard heap[smallest].deadline < heap[parent].deadline else { return }
            heap.swapAt(smallest, parent)
            parent = smallest
        }
    }
}
