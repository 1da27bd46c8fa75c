import ActomatonCore

/// The rules of tic-tac-toe as a Mealy machine: moves in, verdicts out.
///
/// The board is two 9-bit masks, so the state is a few bytes and a move allocates nothing.
/// An illegal move (outside the board, on a taken square, after the game is over) is
/// answered with ``Reply/rejected(_:)`` and leaves the state exactly as it was.
///
/// ```swift
/// var game = MealyMachine(state: TicTacToe.State(), reducer: TicTacToe(),
///                         effectManager: ReplyEffectManager())
/// game.send(.place(row: 1, column: 1)) // .moved(.x, row: 1, column: 1)
/// game.send(.place(row: 1, column: 1)) // .rejected(.squareTaken)
/// ```
public struct TicTacToe: MealyReducerProtocol, Sendable {
    /// A player, and the mark they put on the board.
    public enum Player: UInt8, Equatable, Sendable {
        /// Plays first.
        case x = 1
        /// Plays second.
        case o = 2

        /// The other player.
        @inlinable
        public var opponent: Player { self == .x ? .o : .x }
    }

    /// How a finished game ended.
    public enum Outcome: Equatable, Sendable {
        /// `player` has three in a row.
        case won(Player)
        /// The board is full and nobody won.
        case draw
    }

    /// Input to the game.
    public enum Action: Equatable, Sendable {
        /// The player to move marks the square at `row`, `column` (each 0, 1 or 2).
        case place(row: Int, column: Int)
        /// Clears the board for a new game; X moves first.
        case restart
    }

    /// Why a move was refused.
    public enum IllegalMove: UInt8, Equatable, Sendable {
        /// The row or column is not 0, 1 or 2.
        case outsideBoard = 1
        /// The square already has a mark.
        case squareTaken = 2
        /// The game is already won or drawn; send ``Action/restart``.
        case gameOver = 3
    }

    /// The game's answer to one action.
    public enum Reply: Equatable, Sendable {
        /// `player` marked the square; the game goes on.
        case moved(Player, row: Int, column: Int)
        /// The move ended the game.
        case finished(Outcome)
        /// The move was refused; the state is unchanged.
        case rejected(IllegalMove)
        /// The board was cleared.
        case restarted
    }

    /// The board, whose turn it is, and the outcome once there is one.
    public struct State: Equatable, Sendable {
        /// Squares marked by X: bit `row * 3 + column`.
        public var xSquares: UInt16 = 0
        /// Squares marked by O: bit `row * 3 + column`.
        public var oSquares: UInt16 = 0
        /// Whose move it is.
        public var nextPlayer: Player = .x
        /// How the game ended, or `nil` while it goes on.
        public var outcome: Outcome?

        /// An empty board, X to move.
        public init() {}

        /// The mark on the square at `row`, `column`, if any.
        @inlinable
        public subscript(row: Int, column: Int) -> Player? {
            let bit: UInt16 = 1 << UInt16(row * 3 + column)
            if xSquares & bit != 0 { return .x }
            if oSquares & bit != 0 { return .o }
            return nil
        }
    }

    /// Whether `marks` hold one of the eight lines of three (rows, columns, diagonals).
    @inlinable
    static func hasLine(_ marks: UInt16) -> Bool {
        func has(_ line: UInt16) -> Bool { marks & line == line }
        return has(0b000_000_111) || has(0b000_111_000) || has(0b111_000_000)
            || has(0b001_001_001) || has(0b010_010_010) || has(0b100_100_100)
            || has(0b100_010_001) || has(0b001_010_100)
    }

    /// Creates the rules.
    @inlinable
    public init() {}

    @inlinable
    public func reduce(_ action: Action, into state: inout State, environment: Void) -> Reply {
        guard case let .place(row, column) = action else {
            state = State()
            return .restarted
        }
        guard state.outcome == nil else { return .rejected(.gameOver) }
        guard (0..<3).contains(row), (0..<3).contains(column) else { return .rejected(.outsideBoard) }
        let bit: UInt16 = 1 << UInt16(row * 3 + column)
        guard (state.xSquares | state.oSquares) & bit == 0 else { return .rejected(.squareTaken) }

        let player = state.nextPlayer
        if player == .x { state.xSquares |= bit } else { state.oSquares |= bit }
        state.nextPlayer = player.opponent

        let marks = player == .x ? state.xSquares : state.oSquares
        if Self.hasLine(marks) {
            state.outcome = .won(player)
            return .finished(.won(player))
        }
        if state.xSquares | state.oSquares == 0b111_111_111 {
            state.outcome = .draw
            return .finished(.draw)
        }
        return .moved(player, row: row, column: column)
    }
}
