// The build-time half of the web page (`make web` runs it through wasm/web/build.sh).
//
// Compiled with swiftc against Sources/ActomatonCore, Plugins/CSVExample,
// Plugins/TicTacToeExample and Plugins/PlatformerExample (no SwiftPM), it writes into the
// directory given as its argument:
//
//   tictactoe.dot, csv.dot, platformer.dot
//                           each machine's state diagram, from the core's own DOT export
//   platformer.json         the platformer's state and output names by raw value, which the
//                           page embeds (app.js names the module's numbers with them)
//   native.json             the native machines' answers to the inputs `make web-test` types
//                           and clicks into the page, which the test compares the page's DOM
//                           against
//
// Neither example machine is written as a TransitionTable: both are MealyReducerProtocol structs
// whose state holds more than a phase (a board, a field buffer, a position). So this file writes,
// for each, a small TransitionTable over its phases, and before drawing it checks the table
// against the real reducer: every reachable game position and every move, every tokenizer
// phase and every byte. If the table and the machine ever disagree, the build stops.
//
// The platformer is a Statechart already: its diagram is the chart's own, and its answers are
// the chart's (Platformer.chart(), not the compiled tables platformer.wasm runs).

import ActomatonCore
import CSVExample
import PlatformerExample
import TicTacToeExample

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Tic-tac-toe

/// Where a game is, as the diagram draws it: whose move it is, or how it ended.
enum GamePhase: String, CaseIterable, Equatable, Sendable {
    case xToMove = "X to move"
    case oToMove = "O to move"
    case xWon = "X won"
    case oWon = "O won"
    case draw = "draw"

    init(_ state: TicTacToe.State) {
        switch state.outcome {
        case .won(.x): self = .xWon
        case .won(.o): self = .oWon
        case .draw: self = .draw
        case nil: self = state.nextPlayer == .x ? .xToMove : .oToMove
        }
    }
}

/// An action as the diagram draws it: a `place` is told apart by the game's reply to it.
enum GameInput: String, CaseIterable, Equatable, Sendable {
    case move = "place"
    case winningMove = "place (three in a row)"
    case lastSquare = "place (board full)"
    case refused = "place (refused)"
    case restart = "restart"

    init(_ reply: TicTacToe.Reply) {
        switch reply {
        case .moved: self = .move
        case .finished(.won): self = .winningMove
        case .finished(.draw): self = .lastSquare
        case .rejected: self = .refused
        case .restarted: self = .restart
        }
    }
}

let anyGamePhase: @Sendable (GamePhase) -> Bool = { _ in true }

let ticTacToeTable = TransitionTable<GameInput, GamePhase, String>([
    .restart     | anyGamePhase => .xToMove | "restarted",
    .move        | .xToMove     => .oToMove | "moved",
    .move        | .oToMove     => .xToMove | "moved",
    .winningMove | .xToMove     => .xWon    | "finished: X won",
    .winningMove | .oToMove     => .oWon    | "finished: O won",
    .lastSquare  | .xToMove     => .draw    | "finished: draw",  // the ninth mark is always X's
    .refused     | .xToMove     => .xToMove | "rejected",
    .refused     | .oToMove     => .oToMove | "rejected",
    .refused     | .xWon        => .xWon    | "rejected: game over",
    .refused     | .oWon        => .oWon    | "rejected: game over",
    .refused     | .draw        => .draw    | "rejected: game over",
])

