// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Actomaton",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ActomatonCore", targets: ["ActomatonCore"]),
        .library(name: "ActomatonEffect", targets: ["ActomatonEffect"]),
        .library(name: "Actomaton", targets: ["Actomaton"]),
        .library(name: "ActomatonUI", targets: ["ActomatonUI"]),
        .library(name: "CSVExample", targets: ["CSVExample"]),
        .library(name: "TicTacToeExample", targets: ["TicTacToeExample"]),
        .library(name: "PlatformerExample", targets: ["PlatformerExample"]),
        // Debugging and testing products:
        .library(name: "ActomatonDebugging", targets: ["ActomatonDebugging"]),
        .library(name: "ActomatonTesting", targets: ["ActomatonTesting"]),
        // Plugin host products:
        .library(name: "ActomatonPluginCore", targets: ["ActomatonPluginCore"]),
        .library(name: "ActomatonPluginKit", targets: ["ActomatonPluginKit"]),
        .library(name: "ActomatonPluginContract", targets: ["ActomatonPluginContract"]),
        .library(name: "ActomatonHost", targets: ["ActomatonHost"]),
        .library(name: "ActomatonService", targets: ["ActomatonService"]),
        .library(name: "ActomatonCluster", targets: ["ActomatonCluster"]),
        .executable(name: "actomaton-host", targets: ["actomaton-host"]),
        // The worker process of isolated plugins, without the command line or the service.
        .executable(name: "actomaton-worker", targets: ["actomaton-worker"]),
        // The example plugins, each a shared library for `actomaton-host` (`make plugins`).
        .library(name: "CounterPlugin", type: .dynamic, targets: ["CounterPlugin"]),
        .library(name: "CSVTokenizerPlugin", type: .dynamic, targets: ["CSVTokenizerPlugin"]),
        .library(name: "TicTacToePlugin", type: .dynamic, targets: ["TicTacToePlugin"]),
        .library(name: "LoginPlugin", type: .dynamic, targets: ["LoginPlugin"]),
        .library(name: "PlatformerPlugin", type: .dynamic, targets: ["PlatformerPlugin"]),
        // Broken and probing plugins the host's tests load (not for users).
        .library(name: "ActomatonHostTestFixtures", type: .dynamic, targets: ["ActomatonHostTestFixtures"]),
    ],
    dependencies: [
        .package(url: "https://github.com/pointfreeco/swift-case-paths", from: "1.5.0"),
        .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.0.0"),
        // Runs the wasm modules of `make wasm-build` in the wasm tests.
        .package(url: "https://github.com/swiftwasm/WasmKit", exact: "0.4.2"),
        // Debugging and testing dependencies:
        .package(url: "https://github.com/pointfreeco/swift-custom-dump", from: "1.3.0"),
        // 1.16.2: `LogHandler.log(event:)`, which handlers implement (the older entry point is deprecated).
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/pointfreeco/xctest-dynamic-overlay", from: "1.4.0"),
        // Plugin host dependencies:
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // The service (layer 4) only: the HTTP/WebSocket server, its lifecycle and metrics. None of
        // these reaches the core, the effect layer, the host library or the wasm build.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // TLS for the service (`--tls-certificate`, `--tls-key`).
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.0"),
        // The cluster (layer 4) only: hosts sharing one PostgreSQL database.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // The service: a token's digest names it in journaled receipts (postgres-nio uses it too).
        .package(url: "https://github.com/apple/swift-crypto", "3.0.0"..<"5.0.0"),
        // Documentation: `make docs` (swift package generate-documentation).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
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
        // Layer 2: Store and RouteStore for user interfaces, on Observation (no SwiftUI, UIKit
        // or Combine: it builds and is tested on Linux).
        .target(name: "ActomatonUI", dependencies: ["Actomaton"]),

        // Layer 2: debugging and testing.
        .target(name: "ActomatonDebugging", dependencies: [
            "ActomatonCore",
            .product(name: "CustomDump", package: "swift-custom-dump"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "ActomatonTesting", dependencies: [
            "ActomatonCore",
            "ActomatonEffect",
            .product(name: "Clocks", package: "swift-clocks"),
            .product(name: "CustomDump", package: "swift-custom-dump"),
            .product(name: "IssueReporting", package: "xctest-dynamic-overlay"),
            // Not imported: loaded at run time so that failures reach Swift Testing and XCTest
            // on Linux without users adding it to their test targets.
            .product(name: "IssueReportingTestSupport", package: "xctest-dynamic-overlay"),
        ]),

        // Layer 3: the Linux plugin host.
        // libffi, behind its own shim module: nothing else includes its headers.
        .systemLibrary(name: "CFFI", path: "Sources/CFFI", providers: [.apt(["libffi-dev"])]),
        // The Swift side of libffi: call interfaces and closures, for the host and the kit.
        .target(name: "ActomatonFFI", dependencies: ["CFFI"]),
        // The plugin contract: a C header (and its one helper).
        .target(name: "ActomatonPluginABI"),
        // What both plugin kits share, Embedded-clean: effects, calls, values, snapshot bytes.
        .target(name: "ActomatonPluginCore", dependencies: ["ActomatonCore"]),
        // The contract in Swift, for the host and the kit alike: value types and their C and libffi
        // types, queue policies, bounded C strings, the manifest and its validation.
        .target(name: "ActomatonPluginContract", dependencies: ["ActomatonPluginCore", "ActomatonPluginABI", "CFFI"]),
        // Exports a core reducer as a plugin.
        .target(name: "ActomatonPluginKit", dependencies: ["ActomatonCore", "ActomatonPluginCore", "ActomatonPluginABI", "ActomatonPluginContract", "ActomatonFFI"]),
        // SQLite, for the host's journal (`--state`), behind its own shim module.
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        // prctl and posix_spawn for plugin workers, behind their own shim module.
        .target(name: "CProcessControl"),
        // Loads plugins and runs each on an Actomaton, in-process or in a worker process.
        .target(name: "ActomatonHost", dependencies: [
            "ActomatonEffect", "ActomatonPluginABI", "ActomatonPluginContract", "ActomatonFFI", "CProcessControl", "CSQLite",
            .product(name: "WasmKit", package: "WasmKit"), .product(name: "WasmParser", package: "WasmKit"),
        ]),
        // The command line's input: lines (text and JSON) read with limits and back-pressure, and the session running them.
        .target(name: "HostCommandLine", dependencies: ["ActomatonHost", "ActomatonPluginContract"]),
        // Layer 4: the host as a network service (HTTP and WebSocket, tokens, keyed instances).
        .target(name: "ActomatonService", dependencies: [
            "ActomatonHost", "ActomatonPluginContract", "HostCommandLine", "CProcessControl",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "HummingbirdTLS", package: "hummingbird"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            .product(name: "NIOWebSocket", package: "swift-nio"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "CoreMetrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // Layer 4: hosts sharing one PostgreSQL database: the journal there, leases and fencing.
        .target(name: "ActomatonCluster", dependencies: [
            "ActomatonHost", "ActomatonService",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "actomaton-worker", dependencies: ["ActomatonHost"]),
        .executableTarget(name: "actomaton-host", dependencies: [
            "ActomatonHost",
            "ActomatonService",
            "ActomatonCluster",
            "CProcessControl",
            "HostCommandLine",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The example plugins: four in Swift on the kit, one in plain C.
        .target(name: "CounterPlugin", dependencies: ["ActomatonPluginABI"], path: "Plugins/CounterPlugin"),
        .target(name: "CSVTokenizerPlugin", dependencies: ["ActomatonPluginKit", "ActomatonPluginCore", "CSVExample"], path: "Plugins/CSVTokenizerPlugin"),
        .target(name: "TicTacToePlugin", dependencies: ["ActomatonPluginKit", "ActomatonPluginCore", "TicTacToeExample"], path: "Plugins/TicTacToePlugin"),
        .target(name: "LoginPlugin", dependencies: ["ActomatonPluginKit", "ActomatonPluginCore"], path: "Plugins/LoginPlugin"),
        .target(name: "PlatformerPlugin", dependencies: ["ActomatonPluginKit", "ActomatonPluginCore", "PlatformerExample"], path: "Plugins/PlatformerPlugin"),
        .target(name: "ActomatonHostTestFixtures", dependencies: ["ActomatonPluginABI"], path: "Tests/ActomatonHostTestFixtures"),

        // Example state machines, written once against the core only.
        .target(name: "CSVExample", dependencies: ["ActomatonCore"], path: "Plugins/CSVExample"),
        .target(name: "TicTacToeExample", dependencies: ["ActomatonCore"], path: "Plugins/TicTacToeExample"),
        .target(name: "PlatformerExample", dependencies: ["ActomatonCore"], path: "Plugins/PlatformerExample", exclude: ["README.md"]),

        .target(name: "ComputeOffThePool", path: "Tests/ComputeOffThePool"),
        .testTarget(name: "ActomatonCoreTests", dependencies: ["ActomatonCore", "ComputeOffThePool"]),
        .testTarget(name: "ActomatonEffectTests", dependencies: ["ActomatonEffect", "ComputeOffThePool"]),
        .testTarget(name: "ActomatonTests", dependencies: ["Actomaton"]),
        .testTarget(name: "ActomatonUITests", dependencies: ["ActomatonUI", "Actomaton"]),
        .testTarget(name: "CSVExampleTests", dependencies: ["CSVExample"]),
        .testTarget(name: "TicTacToeExampleTests", dependencies: ["TicTacToeExample"]),
        .testTarget(name: "PlatformerExampleTests", dependencies: ["PlatformerExample", "ActomatonTesting", "ComputeOffThePool"]),
        // The modules `make wasm-build` produces, run under WasmKit against the native machines.
        .testTarget(name: "WasmModuleTests", dependencies: [
            "ActomatonCore", "CSVExample", "TicTacToeExample", "PlatformerExample",
            .product(name: "WasmKit", package: "WasmKit"),
        ]),
        // Debugging and testing tests:
        .testTarget(name: "ActomatonDebuggingTests", dependencies: [
            "ActomatonDebugging",
            "ActomatonTestSupport",
            "Actomaton",
            .product(name: "Clocks", package: "swift-clocks"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "ActomatonTestingTests", dependencies: [
            "ActomatonTesting",
            "Actomaton",
            .product(name: "Clocks", package: "swift-clocks"),
        ]),
        // Plugin host tests:
        .testTarget(name: "ActomatonPluginKitTests", dependencies: ["ActomatonPluginKit", "ActomatonPluginABI"]),
        // What the host's and the service's tests share (not a product).
        .target(name: "ActomatonTestSupport", dependencies: ["ActomatonHost", "TestProcessSignals", .product(name: "Logging", package: "swift-log")],
                path: "Tests/ActomatonTestSupport"),
        // The test process ignores SIGPIPE from its start (a C constructor; not a product).
        .target(name: "TestProcessSignals", path: "Tests/TestProcessSignals"),
        .testTarget(name: "ActomatonHostTests", dependencies: [
            "ActomatonTestSupport",
            "ComputeOffThePool",
            "ActomatonHost",
            "CProcessControl",
            "ActomatonEffect",
            "ActomatonPluginContract",
            "HostCommandLine",
            "CSQLite",
            .product(name: "Clocks", package: "swift-clocks"),
        ], exclude: ["Fixtures/wasm"]),
        .testTarget(name: "ActomatonServiceTests", dependencies: [
            "ActomatonTestSupport", "ComputeOffThePool", "ActomatonService", "ActomatonHost", "ActomatonPluginContract", "CSQLite",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "HummingbirdWSTesting", package: "hummingbird-websocket"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
        ]),
        .testTarget(name: "ActomatonClusterTests", dependencies: [
            "ActomatonCluster", "ActomatonHost", "ActomatonPluginContract", "ActomatonTestSupport",
            .product(name: "PostgresNIO", package: "postgres-nio"),
        ]),
        .testTarget(name: "HostCommandLineTests", dependencies: ["HostCommandLine", "ActomatonPluginContract"]),
        .testTarget(name: "ActomatonPluginCoreTests", dependencies: ["ActomatonPluginCore"]),
        .testTarget(name: "ActomatonPluginContractTests", dependencies: ["ActomatonPluginContract", "ActomatonPluginABI"]),
    ],
    swiftLanguageModes: [.v6]
)
