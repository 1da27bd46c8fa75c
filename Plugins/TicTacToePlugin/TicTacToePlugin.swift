import ActomatonPluginKit
import TicTacToeExample

// tictactoe.so: the shared reducer of Game.swift, exported with ActomatonPluginKit. The wasm
// plugin (wasm/plugins/TicTacToePlugin.swift) exports the same reducer with the wasm kit.

let ticTacToePlugin = PluginExport(
    name: "tictactoe",
    version: "1.0.0",
    summary: "Tic-tac-toe rules from TicTacToeExample (Swift, ActomatonPluginKit)",
    reducer: gameReducer,
    initialState: Game(),
    actions: [
        .action("place", "row", "column") { (row: UInt8, column: UInt8) in .place(row: Int(row), column: Int(column)) },
        .action("restart") { .restart },
    ],
    requests: \.call
)

/// The plugin's entry symbol.
@_cdecl("actomaton_plugin_entry")
public func actomatonPluginEntry(_ hostABIVersion: UInt32) -> UnsafeRawPointer? {
    ticTacToePlugin.manifest
}