/// Plays every move (and a restart, and a move off the board) from every reachable position,
/// and checks that the table moves the phase exactly as the real rules do.
func checkTicTacToeTable() -> [String] {
    var problems: [String] = []
    var seen = Set<UInt32>()
    var queue = [TicTacToe.State()]
    var firedRows = Set<Int>()
    var actions: [TicTacToe.Action] = [.restart, .place(row: 3, column: 0), .place(row: -1, column: 2)]
    for row in 0..<3 { for column in 0..<3 { actions.append(.place(row: row, column: column)) } }
    func key(_ state: TicTacToe.State) -> UInt32 { UInt32(state.xSquares) | UInt32(state.oSquares) << 9 }
    while let state = queue.popLast() {
        guard seen.insert(key(state)).inserted else { continue }
        for action in actions {
            var next = state
            let reply = TicTacToe().reduce(action, into: &next, environment: ())
            let from = GamePhase(state), input = GameInput(reply), to = GamePhase(next)
            var phase = from
            switch ticTacToeTable.send(input, to: &phase) {
            case .transitioned where phase == to:
                if let index = ticTacToeTable.rows.firstIndex(where: { $0.matches(input, in: from) }) {
                    firedRows.insert(index)
                }
            default:
                problems.append("tic-tac-toe: \(action) in \"\(from.rawValue)\" gives \(reply) and \"\(to.rawValue)\"; the table says \"\(phase.rawValue)\"")
            }
            if case .moved = reply { queue.append(next) }
            if case .finished = reply { queue.append(next) }
        }
    }
    for index in ticTacToeTable.rows.indices where !firedRows.contains(index) {
        problems.append("tic-tac-toe: table row \(index + 1) never fires in a real game")
    }
    return problems
}

// MARK: - CSV tokenizer

/// The class of a byte, as the tokenizer's grammar tells bytes apart.
enum CSVInput: String, CaseIterable, Equatable, Sendable {
    case delimiter = "delimiter"
    case quote = "quote"
    case lineFeed = "LF"
    case carriageReturn = "CR"
    case other = "other byte"
    case endOfInput = "end of input"

    init(_ byte: UInt8, delimiter: UInt8) {
        switch byte {
        case delimiter: self = .delimiter
        case UInt8(ascii: "\""): self = .quote
        case UInt8(ascii: "\n"): self = .lineFeed
        case UInt8(ascii: "\r"): self = .carriageReturn
        default: self = .other
        }
    }
}

extension CSVTokenizer.Phase: @retroactive CaseIterable {
    public static let allCases: [CSVTokenizer.Phase] = [
        .recordStart, .fieldStart, .unquoted, .quoted, .quoteInQuoted, .afterCarriageReturn,
    ]

    var name: String {
        switch self {
        case .recordStart: "record start"
        case .fieldStart: "field start"
        case .unquoted: "unquoted field"
        case .quoted: "quoted field"
        case .quoteInQuoted: "quote in quoted field"
        case .afterCarriageReturn: "after CR"
        }
    }
}

typealias Phase = CSVTokenizer.Phase
let atFieldStart: @Sendable (Phase) -> Bool = { $0 == .recordStart || $0 == .fieldStart || $0 == .afterCarriageReturn }
let endsAField: @Sendable (Phase) -> Bool = { $0 == .unquoted || $0 == .quoteInQuoted }
let anyPhase: @Sendable (Phase) -> Bool = { _ in true }

let csvTable = TransitionTable<CSVInput, Phase, String>([
    .lineFeed       | .afterCarriageReturn => .recordStart        | "(the LF of a CRLF)",
    .quote          | atFieldStart         => .quoted,
    .delimiter      | atFieldStart         => .fieldStart          | "empty field",
    .lineFeed       | atFieldStart         => .recordStart         | "empty field, end of record",
    .carriageReturn | atFieldStart         => .afterCarriageReturn | "empty field, end of record",
    .other          | atFieldStart         => .unquoted,
    .quote          | .unquoted            => .unquoted            | "error: quote in unquoted field",
    .other          | .unquoted            => .unquoted,
    .quote          | .quoted              => .quoteInQuoted,
    .delimiter      | .quoted              => .quoted,
    .lineFeed       | .quoted              => .quoted,
    .carriageReturn | .quoted              => .quoted,
    .other          | .quoted              => .quoted,
    .quote          | .quoteInQuoted       => .quoted              | "(a doubled quote: one quote)",
    .other          | .quoteInQuoted       => .unquoted            | "error: byte after closing quote",
    .delimiter      | endsAField           => .fieldStart          | "field",
    .lineFeed       | endsAField           => .recordStart         | "field, end of record",
    .carriageReturn | endsAField           => .afterCarriageReturn | "field, end of record",
    .endOfInput     | anyPhase             => .recordStart         | "last field and record, if any",
])

