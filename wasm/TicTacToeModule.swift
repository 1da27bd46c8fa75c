// tictactoe.wasm: the tic-tac-toe rules of Plugins/TicTacToeExample behind a C ABI.
// The ABI is documented in actomaton_wasm.h.

import ActomatonCore
import TicTacToeExample

nonisolated(unsafe) var game = MealyMachine(state: TicTacToe.State(), reducer: TicTacToe(), effectManager: ReplyEffectManager())

@_expose(wasm, "am_abi_version") @_cdecl("am_abi_version")
func abiVersion() -> Int32 { WasmABI.version }

@_expose(wasm, "ttt_reset") @_cdecl("ttt_reset")
func tttReset() -> Int32 {
    game = MealyMachine(state: TicTacToe.State(), reducer: TicTacToe(), effectManager: ReplyEffectManager())
    return WasmABI.ok
}

/// Action 0: place a mark at (row, column); action 1: restart. Returns the reply code.
@_expose(wasm, "ttt_send") @_cdecl("ttt_send")
func tttSend(_ action: Int32, _ row: Int32, _ column: Int32) -> Int32 {
    let reply: TicTacToe.Reply
    switch action {
    case 0: reply = game.send(.place(row: Int(row), column: Int(column)))
    case 1: reply = game.send(.restart)
    default: return WasmABI.unknownAction
    }
    switch reply {
    case .moved: return 1
    case .finished(.won(.x)): return 2
    case .finished(.won(.o)): return 3
    case .finished(.draw): return 4
    case .restarted: return 5
    case let .rejected(reason): return -10 - Int32(reason.rawValue)
    }
}

/// 0 for an empty square, 1 for X, 2 for O; bad argument outside the board.
@_expose(wasm, "ttt_square") @_cdecl("ttt_square")
func tttSquare(_ row: Int32, _ column: Int32) -> Int32 {
    guard (0..<3).contains(row), (0..<3).contains(column) else { return WasmABI.badArgument }
    return Int32(game.state[Int(row), Int(column)]?.rawValue ?? 0)
}

/// 1 when X is to move, 2 when O is.
@_expose(wasm, "ttt_next_player") @_cdecl("ttt_next_player")
func tttNextPlayer() -> Int32 { Int32(game.state.nextPlayer.rawValue) }

/// 0 while the game goes on, 1 when X won, 2 when O won, 3 for a draw.
@_expose(wasm, "ttt_outcome") @_cdecl("ttt_outcome")
func tttOutcome() -> Int32 {
    switch game.state.outcome {
    case nil: 0
    case .won(.x): 1
    case .won(.o): 2
    case .draw: 3
    }
}
