import ActomatonCore
import TicTacToeExample
import Testing

private func newGame() -> MealyMachine<TicTacToe, ReplyEffectManager<TicTacToe.Action, TicTacToe.Reply>> {
    MealyMachine(state: TicTacToe.State(), reducer: TicTacToe(), effectManager: ReplyEffectManager())
}

@Suite("Tic-tac-toe rules")
struct TicTacToeTests {
    @Test func playersAlternateAndXWinsTheTopRow() {
        var game = newGame()
        #expect(game.send(.place(row: 0, column: 0)) == .moved(.x, row: 0, column: 0))
        #expect(game.send(.place(row: 1, column: 0)) == .moved(.o, row: 1, column: 0))
        #expect(game.send(.place(row: 0, column: 1)) == .moved(.x, row: 0, column: 1))
        #expect(game.send(.place(row: 1, column: 1)) == .moved(.o, row: 1, column: 1))
        #expect(game.send(.place(row: 0, column: 2)) == .finished(.won(.x)))
        #expect(game.state.outcome == .won(.x))
        #expect(game.state[0, 2] == .x)
        #expect(game.state[1, 1] == .o)
        #expect(game.state[2, 2] == nil)
    }

    @Test func oWinsADiagonal() {
        var game = newGame()
        for (row, column) in [(0, 1), (0, 2), (1, 0), (1, 1), (2, 2)] {
            _ = game.send(.place(row: row, column: column))
        }
        #expect(game.send(.place(row: 2, column: 0)) == .finished(.won(.o)))
    }

    @Test func aFullBoardWithoutALineIsADraw() {
        var game = newGame()
        let moves = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 0), (1, 2), (2, 1), (2, 0)]
        for (row, column) in moves {
            #expect(!(game.send(.place(row: row, column: column)).isFinished))
        }
        #expect(game.send(.place(row: 2, column: 2)) == .finished(.draw))
    }

    @Test(arguments: [
        (TicTacToe.Action.place(row: 1, column: 1), TicTacToe.IllegalMove.squareTaken),
        (.place(row: 3, column: 0), .outsideBoard),
        (.place(row: 0, column: -1), .outsideBoard),
        (.place(row: Int.max, column: Int.min), .outsideBoard),
    ])
    func illegalMovesAreRejectedAndChangeNothing(move: TicTacToe.Action, reason: TicTacToe.IllegalMove) {
        var game = newGame()
        _ = game.send(.place(row: 1, column: 1))
        let before = game.state
        #expect(game.send(move) == .rejected(reason))
        #expect(game.state == before)
    }

    @Test func noMoveAfterTheGameIsOverUntilRestart() {
        var game = newGame()
        for (row, column) in [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)] {
            _ = game.send(.place(row: row, column: column))
        }
        let finished = game.state
        #expect(game.send(.place(row: 2, column: 2)) == .rejected(.gameOver))
        #expect(game.state == finished)
        #expect(game.send(.restart) == .restarted)
        #expect(game.state == TicTacToe.State())
        #expect(game.send(.place(row: 2, column: 2)) == .moved(.x, row: 2, column: 2))
    }
}

extension TicTacToe.Reply {
    var isFinished: Bool {
        if case .finished = self { true } else { false }
    }
}
