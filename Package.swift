// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Actomaton",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ActomatonCore", targets: ["ActomatonCore"]),
        .library(name: "ActomatonEffect", targets: ["ActomatonEffect"]),
        .library(name: "Actomaton", targets: ["Actomaton"]),
        .library(name: "CSVExample", targets: ["CSVExample"]),
        .library(name: "TicTacToeExample", targets: ["TicTacToeExample"]),
        // Debugging and testing products:
        // Plugin host products:
    ],
    dependencies: [
        .package(url: "https://github.com/pointfreeco/swift-case-paths", from: "1.5.0"),
        .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.0.0"),
        // Runs the wasm modules of `make wasm-build` in the wasm tests.
        .package(url: "https://github.com/swiftwasm/WasmKit", exact: "0.4.2"),
        // Debugging and testing dependencies:
        // Plugin host dependencies:
    ],
    targets: [
        // Layer 1: the Embedded-clean core. Depends on nothing.
        .target(name: "ActomatonCore"),

        // Layer 2: the async effect manager.
        .target(name: "ActomatonEffect", dependencies: ["ActomatonCore"]),
        // Layer 2: the Actomaton actor and key-path / case-path composition.
        .target(name: "Actomaton", dependencies: [
            "ActomatonEffect",
            .product(name: "CasePaths", package: "swift-case-paths"),
        ]),

        // Layer 2: debugging and testing.

        // Layer 3: the Linux plugin host.

        // Example state machines, written once against the core only.
        .target(name: "CSVExample", dependencies: ["ActomatonCore"], path: "Plugins/CSVExample"),
        .target(name: "TicTacToeExample", dependencies: ["ActomatonCore"], path: "Plugins/TicTacToeExample"),

        .testTarget(name: "ActomatonCoreTests", dependencies: ["ActomatonCore"]),
        .testTarget(name: "ActomatonEffectTests", dependencies: ["ActomatonEffect"]),
        .testTarget(name: "ActomatonTests", dependencies: ["Actomaton"]),
        .testTarget(name: "CSVExampleTests", dependencies: ["CSVExample"]),
        .testTarget(name: "TicTacToeExampleTests", dependencies: ["TicTacToeExample"]),
        // The modules `make wasm-build` produces, run under WasmKit against the native machines.
        .testTarget(name: "WasmModuleTests", dependencies: [
            "ActomatonCore", "CSVExample", "TicTacToeExample",
            .product(name: "WasmKit", package: "WasmKit"),
        ]),
        // Debugging and testing tests:
        // Plugin host tests:
    ],
    swiftLanguageModes: [.v6]
)
