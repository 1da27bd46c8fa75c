import ActomatonCore

/// A platformer character controller as a statechart: a body that is `grounded` (idle, walking,
/// running) or `airborne` (jumping, falling), can be `stunned` and then resumes exactly where
/// it was, and a weapon that runs in parallel (holstered, aiming, firing with its own
/// recoil and cooldown).
///
/// The same chart runs natively, in the `.so` and `.wasm` plugins, and on microcontrollers;
/// ``HandWrittenPlatformer`` is the same controller as a hand-written nested `switch`, which the
/// benchmark compares it with and the tests hold it to.
public enum Platformer {
    /// The states, in document order (so no reordering is needed at run time).
    public enum State: Int, StatechartStateID, CaseIterable {
        case character
        case body, control, resume, grounded, idle, walking, running, airborne, jumping, falling, stunned
        case weapon, holstered, aiming, firing, recoil, cooldown, shotDone
    }

    /// What the game loop tells the character.
    public enum Event: Equatable, Sendable {
        /// The stick's horizontal speed: 0 stops, 1–5 walks, above 5 runs.
        case move(speed: Int)
        case jump
        /// The top of a jump: the character starts to fall.
        case apex
        /// The character walked off a ledge.
        case leaveGround
        case land
        /// An enemy hit the character: it is stunned, and drops its aim.
        case hit
        case recover
        case draw
        case holster
        case fire
        /// One frame of the weapon's animation.
        case tick
    }

    /// What the character asks the game to play or show.
    public enum Output: UInt8, Equatable, Sendable {
        case jumpSound, landSound, dustOn, dustOff, flash, drawSound, shot, holsterSound, ready
    }

    /// Whether `event` is a move at `speed`s the predicate accepts.
    @inlinable
    static func isMove(_ event: Event, _ speeds: (Int) -> Bool) -> Bool {
        if case let .move(speed) = event { speeds(speed) } else { false }
    }

    /// The chart.
    public static func chart() throws(StatechartError<State>) -> Statechart<State, Event, Output> {
        let stop: @Sendable (Event) -> Bool = { isMove($0) { $0 <= 0 } }
        let walk: @Sendable (Event) -> Bool = { isMove($0) { $0 >= 1 && $0 <= 5 } }
        let run: @Sendable (Event) -> Bool = { isMove($0) { $0 > 5 } }
        return try Statechart(states: [
            .parallel(.character, children: [
                .compound(.body, children: [
                    .compound(.control, transitions: [.on(.hit, to: .stunned, outputs: [.flash])], children: [
                        .history(.resume, .deep),
                        .compound(.grounded, transitions: [
                            .on(.jump, to: .jumping, outputs: [.jumpSound]),
                            .on(.leaveGround, to: .falling),
                        ], children: [
                            .atomic(.idle, transitions: [
                                .on(where: walk, label: "move 1…5", to: .walking),
                                .on(where: run, label: "move > 5", to: .running),
                            ]),
                            .atomic(.walking, transitions: [
                                .on(where: stop, label: "move 0", to: .idle),
                                .on(where: run, label: "move > 5", to: .running),
                            ]),
                            .atomic(.running, onEntry: [.dustOn], onExit: [.dustOff], transitions: [
                                .on(where: stop, label: "move 0", to: .idle),
                                .on(where: walk, label: "move 1…5", to: .walking),
                            ]),
                        ]),
                        .compound(.airborne, transitions: [.on(.land, to: .grounded, outputs: [.landSound])], children: [
                            .atomic(.jumping, transitions: [.on(.apex, to: .falling)]),
                            .atomic(.falling),
                        ]),
                    ]),
                    .atomic(.stunned, transitions: [.on(.recover, to: .resume)]),
                ]),
                .compound(.weapon, children: [
                    .atomic(.holstered, transitions: [.on(.draw, to: .aiming, outputs: [.drawSound])]),
                    .atomic(.aiming, transitions: [
                        .on(.fire, to: .firing, when: { !$0.isIn(.stunned) }),
                        .on(.holster, to: .holstered, outputs: [.holsterSound]),
                        .on(.hit, to: .holstered),
                    ]),
                    .compound(.firing, onEntry: [.shot], transitions: [
                        .onDone(.firing, to: .aiming, outputs: [.ready]),
                        .on(.hit, to: .holstered),
                    ], children: [
                        .atomic(.recoil, transitions: [.on(.tick, to: .cooldown)]),
                        .atomic(.cooldown, transitions: [.on(.tick, to: .shotDone)]),
                        .final(.shotDone),
                    ]),
                ]),
            ]),
        ])
    }