/// Runs every byte, and the end of input, through the real tokenizer in every phase, and checks
/// that the table moves the phase exactly as the tokenizer does.
func checkCSVTable() -> [String] {
    var problems: [String] = []
    var firedRows = Set<Int>()
    let tokenizer = CSVTokenizer()
    for phase in Phase.allCases {
        var inputs: [(CSVInput, CSVTokenizer.Action)] = [(.endOfInput, .endOfInput)]
        for byte in UInt8.min...UInt8.max { inputs.append((CSVInput(byte, delimiter: tokenizer.delimiter), .byte(byte))) }
        for (input, action) in inputs {
            var state = CSVTokenizer.State()
            state.phase = phase
            state.field = Array("ab".utf8)
            if phase == .afterCarriageReturn { state.column = 3; state.lineEnded = true; state.lastByteWasCarriageReturn = true }
            _ = tokenizer.reduce(action, into: &state, environment: ())
            var tablePhase = phase
            switch csvTable.send(input, to: &tablePhase) {
            case .transitioned where tablePhase == state.phase:
                if let index = csvTable.rows.firstIndex(where: { $0.matches(input, in: phase) }) { firedRows.insert(index) }
            default:
                problems.append("csv: \(action) in \"\(phase.name)\" goes to \"\(state.phase.name)\"; the table says \"\(tablePhase.name)\"")
            }
        }
    }
    for index in csvTable.rows.indices where !firedRows.contains(index) {
        problems.append("csv: table row \(index + 1) never fires")
    }
    return problems
}

// MARK: - Platformer

/// The page's event buttons, by the name the page gives them (each button's `data-event`).
let platformerEvents: [(name: String, event: Platformer.Event)] = [
    ("move 0", .move(speed: 0)), ("move 3", .move(speed: 3)), ("move 8", .move(speed: 8)),
    ("jump", .jump), ("apex", .apex), ("leaveGround", .leaveGround), ("land", .land), ("hit", .hit),
    ("recover", .recover), ("draw", .draw), ("holster", .holster), ("fire", .fire), ("tick", .tick),
    ("reload", .reload),
]

/// An event as the diagram labels a transition it triggers.
func platformerEventName(_ event: Platformer.Event) -> String {
    platformerEvents.first { $0.event == event }?.name ?? "\(event)"
}

/// Event scripts `make web-test` clicks through, each after the Reset button.
let platformerScripts: [(name: String, events: [String])] = [
    ("stunned while running, recover resumes running (deep history)",
     ["move 3", "move 8", "hit", "move 3", "jump", "recover", "land", "move 0"]),
    ("draw, fire, tick, tick: shot, then ready",
     ["draw", "fire", "fire", "tick", "tick", "holster", "tick", "holster"]),
    ("stunned in the air: no firing, a hit drops the aim, history resumes falling",
     ["jump", "apex", "draw", "hit", "draw", "fire", "recover", "fire", "tick", "hit", "recover", "land"]),
    ("the chart's data: a magazine of 3 that clicks empty and reloads, a stun of 2 ticks, one jump in the air",
     ["draw", "fire", "tick", "tick", "fire", "tick", "tick", "fire", "tick", "tick", "fire", "reload", "reload",
      "move 8", "hit", "tick", "tick", "jump", "apex", "jump", "jump", "land"]),
    ("off a ledge and back, ignored moves",
     ["move 0", "move 3", "leaveGround", "move 8", "land", "move 8", "leaveGround", "land", "apex"]),
]

func statusName(_ status: StatechartStatus) -> String {
    switch status {
    case .transitioned: "transitioned"
    case .ignored: "ignored"
    case .finished: "finished"
    case .stoppedAtMicrostepLimit: "stopped"
    case .stoppedAtRaisedEventLimit: "stopped"
    case .rejected: "rejected"
    }
}

func jsonList(_ names: [String]) -> String { "[" + names.map(json).joined(separator: ", ") + "]" }

/// The states' names, by raw value.
func platformerStateNames() -> [String] {
    var states: [String] = []
    while let state = Platformer.State(rawValue: states.count) { states.append(state.name) }
    return states
}

/// The names the page shows for the module's numbers: states and outputs by raw value.
func platformerNames() -> String {
    let states = platformerStateNames()
    var outputs: [String] = []
    while let output = Platformer.Output(rawValue: UInt8(outputs.count)) { outputs.append(output.name) }
    return "{\"states\": \(jsonList(states)), \"outputs\": \(jsonList(outputs))}\n"
}

