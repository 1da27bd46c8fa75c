import ActomatonCore
import ActomatonPluginCore
import PlatformerExample

// The plugin's reducer and state, shared by platformer.so (PlatformerPlugin.swift) and the
// platformer wasm plugin (wasm/plugins/PlatformerPlugin.swift): the statechart of
// Plugins/PlatformerExample, unchanged, with what each event did kept in the state so that the
// host shows it.
//
// An event the chart ignores (a jump in mid-air, the same stick speed again, a tick with the
// weapon holstered) is not refused: a game loop sends `move` and `tick` every frame, and most of
// them change nothing. The state says `"ignored":true` instead, with no outputs.

/// The chart both plugins run, built once.
public let platformerChart = try! Platformer.chart()

/// The character as the plugin stores it: the chart's state, and what the last event did.
public struct Character: Sendable, CustomStringConvertible {
    /// The chart's active configuration and history.
    public var core: StatechartState<Platformer.State>
    /// What the last event asked the game to play or show, in order: empty when it was ignored.
    public var outputs: [Platformer.Output]
    /// Whether the chart ignored the last event (no transition was enabled; nothing changed).
    public var ignored = false

    /// A character standing idle, weapon holstered: the chart's initial state.
    public init() {
        core = platformerChart.initialState
        outputs = platformerChart.initialOutputs
    }

    /// The active leaves, what the last event emitted, and whether it was ignored, as JSON:
    /// `{"leaves":["running","aiming"],"outputs":["dustOn"],"ignored":false}`.
    public var description: String {
        JSONText.object([
            ("leaves", JSONText.array(platformerChart.activeLeaves(in: core).map { JSONText.string($0.name) })),
            ("outputs", JSONText.array(outputs.map { JSONText.string($0.name) })),
            ("ignored", ignored ? "true" : "false"),
        ])
    }
}

extension Character: PluginSnapshotCodable {
    /// The most outputs one snapshot may hold; one event of this chart emits at most four.
    static let outputLimit = 32

    /// Writes version 1: the active and history sets as two words each, the ignored flag, then
    /// the last outputs' raw values.
    public func encode(to writer: inout PluginSnapshotWriter) {
        writer.write(UInt8(1))
        let (activeLow, activeHigh) = core.active.words
        let (historyLow, historyHigh) = core.history.words
        writer.write(activeLow)
        writer.write(activeHigh)
        writer.write(historyLow)
        writer.write(historyHigh)
        writer.write(ignored)
        writer.write(outputs.map { $0.rawValue })
    }

    /// Reads what `encode(to:)` wrote, refusing a configuration or history the chart cannot be
    /// in and outputs it does not know.
    public init(from reader: inout PluginSnapshotReader) throws(PluginSnapshotError) {
        guard try reader.read(UInt8.self) == 1 else { throw PluginSnapshotError("not a platformer snapshot (unknown version)") }
        let active = StatechartStateSet(words: (try reader.read(UInt64.self), try reader.read(UInt64.self)))
        let history = StatechartStateSet(words: (try reader.read(UInt64.self), try reader.read(UInt64.self)))
        core = StatechartState(active: active, history: history)
        guard platformerChart.isValid(core) else {
            throw PluginSnapshotError("the snapshot holds states the platformer chart cannot be in together")
        }
        ignored = try reader.read(Bool.self)
        outputs = []
        for raw in try reader.read([UInt8].self, limit: Self.outputLimit) {
            guard let output = Platformer.Output(rawValue: raw) else { throw PluginSnapshotError("the snapshot holds an unknown output (\(raw))") }
            outputs.append(output)
        }
    }
}

extension Platformer.Event {
    /// The plugin's vocabulary, for both kits: `move <speed>` (0 stops, 1–5 walks, above 5
    /// runs), and one action without arguments per other event.
    public static let vocabulary: [PluginActionEntry<Platformer.Event>] = [
        .action("move", "speed") { (speed: Int32) in .move(speed: Int(speed)) },
        .action("jump") { .jump },
        .action("apex") { .apex },
        .action("leaveGround") { .leaveGround },
        .action("land") { .land },
        .action("hit") { .hit },
        .action("recover") { .recover },
        .action("draw") { .draw },
        .action("holster") { .holster },
        .action("fire") { .fire },
        .action("tick") { .tick },
    ]

    /// The vocabulary entry and arguments of the event (both kits' `requests` mapping).
    public var call: PluginCall {
        switch self {
        case let .move(speed): PluginCall("move", .int(Int64(speed)))
        case .jump: PluginCall("jump")
        case .apex: PluginCall("apex")
        case .leaveGround: PluginCall("leaveGround")
        case .land: PluginCall("land")
        case .hit: PluginCall("hit")
        case .recover: PluginCall("recover")
        case .draw: PluginCall("draw")
        case .holster: PluginCall("holster")
        case .fire: PluginCall("fire")
        case .tick: PluginCall("tick")
        }
    }
}

/// The plugin's reducer: the chart's reducer on the character's `core`, with the reply kept in
/// the state (the host shows the state after each action) and no effect requested.
public let characterReducer: MealyReducer<Platformer.Event, Character, Void, PluginEffect<Platformer.Event>> = {
    let chart = platformerChart.reducer
        .contramap(state: StateLens<Character, StatechartState<Platformer.State>>(get: { $0.core }, modify: { character, body in body(&character.core) }))
    return MealyReducer { event, character, _ in
        let reply = chart.reduce(event, into: &character, environment: ())
        character.ignored = reply.status == .ignored || reply.status == .finished
        character.outputs = reply.outputs
        return .empty
    }
}()

extension Character {
    /// The diagram both kits export: the chart's DOT, one node per state (named by its raw
    /// value, labelled by its name), with every active state — compound and parallel ones
    /// included — as an active node.
    public static var diagram: PluginDiagram<Character> {
        .statechart(platformerChart, name: "platformer", stateName: { $0.name }, eventName: { $0.call.name },
                    configuration: { $0.core })
    }
}
