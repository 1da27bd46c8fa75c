// swift-tools-version: 6.1
// The benchmarks live in their own package so users of Actomaton never build their
// dependencies. Run them with `make bench` from the repository root.
import PackageDescription
import class Foundation.ProcessInfo
import struct Foundation.URL

// A path dependency is named after its folder, which is whatever the checkout is called.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "ActomatonBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/swiftwasm/WasmKit", exact: "0.4.2"),
        // The CSV parsers users already have, measured beside the CSVScanner machine.
        .package(url: "https://github.com/swiftcsv/SwiftCSV", exact: "0.10.0"),
        .package(url: "https://github.com/yaslab/CSV.swift", exact: "2.5.2"),
    ],
    targets: [
        // Inputs shared by the benchmarks.
        .target(name: "BenchmarkSupport", dependencies: ["CHeapStats", .product(name: "Benchmark", package: "benchmark")]),
        // The C allocator's counters (glibc `mallinfo2`), for the memory benchmarks.
        .target(name: "CHeapStats"),
        .executableTarget(
            name: "CoreBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "ActomatonCore", package: root),
                .product(name: "CSVExample", package: root),
                .product(name: "PlatformerExample", package: root),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SwiftCSV", package: "SwiftCSV"),
                .product(name: "CSV", package: "CSV.swift"),
            ],
            path: "Benchmarks/CoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The async layer: Actomaton's send, effect throughput, cancellation churn.
        .executableTarget(
            name: "AsyncBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Actomaton", package: root),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/AsyncBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The plugin host: a plugin action through libffi against the same reducer compiled in,
        // and plugin load time. Depends on the C counter plugin's product so its .so is built
        // beside the executable.
        .executableTarget(
            name: "HostBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Actomaton", package: root),
                .product(name: "ActomatonHost", package: root),
                .product(name: "CounterPlugin", package: root),
                .product(name: "LoginPlugin", package: root),
                .product(name: "CSVTokenizerPlugin", package: root),
                .product(name: "ActomatonPluginCore", package: root),
                // Built beside the benchmark: the worker process of isolated plugins (no server
                // dependency, unlike actomaton-host).
                .product(name: "actomaton-worker", package: root),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/HostBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The CSV tokenizer in csv.wasm (`make wasm-build`) under WasmKit, against the same code native.
        .executableTarget(
            name: "WasmBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "ActomatonCore", package: root),
                .product(name: "CSVExample", package: root),
                .product(name: "WasmKit", package: "WasmKit"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/WasmBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
