// The csv wasm plugin: the shared reducer of Plugins/CSVTokenizerPlugin/Sheet.swift (which
// csv.so exports with ActomatonPluginKit), exported with the wasm kit.
import ActomatonPluginCore
import ActomatonWasmKit

let csv = WasmPlugin(
    name: "csv",
    version: "1.0.0",
    summary: "The streaming RFC 4180 tokenizer from CSVExample (Embedded Swift, WebAssembly)",
    reducer: sheetReducer,
    initialState: Sheet(),
    actions: SheetAction.vocabulary,
    requests: { $0.call }
)

@_cdecl("actomaton_wasm_plugin")
func plugin() -> UnsafeMutableRawPointer { csv.handle }

@_expose(wasm, "actomaton_action_byte") @_cdecl("actomaton_action_byte")
func byte(_ value: UInt8) -> Int32 { csv.send(.byte(value)) }

@_expose(wasm, "actomaton_action_feed") @_cdecl("actomaton_action_feed")
func feed(_ text: UInt32, _ length: UInt32) -> Int32 { csv.send(.feed(wasmString(text, length))) }

@_expose(wasm, "actomaton_action_end") @_cdecl("actomaton_action_end")
func end() -> Int32 { csv.send(.end) }
