import ActomatonCore
import ActomatonEffect

// The model of the effect rules that both stress tests check against: the task-level one
// (`EffectQueueManagerStressTests`) and the pure state machine's (`EffectRuntimeStateMachineTests`).

/// The queues of the stress tests: each policy, with one and two slots; and, for the pure state
/// machine's, three and forty, where effects leave the middle of a lane's slots.
enum StressQueue: String, CaseIterable, Sendable, EffectQueue {
    case newest1, newest2, discard1, suspend1, suspend2, newest3, suspend40

    /// The queues with one and two slots.
    static let narrow: [StressQueue] = [.newest1, .newest2, .discard1, .suspend1, .suspend2]

    var effectQueuePolicy: EffectQueuePolicy {
        switch self {
        case .newest1: .runNewest(maxCount: 1)
        case .newest2: .runNewest(maxCount: 2)
        case .discard1: .runOldest(maxCount: 1, .discardNew)
        case .suspend1: .runOldest(maxCount: 1, .suspendNew)
        case .suspend2: .runOldest(maxCount: 2, .suspendNew)
        case .newest3: .runNewest(maxCount: 3)
        case .suspend40: .runOldest(maxCount: 40, .suspendNew)
        }
    }
}

/// The IDs of the stress tests.
struct StressID: EffectID { var value: Int }

/// What must happen, by the rules of IDs and queue policies, computed without any concurrency.
struct EffectRulesModel {
    struct Effect {
        let id: Int?
        let queue: StressQueue?
        var isActive: Bool
    }

    var alive: [Int: Effect] = [:]
    var active: [StressQueue: [Int]] = [:]
    var waiting: [StressQueue: [Int]] = [:]
    var delivered: Set<Int> = []
    /// Effects cancelled, dropped by a queue, or discarded: they deliver nothing.
    var cancelled: Set<Int> = []
    /// Effects `.discardNew` dropped: their work runs in a task already cancelled.
    var discarded: Set<Int> = []
    /// The order in which effects of each queue got their slot.
    var admissions: [StressQueue: [Int]] = [:]

    /// Starts effect `key`; false when its queue discards it (its work then runs cancelled).
    mutating func start(_ key: Int, id: Int?, queue: StressQueue?) -> Bool {
        if let id { cancel(id: id) }
        guard let queue else {
            alive[key] = Effect(id: id, queue: nil, isActive: true)
            return true
        }
        let maxCount = queue.effectQueuePolicy.maxCount
        switch queue.effectQueuePolicy {
        case .runNewest:
            while active[queue, default: []].count >= maxCount {
                cancelled.insert(active[queue]![0])
                remove(active[queue]![0])
            }
        case .runOldest(_, .discardNew) where active[queue, default: []].count >= maxCount:
            discarded.insert(key)
            cancelled.insert(key)
            return false
        case .runOldest(_, .suspendNew) where active[queue, default: []].count >= maxCount:
            alive[key] = Effect(id: id, queue: queue, isActive: false)
            waiting[queue, default: []].append(key)
            return true
        case .runOldest:
            break
        }
        alive[key] = Effect(id: id, queue: queue, isActive: true)
        active[queue, default: []].append(key)
        admissions[queue, default: []].append(key)
        return true
    }

    mutating func cancel(id: Int) {
        for (key, effect) in alive where effect.id == id {
            cancelled.insert(key)
            remove(key)
        }
    }

    /// Cancels one effect: the task `send` returned for it was cancelled.
    mutating func cancel(key: Int) {
        guard alive[key] != nil else { return }
        cancelled.insert(key)
        remove(key)
    }

    /// Cancels every effect.
    mutating func cancelAll() {
        for key in alive.keys.sorted() { cancel(key: key) }
    }

    /// The effect's work ends normally: it delivers, and frees its slot.
    mutating func complete(_ key: Int) {
        delivered.insert(key)
        remove(key)
    }

    private mutating func remove(_ key: Int) {
        guard let effect = alive.removeValue(forKey: key) else { return }
        guard let queue = effect.queue else { return }
        if effect.isActive {
            active[queue]!.removeAll { $0 == key }
            while active[queue, default: []].count < queue.effectQueuePolicy.maxCount, !waiting[queue, default: []].isEmpty {
                let next = waiting[queue]!.removeFirst()
                alive[next]!.isActive = true
                active[queue, default: []].append(next)
                admissions[queue, default: []].append(next)
            }
        } else {
            waiting[queue]!.removeAll { $0 == key }
        }
    }

    /// An effect whose work the test may finish now.
    func runnable(using random: inout SplitMix64) -> Int? {
        let keys = alive.filter(\.value.isActive).keys.sorted()
        return keys.isEmpty ? nil : keys[Int(random.next() % UInt64(keys.count))]
    }
}
