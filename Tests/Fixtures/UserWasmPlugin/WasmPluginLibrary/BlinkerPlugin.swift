// The kit's few lines that make Sources/Blinker a .wasm plugin, with Blinker compiled as a
// module of its own (`--library Blinker=Sources/Blinker`, or `make wasm-plugin LIBRARY=…`).
import ActomatonPluginCore
import ActomatonWasmKit
import Blinker

let plugin = WasmPlugin(
    name: "blinker", version: "0.1.0", summary: "A blinking light (a user's own package)",
    reducer: blinker, initialState: Light(),
    actions: [
        .action("start", "interval_ms") { (interval: UInt32) in .start(intervalMilliseconds: interval) },
        .action("toggle") { .toggle },
        .action("stop") { .stop },
    ],
    requests: { $0.call }
)

@_cdecl("actomaton_wasm_plugin")
func handle() -> UnsafeMutableRawPointer { plugin.handle }

@_expose(wasm, "actomaton_action_start") @_cdecl("actomaton_action_start")
func start(_ interval: UInt32) -> Int32 { plugin.send(.start(intervalMilliseconds: interval)) }

@_expose(wasm, "actomaton_action_toggle") @_cdecl("actomaton_action_toggle")
func toggle() -> Int32 { plugin.send(.toggle) }

@_expose(wasm, "actomaton_action_stop") @_cdecl("actomaton_action_stop")
func stop() -> Int32 { plugin.send(.stop) }
