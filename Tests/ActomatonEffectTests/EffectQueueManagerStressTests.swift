import ActomatonCore
import ActomatonEffect
import Testing

private enum StressAction: Sendable {
    case start(Int, id: Int?, queue: StressQueue?)
    case cancel(id: Int)
    case done(Int)
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
        var model = EffectRulesModel()
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
            let queue = random.next() % 5 < 2 ? nil : StressQueue.narrow[Int(random.next() % 5)]
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
        // Not for an effect cancelled after its admission: its slot goes to the next one at
        // once, and its own work, run cancelled, may start after that one's.
        let admitted = model.admissions[.suspend1, default: []]
        let position = Dictionary(uniqueKeysWithValues: admitted.enumerated().map { ($1, $0) })
        let started = await gates.entered.filter { !model.cancelled.contains($0) }.compactMap { position[$0] }
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
