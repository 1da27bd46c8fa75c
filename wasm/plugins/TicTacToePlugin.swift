// The tic-tac-toe wasm plugin: the shared reducer of Plugins/TicTacToePlugin/Game.swift
// (which tictactoe.so exports with ActomatonPluginKit), exported with the wasm kit.
import ActomatonPluginCore
import ActomatonWasmKit
import TicTacToeExample

let ticTacToe = WasmPlugin(
    name: "tictactoe",
    version: "1.0.0",
    summary: "Tic-tac-toe rules from TicTacToeExample (Embedded Swift, WebAssembly)",
    reducer: gameReducer,
    initialState: Game(),
    actions: TicTacToe.Action.vocabulary,
    requests: { $0.call },
    diagram: Game.diagram
)

@_cdecl("actomaton_wasm_plugin")
func plugin() -> UnsafeMutableRawPointer { ticTacToe.handle }

@_expose(wasm, "actomaton_action_place") @_cdecl("actomaton_action_place")
func place(_ row: UInt8, _ column: UInt8) -> Int32 { ticTacToe.send(.place(row: Int(row), column: Int(column))) }

@_expose(wasm, "actomaton_action_restart") @_cdecl("actomaton_action_restart")
func restart() -> Int32 { ticTacToe.send(.restart) }
