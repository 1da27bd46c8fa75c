import ActomatonCore
import ActomatonPluginKit
import TicTacToeExample

// The core's tic-tac-toe rules, unchanged, exported as a plugin. The plugin adds a Codable
// form of the board (for snapshots and `describe`) and turns a rejected move into a refused
// action, which the host reports with the state unchanged.

/// The game as the plugin stores it: the core's state, in a readable JSON form.
struct Game: Codable, Sendable {
    var core = TicTacToe.State()

    init() {}

    private enum CodingKeys: String, CodingKey { case board, next, outcome }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        let rows = (0..<3).map { row in
            String((0..<3).map { column in core[row, column].map { $0 == .x ? "X" : "O" } ?? "." })
        }
        try container.encode(rows, forKey: .board)
        try container.encode(core.nextPlayer == .x ? "X" : "O", forKey: .next)
        switch core.outcome {
        case nil: try container.encodeNil(forKey: .outcome)
        case .draw?: try container.encode("draw", forKey: .outcome)
        case let .won(player)?: try container.encode(player == .x ? "X won" : "O won", forKey: .outcome)
        }
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let rows = try container.decode([String].self, forKey: .board)
        guard rows.count == 3, rows.allSatisfy({ $0.count == 3 }) else {
            throw DecodingError.dataCorruptedError(forKey: .board, in: container, debugDescription: "the board must be 3 rows of 3")
        }
        for (row, text) in rows.enumerated() {
            for (column, mark) in text.enumerated() {
                let bit: UInt16 = 1 << UInt16(row * 3 + column)
                switch mark {
                case "X": core.xSquares |= bit
                case "O": core.oSquares |= bit
                case ".": break
                default: throw DecodingError.dataCorruptedError(forKey: .board, in: container, debugDescription: "unknown mark \(mark)")
                }
            }
        }
        core.nextPlayer = try container.decode(String.self, forKey: .next) == "O" ? .o : .x
        switch try container.decodeIfPresent(String.self, forKey: .outcome) {
        case nil: core.outcome = nil
        case "draw": core.outcome = .draw
        case "X won": core.outcome = .won(.x)
        case "O won": core.outcome = .won(.o)
        case let other?: throw DecodingError.dataCorruptedError(forKey: .outcome, in: container, debugDescription: "unknown outcome \(other)")
        }
    }
}

let gameReducer = MealyReducer(TicTacToe())
    .contramap(state: StateLens<Game, TicTacToe.State>(get: { $0.core }, modify: { game, body in body(&game.core) }))
    .map(output: { (reply: TicTacToe.Reply) -> PluginEffect<TicTacToe.Action> in
        switch reply {
        case .rejected(.outsideBoard): .fail("that square is outside the board (rows and columns are 0, 1, 2)")
        case .rejected(.squareTaken): .fail("that square is taken")
        case .rejected(.gameOver): .fail("the game is over; send restart")
        case .moved, .finished, .restarted: .empty
        }
    })

let ticTacToePlugin = PluginExport(
    name: "tictactoe",
    version: "1.0.0",
    summary: "Tic-tac-toe rules from TicTacToeExample (Swift, ActomatonPluginKit)",
    reducer: gameReducer,
    initialState: Game(),
    actions: [
        .action("place", "row", "column") { (row: UInt8, column: UInt8) in .place(row: Int(row), column: Int(column)) },
        .action("restart") { .restart },
    ]
)

/// The plugin's entry symbol.
@_cdecl("actomaton_plugin_entry")
public func actomatonPluginEntry(_ hostABIVersion: UInt32) -> UnsafeRawPointer? {
    ticTacToePlugin.manifest
}