/// The native chart's answers to the scripts: after every event, its status, active leaves
/// and outputs.
func platformerAnswers(_ chart: Statechart<Platformer.State, Platformer.Event, Platformer.Output>) -> String {
    var scripts: [String] = []
    for script in platformerScripts {
        var state = chart.initialState
        var steps: [String] = []
        for name in script.events {
            guard let event = platformerEvents.first(where: { $0.name == name })?.event else {
                printError("web-generate: the platformer script \"\(script.name)\" sends \"\(name)\", which no button sends")
                exit(1)
            }
            let reply = chart.send(event, to: &state)
            steps.append("""
                {"event": \(json(name)), "status": \(json(statusName(reply.status))), \
                "leaves": \(jsonList(chart.activeLeaves(in: state).map(\.name))), \
                "outputs": \(jsonList(reply.outputs.map(\.name)))}
                """)
        }
        scripts.append("{\"name\": \(json(script.name)), \"steps\": [\n      \(steps.joined(separator: ",\n      "))]}")
    }
    let initialLeaves = jsonList(chart.activeLeaves(in: chart.initialState).map(\.name))
    return """
        {
            "states": \(jsonList(platformerStateNames())),
            "initial": {"leaves": \(initialLeaves), "outputs": \(jsonList(chart.initialOutputs.map(\.name)))},
            "events": \(jsonList(platformerEvents.map(\.name))),
            "scripts": [
            \(scripts.joined(separator: ",\n    "))]}
        """
}

// MARK: - The native answers to the test's inputs

/// A game as `make web-test` plays it on the page: each entry is a square clicked, or `nil` for
/// the Restart button.
let games: [(name: String, clicks: [(Int, Int)?])] = [
    ("X wins, with a taken square and a move after the end refused",
     [(1, 1), (1, 1), (0, 0), (0, 1), (2, 2), (2, 1), (0, 2), (2, 0)]),
    ("a restart, then a draw",
     [nil, (0, 0), (1, 1), (0, 2), (0, 1), (2, 1), (2, 0), (1, 0), (1, 2), (2, 2), (0, 0)]),
]

/// Text typed into the CSV box, with its delimiter.
let csvInputs: [(name: String, delimiter: UInt8, text: String)] = [
    ("quoted fields, a doubled quote and an embedded newline", UInt8(ascii: ","),
     "name,city,note\nalice,\"Paris, France\",\"say \"\"hi\"\"\"\nbob,Berlin,\"two\nlines\"\n,,\n"),
    ("a stray quote, a byte after a closing quote, an unterminated quote", UInt8(ascii: ","),
     "id,value\n1,ab\"c\n2,\"x\"y\n3,\"never closed\n4,ok"),
    ("semicolons, and text that is not ASCII", UInt8(ascii: ";"),
     "größe;€ price\n\"Zürich; Genève\";12,50\n"),
]

func reply(_ reply: TicTacToe.Reply) -> String {
    switch reply {
    case .moved: "moved"
    case .finished(.won(.x)): "x-won"
    case .finished(.won(.o)): "o-won"
    case .finished(.draw): "draw"
    case .rejected(.outsideBoard): "refused:outside-board"
    case .rejected(.squareTaken): "refused:square-taken"
    case .rejected(.gameOver): "refused:game-over"
    case .restarted: "restarted"
    }
}

func board(_ state: TicTacToe.State) -> String {
    var text = ""
    for row in 0..<3 {
        for column in 0..<3 {
            switch state[row, column] {
            case .x: text += "X"
            case .o: text += "O"
            case nil: text += "."
            }
        }
    }
    return text
}

func json(_ text: String) -> String {
    var quoted = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": quoted += "\\\""
        case "\\": quoted += "\\\\"
        case "\n": quoted += "\\n"
        case "\r": quoted += "\\r"
        case "\t": quoted += "\\t"
        default:
            if scalar.value < 0x20 {
                let hex = String(scalar.value, radix: 16)
                quoted += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                quoted.unicodeScalars.append(scalar)
            }
        }
    }
    return quoted + "\""
}

