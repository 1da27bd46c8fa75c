// swift-tools-version: 6.0
// A user's own package, outside the Actomaton project's targets: a reducer written against
// ActomatonCore and ActomatonPluginCore, which the README shows turning into a .wasm plugin:
//
//     path/to/Actomaton/wasm/actomaton-wasm-plugin --name Blinker --output blinker.wasm \
//         Sources/Blinker WasmPlugin
//
// The same reducer builds natively with `swift build` (it is an ordinary library target).
import PackageDescription

let package = Package(
    name: "UserWasmPlugin",
    products: [.library(name: "Blinker", targets: ["Blinker"])],
    dependencies: [.package(name: "Actomaton", path: "../../..")],
    targets: [
        .target(name: "Blinker", dependencies: [
            .product(name: "ActomatonCore", package: "Actomaton"),
            .product(name: "ActomatonPluginCore", package: "Actomaton"),
        ]),
    ]
)
