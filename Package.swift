// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Actomaton",
    products: [
        .library(name: "ActomatonCore", targets: ["ActomatonCore"]),
        .library(name: "CSVExample", targets: ["CSVExample"]),
        .library(name: "TicTacToeExample", targets: ["TicTacToeExample"]),
    ],
    targets: [
        // Layer 1: the Embedded-clean core. Depends on nothing.
        .target(name: "ActomatonCore"),

        // Example state machines, written once against the core only.
        .target(name: "CSVExample", dependencies: ["ActomatonCore"], path: "Plugins/CSVExample"),
        .target(name: "TicTacToeExample", dependencies: ["ActomatonCore"], path: "Plugins/TicTacToeExample"),

        .testTarget(name: "ActomatonCoreTests", dependencies: ["ActomatonCore"]),
        .testTarget(name: "CSVExampleTests", dependencies: ["CSVExample"]),
        .testTarget(name: "TicTacToeExampleTests", dependencies: ["TicTacToeExample"]),
    ],
    swiftLanguageModes: [.v6]
)
