// The lamp as a .wasm plugin: the vocabulary, reducer and state of
// Tests/ActomatonPluginKitTests/Lamp.swift (which the kit's tests export as a .so plugin
// with PluginExport), exported with the wasm kit. wasm/build.sh builds it into
// .build/wasm/fixtures/lamp.wasm; LampWasmPluginTests run it. Not part of any SwiftPM target.
import ActomatonPluginCore
import ActomatonWasmKit

let lamp = WasmPlugin(
    name: "lamp",
    version: "1.0.0",
    reducer: lampReducer,
    initialState: Lamp(),
    actions: lampVocabulary,
    requests: { $0.call }
)

@_cdecl("actomaton_wasm_plugin")
func plugin() -> UnsafeMutableRawPointer { lamp.handle }

@_expose(wasm, "actomaton_action_toggle") @_cdecl("actomaton_action_toggle")
func toggle() -> Int32 { lamp.send(.toggle) }

@_expose(wasm, "actomaton_action_dim") @_cdecl("actomaton_action_dim")
func dim(_ level: UInt8) -> Int32 { lamp.send(.dim(level: level)) }

@_expose(wasm, "actomaton_action_label") @_cdecl("actomaton_action_label")
func label(_ text: UInt32, _ length: UInt32, _ size: Int32) -> Int32 {
    lamp.send(.label(text: wasmString(text, length), size: size))
}

@_expose(wasm, "actomaton_action_paint") @_cdecl("actomaton_action_paint")
func paint(_ red: UInt8, _ green: UInt8, _ blue: UInt8, _ name: UInt32, _ nameLength: UInt32) -> Int32 {
    lamp.send(.paint(red: red, green: green, blue: blue, name: wasmString(name, nameLength)))
}

@_expose(wasm, "actomaton_action_blink") @_cdecl("actomaton_action_blink")
func blink() -> Int32 { lamp.send(.blink) }
