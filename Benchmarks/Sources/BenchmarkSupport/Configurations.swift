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
}
