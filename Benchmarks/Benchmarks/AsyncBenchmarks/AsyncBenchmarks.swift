// The async layer: the cost of `await actomaton.send` against a bare actor method (with a
// closure `Reducer` and with a struct reducer), effect throughput, the memory an effect holds
// in flight and after it, and runNewest(1) cancellation churn.

import Actomaton
import Benchmark
import BenchmarkSupport
import Synchronization

let benchmarks: @Sendable () -> Void = {
    let perSend = Benchmark.Configuration.perOperation
    let bulk = Benchmark.Configuration.perWorkload(
        metrics: [.wallClock, .throughput, .peakMemoryResident],
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

    // The same through `send(_:priority:tracksFeedbacks:)` with its defaults: the caller
    // computes default arguments off the actor, so each send hops off it and back.
    Benchmark("contended-send: Actomaton, send with default arguments, 4 tasks", configuration: perSend) { benchmark in
        let actomaton = Actomaton<CounterAction, Int>(state: 0, reducer: counterReducer)
        let rounds = benchmark.scaledIterations.count / 4
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { for _ in 0..<rounds { await actomaton.send(.increment, priority: nil) } }
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

    // MARK: memory per in-flight effect, and what is left after the work

    // Each iteration puts 100,000 pieces of work in flight at once, measures the memory they
    // hold, lets them end (or cancels them), and measures what is still held afterwards with
    // the machine alive. The baselines are bare tasks doing the same in the same run.
    let memory = Benchmark.Configuration.perWorkload(
        metrics: [.wallClock, .throughput, .peakMemoryResident, heapPerTask, residentPerTask, heapRetained],
        maxDuration: .seconds(10),
        maxIterations: 5
    )

    Benchmark("in-flight: baseline (bare tasks, each waiting on a continuation, then calling an actor)", configuration: memory) { benchmark in
        let counter = BareCounter()
        await measureInFlight(benchmark, cancelled: false) { gate in
            Task { () async throws in
                await gate.wait()
                await counter.increment()
            }
        }
    }

    Benchmark("in-flight: single-async effects, each waiting on a continuation", configuration: memory) { benchmark in
        let gate = Gate()
        let actomaton = Actomaton<CounterAction, Int>(state: 0, reducer: memoryReducer(gate))
        await measureInFlight(benchmark, gate: gate, cancelled: false) { _ in
            await actomaton.send(.startEffect)!
        }
        let delivered = await actomaton.state
        precondition(delivered == effectCount, "every effect delivers once")
    }

    Benchmark("sleep-cancelled: baseline (bare tasks in Task.sleep(for: 1 hour))", configuration: memory) { benchmark in
        await measureInFlight(benchmark, cancelled: true) { gate in
            Task {
                gate.arrive()
                try await Task.sleep(for: .seconds(3600))
            }
        }
    }

    Benchmark("sleep-cancelled: single-async effects sleeping 1 hour on context.clock", configuration: memory) { benchmark in
        let gate = Gate()
        let actomaton = Actomaton<CounterAction, Int>(state: 0, reducer: memoryReducer(gate))
        await measureInFlight(benchmark, gate: gate, cancelled: true) { _ in
            await actomaton.send(.startSleep)!
        }
        let running = await actomaton.runningEffectCount
        precondition(running == 0, "every effect was cancelled")
    }

    // MARK: runNewest(1) churn: each effect cancels the one before

    // 100,000 sends, each starting an effect that sleeps 1 s in a runNewest(1) queue: each
    // cancels the one before, and only the last one's sleep ends. Time and peak memory are
    // those of the 100,000 sends; besides: how late the last effect completes after its
    // sleep's end, and the heap still held once it has, with the machine alive.
    let churn = Benchmark.Configuration.perWorkload(
        metrics: [.wallClock, .throughput, .peakMemoryResident, heapRetained, lastEffectLate],
        maxDuration: .seconds(20),
        maxIterations: 5
    )

    Benchmark("churn: baseline (bare tasks in Task.sleep(for: 1 s), each cancelling the last)", configuration: churn) { benchmark in
        let counter = BareCounter()
        await measureChurn(benchmark, cancelsTheLast: true) {
            Task {
                try await Task.sleep(for: .seconds(1))
                await counter.increment()
            }
        }
        let completed = await counter.count
        precondition(completed == 1, "only the last one completes")
    }

    registerBurstBenchmarks()

    Benchmark("churn: runNewest(1), effects sleeping 1 s on context.clock", configuration: churn) { benchmark in
        let actomaton = Actomaton<CounterAction, Int>(state: 0, reducer: counterReducer)
        await measureChurn(benchmark) { await actomaton.send(.startLatest)! }
        let completed = await actomaton.state
        precondition(completed == 1, "only the last one completes")
    }

    Benchmark("churn: runNewest(1), effects in Task.sleep(for: 1 s)", configuration: churn) { benchmark in
        let actomaton = Actomaton<CounterAction, Int>(state: 0, reducer: counterReducer)
        await measureChurn(benchmark) { await actomaton.send(.startLatestTaskSleep)! }
        let completed = await actomaton.state
        precondition(completed == 1, "only the last one completes")
    }
}

// MARK: Bursts: the resident set after each of six bursts, with the reclaimer and without

/// Six bursts of `effectCount` effects on one machine, alive throughout: the resident set at
/// the start, the peak (VmHWM) and the resident set 1.5 s after bursts 1, 3 and 6, the heap
/// in use after the last. With the reclaimer off, the same runs keep what glibc keeps.
func registerBurstBenchmarks() {
    let bursts = Benchmark.Configuration.perWorkload(
        metrics: [.wallClock, .throughput, firstBurstRate, residentAtStart, peakResident, residentAfterBurst1,
                  residentAfterBurst3, residentAfterBurst6, heapAfterBursts],
        // A warm-up would run six bursts before the measured ones, and leave its memory behind.
        warmupIterations: 0,
        maxDuration: .seconds(60),
        maxIterations: 1
    )
    for reclaims in [true, false] {
        let variant = reclaims ? "" : ", reclaimer off (baseline)"
        Benchmark("bursts: 6 x 100,000 single-async effects all at once\(variant)", configuration: bursts) { benchmark in
            let actomaton = Actomaton<CounterAction, Int>(state: 0, reducer: counterReducer)
            await measureBursts(benchmark, reclaims: reclaims) {
                var tasks: [Task<Void, Error>] = []
                tasks.reserveCapacity(effectCount)
                for _ in 0..<effectCount {
                    if let task = await actomaton.send(.startEffect) { tasks.append(task) }
                }
                for task in tasks { try? await task.value }
            }
            let delivered = await actomaton.state
            precondition(delivered == 6 * effectCount, "every effect delivers once")
        }
        Benchmark("bursts: 6 x 100,000 runNewest(1) sends, 1 s sleeps on context.clock\(variant)", configuration: bursts) { benchmark in
            let actomaton = Actomaton<CounterAction, Int>(state: 0, reducer: counterReducer)
            await measureBursts(benchmark, reclaims: reclaims) {
                var last: Task<Void, Error>?
                for _ in 0..<effectCount { last = await actomaton.send(.startLatest) }
                try? await last?.value
            }
            let completed = await actomaton.state
            precondition(completed == 6, "only the last one of each burst completes")
        }
    }
}

/// Runs `burst` six times; records the resident set at the start, the peak over the bursts,
/// the resident set 1.5 s after bursts 1, 3 and 6 (the reclaimer's two trims come 0.1 s and
/// 1.1 s after a burst's end), and the heap in use at the end. The first burst's effects per
/// second are a figure of their own: the framework's timed section is left empty, as the JMH
/// export drops a benchmark whose timed iteration takes over a second.
func measureBursts(_ benchmark: Benchmark, reclaims: Bool, burst: () async -> Void) async {
    benchmark.startMeasurement()
    benchmark.stopMeasurement()
    EffectMemoryReclaimer.shared.configuration.isEnabled = reclaims
    MemoryStats.resetPeak()
    benchmark.measurement(residentAtStart, MemoryStats.resident)
    for number in 1...6 {
        let start = ContinuousClock.now
        await burst()
        if number == 1 {
            benchmark.measurement(firstBurstRate, Int(Double(effectCount) / ((ContinuousClock.now - start) / .seconds(1))))
        }
        try? await Task.sleep(for: .milliseconds(1_500))
        switch number {
        case 1: benchmark.measurement(residentAfterBurst1, MemoryStats.resident)
        case 3: benchmark.measurement(residentAfterBurst3, MemoryStats.resident)
        case 6: benchmark.measurement(residentAfterBurst6, MemoryStats.resident)
        default: break
        }
    }
    benchmark.measurement(peakResident, MemoryStats.peakResident)
    benchmark.measurement(heapAfterBursts, MemoryStats.heapInUse)
    EffectMemoryReclaimer.shared.configuration.isEnabled = true
    // The benchmarks share a process: leave the next one what it would find after a trim.
    MemoryStats.trim()
}

let firstBurstRate = BenchmarkMetric.custom("effects per second, first burst", useScalingFactor: false)
let residentAtStart = BenchmarkMetric.custom("resident at start", useScalingFactor: false)
let peakResident = BenchmarkMetric.custom("resident peak (VmHWM)", useScalingFactor: false)
let residentAfterBurst1 = BenchmarkMetric.custom("resident after burst 1", useScalingFactor: false)
let residentAfterBurst3 = BenchmarkMetric.custom("resident after burst 3", useScalingFactor: false)
let residentAfterBurst6 = BenchmarkMetric.custom("resident after burst 6", useScalingFactor: false)
let heapAfterBursts = BenchmarkMetric.custom("heap in use after the bursts", useScalingFactor: false)

// MARK: Memory measurements

/// Heap bytes in use per piece of work in flight (the C allocator's count).
let heapPerTask = BenchmarkMetric.custom("heap bytes per in-flight task", useScalingFactor: false)
/// Resident bytes per piece of work in flight (VmRSS, after trimming the allocator first).
let residentPerTask = BenchmarkMetric.custom("resident bytes per in-flight task", useScalingFactor: false)
/// Heap bytes still in use once the work has ended (or was cancelled), the machine alive.
let heapRetained = BenchmarkMetric.custom("heap bytes retained after", useScalingFactor: false)
/// How long after its sleep's end the churn's last effect completes, in microseconds.
let lastEffectLate = BenchmarkMetric.custom("last effect late (us)", useScalingFactor: false)

/// Starts `effectCount` pieces of work with `start`, all in flight at once; once each has
/// arrived at its wait, records the heap and resident memory per piece; ends them (opens the
/// gate, or cancels them), and records the heap still held once they are over.
func measureInFlight(
    _ benchmark: Benchmark, gate: Gate = Gate(), cancelled: Bool,
    start: (Gate) async -> Task<Void, Error>
) async {
    MemoryStats.trim()
    let heapBefore = MemoryStats.heapInUse, residentBefore = MemoryStats.resident
    var tasks: [Task<Void, Error>] = []
    tasks.reserveCapacity(effectCount)
    for _ in 0..<effectCount { tasks.append(await start(gate)) }
    while gate.arrived < effectCount { await Task.yield() }
    // The last ones to arrive reach their suspension.
    for _ in 0..<100 { await Task.yield() }
    benchmark.measurement(heapPerTask, (MemoryStats.heapInUse - heapBefore) / effectCount)
    benchmark.measurement(residentPerTask, (MemoryStats.resident - residentBefore) / effectCount)
    if cancelled {
        for task in tasks { task.cancel() }
    } else {
        gate.open()
    }
    for task in tasks { _ = try? await task.value }
    tasks = []
    benchmark.measurement(heapRetained, max(0, MemoryStats.heapInUse - heapBefore))
}

/// Sends `effectCount` pieces of work with `start`, each cancelling the one before (the bare
/// tasks by hand: `cancelsTheLast`); waits for the last, and records how late it completed
/// after its 1 s sleep and the heap still held.
func measureChurn(_ benchmark: Benchmark, cancelsTheLast: Bool = false, start: () async -> Task<Void, Error>) async {
    MemoryStats.trim()
    let heapBefore = MemoryStats.heapInUse
    var last: Task<Void, Error>?
    // The time and peak memory are those of the sends: an iteration timed past 2 s would have
    // no throughput, and the JMH export drops such a benchmark.
    benchmark.startMeasurement()
    for _ in 0..<effectCount {
        if cancelsTheLast { last?.cancel() }
        last = await start()
    }
    benchmark.stopMeasurement()
    let sent = ContinuousClock.now
    try? await last?.value
    let late = sent.duration(to: .now) - .seconds(1)
    last = nil
    benchmark.measurement(lastEffectLate, Int(late / .microseconds(1)))
    benchmark.measurement(heapRetained, max(0, MemoryStats.heapInUse - heapBefore))
}

/// Work that waits until the benchmark opens the gate, and counts the arrivals of work that
/// waits for something else.
final class Gate: Sendable {
    private let state = Mutex<(waiters: [CheckedContinuation<Void, Never>], opened: Bool)>(([], false))
    private let arrivals = Atomic<Int>(0)

    /// How many pieces of work arrived at their wait.
    var arrived: Int { arrivals.load(ordering: .acquiring) }

    /// Counts one arrival.
    func arrive() {
        arrivals.add(1, ordering: .releasing)
    }

    /// Arrives, and waits for ``open()``.
    func wait() async {
        await withCheckedContinuation { continuation in
            let opened = state.withLock { state in
                if !state.opened { state.waiters.append(continuation) }
                return state.opened
            }
            arrive()
            if opened { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.opened = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// The counter, whose `.startEffect` effect waits for `gate` before it delivers, and whose
/// `.startSleep` effect arrives at `gate` before it sleeps.
func memoryReducer(_ gate: Gate) -> Reducer<CounterAction, Int, Void> {
    Reducer { action, count, _ in
        switch action {
        case .startEffect:
            Effect {
                await gate.wait()
                return .increment
            }
        case .startSleep:
            Effect { context in
                gate.arrive()
                try await context.clock.sleep(for: .seconds(3600))
                return .increment
            }
        default:
            CounterReducer().reduce(action, into: &count, environment: ())
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
    case increment, startEffect, startSleep, startLatest, startLatestTaskSleep, stopLatest
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
        case .startSleep:
            return Effect { context in
                try await context.clock.sleep(for: .seconds(3600))
                return .increment
            }
        case .startLatest:
            return Effect(id: LatestID(), queue: Latest()) { context in
                try await context.clock.sleep(for: .seconds(1))
                return .increment
            }
        case .startLatestTaskSleep:
            return Effect(id: LatestID(), queue: Latest()) {
                try await Task.sleep(for: .seconds(1))
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
