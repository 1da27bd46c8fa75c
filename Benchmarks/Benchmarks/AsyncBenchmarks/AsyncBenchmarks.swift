// The async layer: the cost of `await actomaton.send` against a bare actor method (with a
// closure `Reducer` and with a struct reducer), effect throughput, and runNewest(1)
// cancellation churn.

import Actomaton
import Benchmark
import BenchmarkSupport

let benchmarks: @Sendable () -> Void = {
    let perSend = Benchmark.Configuration.perOperation
    let bulk = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .peakMemoryResident],
        timeUnits: .milliseconds,
        warmupIterations: 1,
        scalingFactor: .one,
        maxDuration: .seconds(10),
        maxIterations: 10
    )

    // MARK: await send, no effect

    Benchmark("actor-send: baseline", configuration: perSend) { benchmark in
        let counter = BareCounter()
        for _ in benchmark.scaledIterations {
            await counter.increment()
        }
        blackHole(await counter.count)
    }

    Benchmark("actor-send: Actomaton, empty effect", configuration: perSend) { benchmark in
        let actomaton = Actomaton<CounterAction, Int>(state: 0, reducer: counterReducer)
        for _ in benchmark.scaledIterations {
            await actomaton.send(.increment)
        }
        blackHole(await actomaton.state)
    }

    // The same transition, in a struct reducer the actor calls with no closure in between.
    Benchmark("actor-send: Actomaton, struct reducer, empty effect", configuration: perSend) { benchmark in
        let actomaton = Actomaton(state: 0, reducer: CounterReducer())
        for _ in benchmark.scaledIterations {
            await actomaton.send(.increment)
        }
        blackHole(await actomaton.state)
    }

    // MARK: four producers sending to one machine (the server case)

    // Each iteration is 1,000 sends in all, 250 from each of 4 concurrent tasks: time per send.
    Benchmark("contended-send: baseline (a bare actor method, 4 tasks)", configuration: perSend) { benchmark in
        let counter = BareCounter()
        let rounds = benchmark.scaledIterations.count / 4
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { for _ in 0..<rounds { await counter.increment() } }
            }
        }
        blackHole(await counter.count)
    }

    Benchmark("contended-send: Actomaton, empty effect, 4 tasks", configuration: perSend) { benchmark in
        let actomaton = Actomaton<CounterAction, Int>(state: 0, reducer: counterReducer)
        let rounds = benchmark.scaledIterations.count / 4
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { for _ in 0..<rounds { await actomaton.send(.increment) } }
            }
        }
        blackHole(await actomaton.state)
    }

    // MARK: 100,000 single-async effects, spawned and completed

    // All at once: 100,000 tasks alive together, so memory is 100,000 tasks' worth.
    Benchmark("effects: 100,000 single-async effects, all in flight", configuration: bulk) { benchmark in
        for _ in benchmark.scaledIterations {
            await runEffects(inFlight: effectCount)
        }
    }

    // The same effects, sent 1,000 at a time: each batch is awaited before the next.
    Benchmark("effects: 100,000 single-async effects, 1,000 in flight", configuration: bulk) { benchmark in
        for _ in benchmark.scaledIterations {
            await runEffects(inFlight: 1_000)
        }
    }

    // MARK: runNewest(1) churn: each effect cancels the one before

    Benchmark("churn: runNewest(1), 100,000 effects each cancelling the last", configuration: bulk) { benchmark in
        for _ in benchmark.scaledIterations {
            let actomaton = Actomaton<CounterAction, Int>(state: 0, reducer: counterReducer)
            var last: Task<Void, Error>?
            for _ in 0..<effectCount {
                last = await actomaton.send(.startLatest)
            }
            await actomaton.send(.stopLatest)
            try? await last?.value
            let running = await actomaton.runningEffectCount
            precondition(running == 0, "the last effect was cancelled")
        }
    }
}

let effectCount = 100_000

/// Sends `effectCount` actions that each start one single-async effect, `inFlight` at a time,
/// and checks that every effect delivered its next action exactly once.
func runEffects(inFlight: Int) async {
    let actomaton = Actomaton<CounterAction, Int>(state: 0, reducer: counterReducer)
    var tasks: [Task<Void, Error>] = []
    tasks.reserveCapacity(inFlight)
    for sent in 1...effectCount {
        if let task = await actomaton.send(.startEffect) { tasks.append(task) }
        if tasks.count == inFlight || sent == effectCount {
            for task in tasks { try? await task.value }
            tasks.removeAll(keepingCapacity: true)
        }
    }
    let delivered = await actomaton.state
    precondition(delivered == effectCount, "every effect delivers once")
}

actor BareCounter {
    var count = 0
    func increment() { count += 1 }
}

enum CounterAction: Sendable {
    case increment, startEffect, startLatest, stopLatest
}

struct Latest: Newest1EffectQueue {}
struct LatestID: EffectID {}

/// The counter as a struct reducer: statically dispatched.
struct CounterReducer: MealyReducerProtocol {
    func reduce(_ action: CounterAction, into count: inout Int, environment: Void) -> Effect<CounterAction> {
        switch action {
        case .increment:
            count += 1
            return .empty
        case .startEffect:
            return Effect { .increment }
        case .startLatest:
            return Effect(id: LatestID(), queue: Latest()) {
                try await Task.sleep(for: .seconds(3600))
                return .increment
            }
        case .stopLatest:
            return .cancel(id: LatestID())
        }
    }
}

/// The same counter in a closure `Reducer`, as most reducers are written.
let counterReducer = Reducer<CounterAction, Int, Void> { action, count, _ in
    CounterReducer().reduce(action, into: &count, environment: ())
}