func nativeAnswers(platformer: Statechart<Platformer.State, Platformer.Event, Platformer.Output>) -> String {
    var gameEntries: [String] = []
    for game in games {
        var machine = MealyMachine(state: TicTacToe.State(), reducer: TicTacToe(), effectManager: ReplyEffectManager())
        var steps: [String] = []
        for click in game.clicks {
            let answer = click.map { machine.send(.place(row: $0.0, column: $0.1)) } ?? machine.send(.restart)
            let clicked = click.map { "[\($0.0), \($0.1)]" } ?? "\"restart\""
            steps.append("""
                {"click": \(clicked), "reply": \(json(reply(answer))), "board": \(json(board(machine.state))), \
                "phase": \(json(GamePhase(machine.state).rawValue))}
                """)
        }
        gameEntries.append("{\"name\": \(json(game.name)), \"steps\": [\n      \(steps.joined(separator: ",\n      "))]}")
    }
    func tokens(_ text: String, delimiter: UInt8) -> String {
        var tokens: [String] = []
        for token in CSVTokenizer(delimiter: delimiter).tokens(of: Array(text.utf8)) {
            switch token {
            case let .field(bytes): tokens.append("{\"field\": \(json(String(decoding: bytes, as: UTF8.self)))}")
            case .endOfRecord: tokens.append("{\"end\": true}")
            case let .error(error):
                tokens.append("{\"error\": \(error.kind.rawValue), \"line\": \(error.line), \"column\": \(error.column)}")
            }
        }
        return "[\n        \(tokens.joined(separator: ",\n        "))]"
    }
    var csvEntries: [String] = []
    for input in csvInputs {
        // The test types the first half, checks the page, then types the rest.
        let prefix = String(input.text.prefix(input.text.count / 2))
        csvEntries.append("""
            {"name": \(json(input.name)), "delimiter": \(input.delimiter),
              "prefix": \(json(prefix)), "prefixTokens": \(tokens(prefix, delimiter: input.delimiter)),
              "text": \(json(input.text)), "tokens": \(tokens(input.text, delimiter: input.delimiter))}
            """)
    }
    return "{\n  \"tictactoe\": [\n    \(gameEntries.joined(separator: ",\n    "))],\n  \"csv\": [\n    \(csvEntries.joined(separator: ",\n    "))],\n  \"platformer\": \(platformerAnswers(platformer))\n}\n"
}

// MARK: - Main

/// Writes a line to standard error.
func printError(_ line: String) {
    var line = line + "\n"
    line.withUTF8 { _ = Glibc.write(2, $0.baseAddress, $0.count) }
}

func write(_ text: String, to path: String) {
    guard let file = fopen(path, "w") else {
        printError("web-generate: cannot write \(path)")
        exit(1)
    }
    fputs(text, file)
    fclose(file)
}

@main
struct WebGenerate {
    static func main() {
        guard CommandLine.arguments.count == 2 else {
            printError("usage: web-generate OUTPUT-DIRECTORY")
            exit(2)
        }
        let problems = checkTicTacToeTable() + checkCSVTable()
        guard problems.isEmpty else {
            printError("web-generate: a diagram's table does not describe its machine (\(problems.count) disagreements):")
            for problem in problems.prefix(20) { printError("  \(problem)") }
            exit(1)
        }
        let platformer: Statechart<Platformer.State, Platformer.Event, Platformer.Output>
        do {
            platformer = try Platformer.chart()
        } catch {
            printError("web-generate: the platformer chart does not build: \(error)")
            exit(1)
        }
        let directory = CommandLine.arguments[1]
        write(ticTacToeTable.graphvizDOT(
            name: "TicTacToe", initial: .xToMove, states: GamePhase.allCases, inputs: GameInput.allCases,
            stateName: { $0.rawValue }, inputName: { $0.rawValue }), to: "\(directory)/tictactoe.dot")
        write(csvTable.graphvizDOT(
            name: "CSVTokenizer", initial: .recordStart, states: Phase.allCases, inputs: CSVInput.allCases,
            stateName: { $0.name }, inputName: { $0.rawValue }), to: "\(directory)/csv.dot")
        write(platformer.graphvizDOT(name: "Platformer", stateName: { $0.name }, eventName: platformerEventName),
              to: "\(directory)/platformer.dot")
        write(platformerNames(), to: "\(directory)/platformer.json")
        write(nativeAnswers(platformer: platformer), to: "\(directory)/native.json")
    }
}
