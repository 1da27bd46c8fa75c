import ActomatonCore
import ActomatonPluginCore
import TicTacToeExample

// The plugin's reducer and state, shared by tictactoe.so (TicTacToePlugin.swift) and the
// tic-tac-toe wasm plugin (wasm/plugins/TicTacToePlugin.swift): the core's rules, unchanged,
// with a rejected move turned into a refused action, which the host reports with the state
// unchanged.

/// The game as the plugin stores it: the core's state.
public struct Game: Sendable, CustomStringConvertible {
    public var core = TicTacToe.State()

    public init() {}

    /// The board as JSON: `{"board":["X..",".O.","..."],"next":"X","outcome":null}`.
    public var description: String {
        let rows = (0..<3).map { row in
            JSONText.string(String(decoding: (0..<3).map { column in
                core[row, column].map { $0 == .x ? UInt8(ascii: "X") : UInt8(ascii: "O") } ?? UInt8(ascii: ".")
            }, as: UTF8.self))
        }
        let outcome: String = switch core.outcome {
        case nil: "null"
        case .draw?: JSONText.string("draw")
        case let .won(player)?: JSONText.string(player == .x ? "X won" : "O won")
        }
        return JSONText.object([
            ("board", JSONText.array(rows)),
            ("next", JSONText.string(core.nextPlayer == .x ? "X" : "O")),
            ("outcome", outcome),
        ])
    }
}

extension Game: PluginSnapshotCodable {
    public func encode(to writer: inout PluginSnapshotWriter) {
        writer.write(UInt8(1))
        writer.write(core.xSquares)
        writer.write(core.oSquares)
        writer.write(core.nextPlayer.rawValue)
        switch core.outcome {
        case nil: writer.write(UInt8(0))
        case let .won(player)?: writer.write(player.rawValue)
        case .draw?: writer.write(UInt8(3))
        }
    }

    public init(from reader: inout PluginSnapshotReader) throws(PluginSnapshotError) {
        guard try reader.read(UInt8.self) == 1 else { throw PluginSnapshotError("not a tic-tac-toe snapshot (unknown version)") }
        core.xSquares = try reader.read(UInt16.self)
        core.oSquares = try reader.read(UInt16.self)
        guard core.xSquares < 512, core.oSquares < 512, core.xSquares & core.oSquares == 0 else {
            throw PluginSnapshotError("the snapshot holds an impossible board")
        }
        guard let next = TicTacToe.Player(rawValue: try reader.read(UInt8.self)) else {
            throw PluginSnapshotError("the snapshot holds an unknown player")
        }
        core.nextPlayer = next
        switch try reader.read(UInt8.self) {
        case 0: core.outcome = nil
        case 3: core.outcome = .draw
        case let raw:
            guard let player = TicTacToe.Player(rawValue: raw) else { throw PluginSnapshotError("the snapshot holds an unknown outcome") }
            core.outcome = .won(player)
        }
    }
}

extension TicTacToe.Action {
    /// The plugin's vocabulary, for both kits.
    public static let vocabulary: [PluginActionEntry<TicTacToe.Action>] = [
        .action("place", "row", "column") { (row: UInt8, column: UInt8) in .place(row: Int(row), column: Int(column)) },
        .action("restart") { .restart },
    ]

    /// The vocabulary entry and arguments of the action (both kits' `requests` mapping).
    public var call: PluginCall {
        switch self {
        case let .place(row, column): PluginCall("place", .uint(UInt64(clamping: row)), .uint(UInt64(clamping: column)))
        case .restart: PluginCall("restart")
        }
    }
}

/// The plugin's reducer.
public let gameReducer = MealyReducer(TicTacToe())
    .contramap(state: StateLens<Game, TicTacToe.State>(get: { $0.core }, modify: { game, body in body(&game.core) }))
    .map(output: { (reply: TicTacToe.Reply) -> PluginEffect<TicTacToe.Action> in
        switch reply {
        case .rejected(.outsideBoard): .fail("that square is outside the board (rows and columns are 0, 1, 2)")
        case .rejected(.squareTaken): .fail("that square is taken")
        case .rejected(.gameOver): .fail("the game is over; send restart")
        case .moved, .finished, .restarted: .empty
        }
    })

extension Game {
    /// The game's phases as Graphviz DOT, for both kits: the rules are not a transition table,
    /// so the diagram is drawn by hand, one node per phase (``phase``).
    public static let diagramDOT = """
        digraph "tictactoe" {
            rankdir=LR;
            node [shape=box, style=rounded];
            "[*]" [shape=point, label=""];
            "X won" [shape=doublecircle];
            "O won" [shape=doublecircle];
            "draw" [shape=doublecircle];
            "[*]" -> "X to move";
            "X to move" -> "O to move" [label="place"];
            "O to move" -> "X to move" [label="place"];
            "X to move" -> "X won" [label="place (a line of three)"];
            "O to move" -> "O won" [label="place (a line of three)"];
            "X to move" -> "draw" [label="place (the last square)"];
            "O to move" -> "X to move" [label="restart"];
            "X won" -> "X to move" [label="restart"];
            "O won" -> "X to move" [label="restart"];
            "draw" -> "X to move" [label="restart"];
        }

        """

    /// The phase of the game, a node of ``diagramDOT``: `X to move`, `O to move`, `X won`,
    /// `O won` or `draw`.
    public var phase: String {
        switch core.outcome {
        case nil: core.nextPlayer == .x ? "X to move" : "O to move"
        case .draw?: "draw"
        case let .won(player)?: player == .x ? "X won" : "O won"
        }
    }

    /// The diagram both kits export: ``diagramDOT``, with the game's ``phase`` as its one active node.
    public static var diagram: PluginDiagram<Game> {
        PluginDiagram(dot: diagramDOT) { game in [game.phase] }
    }
}
