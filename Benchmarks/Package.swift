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
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "CoreBenchmarks",
            dependencies: [
                .product(name: "ActomatonCore", package: root),
                .product(name: "CSVExample", package: root),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
