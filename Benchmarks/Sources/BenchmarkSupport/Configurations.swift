import Benchmark

extension Benchmark.Configuration {
    /// Per-operation benchmarks: 1,000 operations per measured iteration (so `report.py`
    /// divides by 1,000), timed in nanoseconds, with allocations counted.
    public static var perOperation: Benchmark.Configuration {
        Benchmark.Configuration(
            metrics: [.wallClock, .throughput, .mallocCountTotal],
            timeUnits: .nanoseconds,
            warmupIterations: 3,
            scalingFactor: .kilo,
            maxDuration: .seconds(2),
            maxIterations: 100_000
        )
    }

    /// Whole-workload benchmarks: each iteration runs the workload once (no scaling), timed in
    /// milliseconds after `warmupIterations` (one by default).
    public static func perWorkload(
        metrics: [BenchmarkMetric],
        warmupIterations: Int = 1,
        maxDuration: Duration,
        maxIterations: Int
    ) -> Benchmark.Configuration {
        Benchmark.Configuration(
            metrics: metrics,
            timeUnits: .milliseconds,
            warmupIterations: warmupIterations,
            scalingFactor: .one,
            maxDuration: maxDuration,
            maxIterations: maxIterations
        )
    }
}
