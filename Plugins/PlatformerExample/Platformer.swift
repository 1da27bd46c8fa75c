import ActomatonCore

/// A platformer character controller as a statechart: a body that is `grounded` (idle, walking,
/// running) or `airborne` (jumping, falling, with one more jump in the air), can be `stunned`
/// for a few ticks and then resumes exactly where it was, and a weapon that runs in parallel
/// (holstered, aiming, firing with its own recoil and cooldown) with a magazine to reload.
///
/// The chart carries data (``Counters``, its context): the rounds left, the stun's ticks left and
/// the jumps used. Each stays in a small range, so the compiled chart is still a finite table.
///
/// The same chart runs natively, in the `.so` and `.wasm` plugins, and on microcontrollers;
/// ``HandWrittenPlatformer`` is the same controller as a hand-written nested `switch`, which the
/// benchmark compares it with and the tests hold it to.
public enum Platformer {
    /// Rounds in a full magazine.
    public static let magazineSize: UInt8 = 3
    /// Ticks a hit stuns the character for (unless `recover` comes first).
    public static let stunDuration: UInt8 = 2
    /// Jumps before landing: one from the ground, one in the air.
    public static let jumpLimit: UInt8 = 2

    /// The chart's context: small counters, each in a fixed range, so the chart compiles to a
    /// finite table (every reachable value is a row).
    public struct Counters: Hashable, Sendable {
        /// Rounds left, `0...magazineSize`.
        public var ammo: UInt8
        /// Ticks until the stun wears off, `1...stunDuration` while stunned, 0 otherwise.
        public var stunTicks: UInt8
        /// Jumps since the character last stood on the ground, `0...jumpLimit` (leaving a
        /// ledge counts as one, so one jump in the air is left).
        public var jumps: UInt8

        /// A full magazine, not stunned, on the ground.
        @inlinable
        public init(ammo: UInt8 = Platformer.magazineSize, stunTicks: UInt8 = 0, jumps: UInt8 = 0) {
            self.ammo = ammo
            self.stunTicks = stunTicks
            self.jumps = jumps
        }
    }

    /// The states, in document order (so no reordering is needed at run time).
    public enum State: Int, StatechartStateID, CaseIterable {
        public typealias Context = Counters

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
        /// An enemy hit the character: it is stunned for ``Platformer/stunDuration`` ticks, and
        /// drops its aim.
        case hit
        /// The stun ends now, before its ticks run out.
        case recover
        case draw
        case holster
        case fire
        /// One frame: of the weapon's animation, and of a stun wearing off.
        case tick
        /// Refill the magazine (while aiming, when it is not full).
        case reload
    }

    /// What the character asks the game to play or show.
    public enum Output: UInt8, Equatable, Sendable {
        case jumpSound, landSound, dustOn, dustOff, flash, drawSound, shot, holsterSound, ready
        /// A fire with an empty magazine.
        case click
        case reloadSound
        /// The jump in the air.
        case doubleJumpSound
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
        return try Statechart(context: Counters(), states: [
            .parallel(.character, children: [
                .compound(.body, children: [
                    .compound(.control, transitions: [
                        .on(.hit, to: .stunned, outputs: [.flash], actions: [.assign { $0.stunTicks = stunDuration }]),
                    ], children: [
                        .history(.resume, .deep),
                        .compound(.grounded, transitions: [
                            .on(.jump, to: .jumping, outputs: [.jumpSound], actions: [.assign { $0.jumps = 1 }]),
                            .on(.leaveGround, to: .falling, actions: [.assign { $0.jumps = 1 }]),
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
                        .compound(.airborne, transitions: [
                            .on(.land, to: .grounded, outputs: [.landSound], actions: [.assign { $0.jumps = 0 }]),
                            .on(.jump, to: .jumping, when: { $0.context.jumps < jumpLimit }, outputs: [.doubleJumpSound],
                                actions: [.assign { $0.jumps += 1 }]),
                        ], children: [
                            .atomic(.jumping, transitions: [.on(.apex, to: .falling)]),
                            .atomic(.falling),
                        ]),
                    ]),
                    .atomic(.stunned, exitActions: [.assign { $0.stunTicks = 0 }], transitions: [
                        .on(.recover, to: .resume),
                        .on(.tick, to: .resume, when: { $0.context.stunTicks <= 1 }),
                        .on(.tick, actions: [.assign { $0.stunTicks -= 1 }]),
                    ]),
                ]),
                .compound(.weapon, children: [
                    .atomic(.holstered, transitions: [.on(.draw, to: .aiming, outputs: [.drawSound])]),
                    .atomic(.aiming, transitions: [
                        .on(.fire, to: .firing, when: { !$0.isIn(.stunned) && $0.context.ammo > 0 },
                            actions: [.assign { $0.ammo -= 1 }]),
                        .on(.fire, when: { !$0.isIn(.stunned) }, outputs: [.click]).guardReadsConfigurationOnly(),
                        .on(.reload, when: { $0.context.ammo < magazineSize }, outputs: [.reloadSound],
                            actions: [.assign { $0.ammo = magazineSize }]),
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
        .hit, .recover, .draw, .holster, .fire, .tick, .reload,
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
        case .reload: 13
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
        // Every compound state keeps its history, and the context multiplies what the chart
        // can reach before equivalent states are merged: more than the default 4,096.
        return try chart.compiled(events: sampleEvents + bandEdges, stateLimit: 65_535, classifiedBy: eventClass)
    }

    /// `chart` compiled over its configurations, with its ``Counters`` read and updated at run
    /// time (``CompiledContextStatechart``): a row per configuration and history instead of one
    /// per value of the counters, so a magazine or a stun of any size would compile to the same
    /// table.
    public static func compiledEvaluatingContext(
        _ chart: Statechart<State, Event, Output>
    ) throws(StatechartCompileError<State>) -> CompiledContextStatechart<State, Event, Output> {
        let bandEdges: [Event] = [.move(speed: -1000), .move(speed: 1), .move(speed: 5), .move(speed: 6), .move(speed: 1000)]
        return try chart.compiledEvaluatingContext(events: sampleEvents + bandEdges, classifiedBy: eventClass)
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
        case .click: "click"
        case .reloadSound: "reloadSound"
        case .doubleJumpSound: "doubleJumpSound"
        }
    }
}
