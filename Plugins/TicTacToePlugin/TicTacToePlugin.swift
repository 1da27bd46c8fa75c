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
    actions: TicTacToe.Action.vocabulary,
    requests: { $0.call },
    diagram: Game.diagram
)

/// The plugin's entry symbol.
@_cdecl("actomaton_plugin_entry")
public func actomatonPluginEntry(_ hostABIVersion: UInt32) -> UnsafeRawPointer? {
    ticTacToePlugin.manifest
}
