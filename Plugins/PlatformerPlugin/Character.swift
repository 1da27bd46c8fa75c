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
    /// The chart's active configuration and history, and its context (rounds, stun ticks,
    /// jumps).
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

    /// The active leaves, what the last event emitted, whether it was ignored, and the
    /// chart's context, as JSON:
    /// `{"leaves":["running","aiming"],"outputs":["dustOn"],"ignored":false,"ammo":3,"stunTicks":0,"jumps":0}`.
    public var description: String {
        JSONText.object([
            ("leaves", JSONText.array(platformerChart.activeLeaves(in: core).map { JSONText.string($0.name) })),
            ("outputs", JSONText.array(outputs.map { JSONText.string($0.name) })),
            ("ignored", ignored ? "true" : "false"),
            ("ammo", String(core.context.ammo)),
            ("stunTicks", String(core.context.stunTicks)),
            ("jumps", String(core.context.jumps)),
        ])
    }
}

extension Character: PluginSnapshotCodable {
    /// The most outputs one snapshot may hold; one event of this chart emits at most four.
    static let outputLimit = 32

    /// The snapshot version `encode(to:)` writes. Version 1 (before the chart carried data)
    /// had no context; it is still read, its context derived from its states.
    static let version: UInt8 = 2

    /// Writes version 2: the active and history sets as two words each, the ignored flag, the
    /// context (rounds, stun ticks, jumps: a byte each), then the last outputs' raw values.
    public func encode(to writer: inout PluginSnapshotWriter) {
        writer.write(Self.version)
        let (activeLow, activeHigh) = core.active.words
        let (historyLow, historyHigh) = core.history.words
        writer.write(activeLow)
        writer.write(activeHigh)
        writer.write(historyLow)
        writer.write(historyHigh)
        writer.write(ignored)
        writer.write(core.context.ammo)
        writer.write(core.context.stunTicks)
        writer.write(core.context.jumps)
        writer.write(outputs.map { $0.rawValue })
    }

    /// Reads what `encode(to:)` wrote, refusing a configuration or history the chart cannot be
    /// in, a context it cannot have there, and outputs it does not know. A version 1 snapshot
    /// is migrated: a full magazine, a stun with all its ticks left, one jump used in the air.
    public init(from reader: inout PluginSnapshotReader) throws(PluginSnapshotError) {
        let version = try reader.read(UInt8.self)
        guard version == 1 || version == Self.version else {
            throw PluginSnapshotError("not a platformer snapshot (unknown version \(version); this plugin reads 1 and 2)")
        }
        let active = StatechartStateSet(words: (try reader.read(UInt64.self), try reader.read(UInt64.self)))
        let history = StatechartStateSet(words: (try reader.read(UInt64.self), try reader.read(UInt64.self)))
        core = StatechartState(active: active, history: history, context: Platformer.Counters())
        guard platformerChart.isValid(core) else {
            throw PluginSnapshotError("the snapshot holds states the platformer chart cannot be in together")
        }
        ignored = try reader.read(Bool.self)
        if version == 1 {
            core.context = Self.migratedContext(active: active, history: history)
        } else {
            core.context = Platformer.Counters(
                ammo: try reader.read(UInt8.self), stunTicks: try reader.read(UInt8.self), jumps: try reader.read(UInt8.self))
            guard Self.isConsistent(core) else {
                let context = core.context
                throw PluginSnapshotError(
                    "the snapshot holds data the platformer chart cannot have in its states (ammo \(context.ammo), stun ticks \(context.stunTicks), jumps \(context.jumps))")
            }
        }
        outputs = []
        for raw in try reader.read([UInt8].self, limit: Self.outputLimit) {
            guard let output = Platformer.Output(rawValue: raw) else { throw PluginSnapshotError("the snapshot holds an unknown output (\(raw))") }
            outputs.append(output)
        }
    }

    /// Whether the body is airborne: in its active states, or, while stunned, where it resumes.
    static func isAirborne(active: StatechartStateSet, history: StatechartStateSet) -> Bool {
        let airborne = Platformer.State.airborne.rawValue
        return active.contains(Platformer.State.stunned.rawValue) ? history.contains(airborne) : active.contains(airborne)
    }

    /// A version 1 snapshot's context: what its states imply.
    static func migratedContext(active: StatechartStateSet, history: StatechartStateSet) -> Platformer.Counters {
        Platformer.Counters(
            ammo: Platformer.magazineSize,
            stunTicks: active.contains(Platformer.State.stunned.rawValue) ? Platformer.stunDuration : 0,
            jumps: isAirborne(active: active, history: history) ? 1 : 0)
    }

    /// Whether the context fits the states: rounds within the magazine, stun ticks left exactly
    /// while stunned, jumps used exactly while airborne.
    static func isConsistent(_ state: StatechartState<Platformer.State>) -> Bool {
        let context = state.context
        let stunned = state.active.contains(Platformer.State.stunned.rawValue)
        let airborne = isAirborne(active: state.active, history: state.history)
        return context.ammo <= Platformer.magazineSize
            && (stunned ? (1...Platformer.stunDuration).contains(context.stunTicks) : context.stunTicks == 0)
            && (airborne ? (1...Platformer.jumpLimit).contains(context.jumps) : context.jumps == 0)
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
        .action("reload") { .reload },
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
        case .reload: PluginCall("reload")
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