    /// One event of each kind, with a speed for each band: what generated tests try in every
    /// state. They are in class order (``eventClass(_:)``).
    public static let sampleEvents: [Event] = [
        .move(speed: 0), .move(speed: 3), .move(speed: 8), .jump, .apex, .leaveGround, .land,
        .hit, .recover, .draw, .holster, .fire, .tick,
    ]

    /// The class of `event` in the compiled chart: its kind, and for a move its speed band (stop,
    /// walk, run) — the index of its kind in ``sampleEvents``.
    @inlinable
    public static func eventClass(_ event: Event) -> Int {
        switch event {
        case let .move(speed): speed <= 0 ? 0 : speed <= 5 ? 1 : 2
        case .jump: 3
        case .apex: 4
        case .leaveGround: 5
        case .land: 6
        case .hit: 7
        case .recover: 8
        case .draw: 9
        case .holster: 10
        case .fire: 11
        case .tick: 12
        }
    }

    /// `chart` compiled into a table (``CompiledStatechart``): what the game runs per frame.
    ///
    /// It is compiled with ``sampleEvents`` and with the speeds at the edges of each band, so
    /// compiling checks that ``eventClass(_:)`` puts together only moves the chart treats alike.
    public static func compiled(
        _ chart: Statechart<State, Event, Output>
    ) throws(StatechartCompileError<State>) -> CompiledStatechart<State, Event, Output> {
        let bandEdges: [Event] = [.move(speed: -1000), .move(speed: 1), .move(speed: 5), .move(speed: 6), .move(speed: 1000)]
        return try chart.compiled(events: sampleEvents + bandEdges, classifiedBy: eventClass)
    }
}

extension Platformer {
    /// The compiled chart from ``platformerTables``, the tables checked into this module: for a
    /// program that should run the controller without building the chart (a `.wasm` module,
    /// firmware), so the chart's definition and the compiler are left out of it.
    public static let embeddedChart: CompiledStatechart<State, Event, Output> =
        // The tables are generated from the chart, and a test checks that they are its current
        // ones, so they are consistent.
        try! CompiledStatechart(tables: platformerTables, classifiedBy: eventClass)
}

extension Platformer.State {
    /// The state's name, as diagrams and the plugin's description show it.
    public var name: String {
        switch self {
        case .character: "character"
        case .body: "body"
        case .control: "control"
        case .resume: "resume"
        case .grounded: "grounded"
        case .idle: "idle"
        case .walking: "walking"
        case .running: "running"
        case .airborne: "airborne"
        case .jumping: "jumping"
        case .falling: "falling"
        case .stunned: "stunned"
        case .weapon: "weapon"
        case .holstered: "holstered"
        case .aiming: "aiming"
        case .firing: "firing"
        case .recoil: "recoil"
        case .cooldown: "cooldown"
        case .shotDone: "shotDone"
        }
    }
}

extension Platformer.Output {
    /// The output's name, as the plugin's description shows it.
    public var name: String {
        switch self {
        case .jumpSound: "jumpSound"
        case .landSound: "landSound"
        case .dustOn: "dustOn"
        case .dustOff: "dustOff"
        case .flash: "flash"
        case .drawSound: "drawSound"
        case .shot: "shot"
        case .holsterSound: "holsterSound"
        case .ready: "ready"
        }
    }
}
