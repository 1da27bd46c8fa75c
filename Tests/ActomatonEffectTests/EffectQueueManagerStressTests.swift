import ActomatonCore
import ActomatonEffect
import Testing

private enum StressQueue: String, CaseIterable, Sendable, EffectQueue {
    case newest1, newest2, discard1, suspend1, suspend2

    var effectQueuePolicy: EffectQueuePolicy {
        switch self {
        case .newest1: .runNewest(maxCount: 1)
        case .newest2: .runNewest(maxCount: 2)
        case .discard1: .runOldest(maxCount: 1, .discardNew)
        case .suspend1: .runOldest(maxCount: 1, .suspendNew)
        case .suspend2: .runOldest(maxCount: 2, .suspendNew)
        }
    }
}

private struct StressID: EffectID { var value: Int }

private enum StressAction: Sendable {
    case start(Int, id: Int?, queue: StressQueue?)
    case cancel(id: Int)
    case done(Int)
}

/// What must happen, by the rules of IDs and queue policies, computed without any concurrency.
private struct Model {
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

@Suite("EffectQueueManager under stress")
struct EffectQueueManagerStressTests {
    /// 100,000 effects with random IDs, queue policies and cancellations, from a seeded
    /// generator, checked against the model: every effect that was not cancelled delivers
    /// exactly once, no cancelled one delivers, every effect's work runs exactly once (a
    /// discarded one's in a task already cancelled, as only cancelled ones may), suspended
    /// effects start in order, and no task outlives the machine.
    @Test func randomEffectsFollowTheModel() async throws {
        let effectCount = 100_000
        let gates = Gates()
        var host: TestHost<StressAction, [Int]>? = TestHost(
            state: [],
            reducer: MealyReducer { action, delivered, _ in
                switch action {
                case let .start(key, id, queue):
                    return Effect(id: id.map { StressID(value: $0) }, queue: queue) {
                        await gates.wait(for: key)
                        return .done(key)
                    }
                case let .cancel(id):
                    return .cancel(id: StressID(value: id))
                case let .done(key):
                    delivered.append(key)
                    return .empty
                }
            },
            clock: ManualClock()
        )
        var model = Model()
        var random = SplitMix64(seed: 20_261_121)
        var tasks: [Int: Task<Void, Error>] = [:]

        func finishOne() async {
            guard let key = model.runnable(using: &random) else { return }
            await gates.release(key)
            try? await tasks[key]?.value
            model.complete(key)
        }

        for key in 0..<effectCount {
            let id = random.next() % 5 < 2 ? nil : Int(random.next() % 40)
            let queue = random.next() % 5 < 2 ? nil : StressQueue.allCases[Int(random.next() % 5)]
            let task = await host!.send(.start(key, id: id, queue: queue))
            _ = model.start(key, id: id, queue: queue)
            #expect(task != nil, "effect \(key): every effect gets a task, a discarded one too")
            tasks[key] = task
            if random.next() % 10 == 0 {
                let id = Int(random.next() % 40)
                await host!.send(.cancel(id: id))
                model.cancel(id: id)
            }
            while model.alive.count > 32 || random.next() % 3 == 0 {
                await finishOne()
                if model.alive.isEmpty { break }
            }
        }
        while !model.alive.isEmpty { await finishOne() }
        for task in tasks.values { try? await task.value }

        let delivered = await host!.state
        #expect(delivered.count == Set(delivered).count, "an effect delivered twice")
        #expect(Set(delivered) == model.delivered)
        #expect(model.delivered.isDisjoint(with: model.cancelled))
        #expect(await host!.runningEffectCount == 0)
        let entered = await gates.entered
        #expect(entered.count == effectCount && Set(entered).count == effectCount, "every effect's work ran exactly once")
        let enteredCancelled = Set(await gates.enteredCancelled)
        #expect(enteredCancelled.isSubset(of: model.cancelled), "only cancelled effects ran cancelled")
        #expect(model.discarded.isSubset(of: enteredCancelled), "every discarded effect ran cancelled")

        // In a one-slot suspending queue, effects run one at a time, so the order in which their
        // work starts is the order of admission. (With two slots, two admitted effects race.)
        let admitted = model.admissions[.suspend1, default: []]
        let position = Dictionary(uniqueKeysWithValues: admitted.enumerated().map { ($1, $0) })
        let started = await gates.entered.compactMap { position[$0] }
        #expect(started == started.sorted(), "suspend1: effects started out of order")

        // Effects still running when the machine goes away are cancelled, and deliver nothing.
        let leftovers = try await (0..<10).asyncMap { key in
            try #require(await host!.send(.start(effectCount + key, id: nil, queue: nil)))
        }
        weak let released = host
        host = nil
        #expect(released == nil)
        for task in leftovers {
            await #expect(throws: CancellationError.self) { try await task.value }
        }
    }
}

extension Sequence {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
