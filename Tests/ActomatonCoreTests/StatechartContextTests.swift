import ActomatonCore
import Testing

// Extended state (a chart's context), actions, conditional content, and default entries with
// several targets or content: the W3C tests that need a data model, `<if>`, or `<initial>`.

/// SCXML's data model in the W3C tests: their numbered variables, all starting at 0.
struct Vars: Hashable, Sendable {
    var var1 = 0, var2 = 0, var3 = 0, var4 = 0, var5 = 0
    /// Where the ports keep what SCXML reads from `_event`: the name of the event an action
    /// saw, empty for none.
    var eventName = ""
}

/// State names for the W3C ports that carry data, as in the tests.
enum D: Int, StatechartStateID {
    typealias Context = Vars
    case s0, s01, s011, s02, s03, s04, s1, s11, s111, s2, s21, s211, s3, s31, s311, s3111, s3112, s312, s32, s4, s5, s6
    case p, ps1, ps2, sh1, s0final, pass, fail
    case s11p1, s11p11, s11p111, s11p112, s11p12, s11p121, s11p122
    case s21p1, s21p11, s21p111, s21p112, s21p12, s21p121, s21p122
    case s2p1, s2p11, s2p111, s2p112, s2p12, s2p121, s2p122
}

/// Events for the W3C ports; `inS11p112` is the tests' `In-s11p112`, `fooZoo` their
/// `foo.zoo`, `doneS0` a `done.state.s0` with its data.
enum DE: Equatable, Sendable, StatechartNamedEvent {
    case foo, bar, baz, bat, event1, event2, event3, timeout, inS11p112, inS21p112
    case fooZoo, foos, bound, unbound
    case doneS0(String), doneP, doneRegion(Int)

    var name: String {
        switch self {
        case .foo: "foo"
        case .bar: "bar"
        case .baz: "baz"
        case .bat: "bat"
        case .event1: "event1"
        case .event2: "event2"
        case .event3: "event3"
        case .timeout: "timeout"
        case .inS11p112: "In-s11p112"
        case .inS21p112: "In-s21p112"
        case .fooZoo: "foo.zoo"
        case .foos: "foos"
        case .bound: "bound"
        case .unbound: "unbound"
        case .doneS0: "done.state.s0"
        case .doneP: "done.state.p"
        case .doneRegion: "done.state.region"
        }
    }
}

typealias DChart = Statechart<D, DE, String>

/// SCXML's `event="*"`.
let anyD: @Sendable (DE) -> Bool = { _ in true }

@Suite("Statechart: a data model (W3C tests 147, 148, 149, 372, 407, 503, 504, 505, 506)")
struct StatechartDataModelTests {
    // test147: the first `<elseif>` whose condition holds runs, and only it; Var1 is counted
    // in the data model, and the transition's guard reads it.
    @Test func test147TheFirstTrueElseIfRuns() throws {
        let chart = try DChart(context: Vars(), states: [
            .atomic(.s0, entryActions: [
                .if({ _ in false }, then: [.raise(.foo), .assign { $0.var1 += 1 }], else: [
                    .if({ _ in true }, then: [.raise(.bar), .assign { $0.var1 += 1 }],
                        else: [.raise(.baz), .assign { $0.var1 += 1 }]),
                ]),
                .raise(.bat),
            ], transitions: [
                .on(.bar, to: .pass, when: { $0.context.var1 == 1 }),
                .on(where: anyD, label: "*", to: .fail),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
        #expect(chart.initialState.context.var1 == 1)
    }

    // test148: when no condition holds, the `<else>` partition runs.
    @Test func test148TheElseRunsWhenNoConditionHolds() throws {
        let chart = try DChart(context: Vars(), states: [
            .atomic(.s0, entryActions: [
                .if({ _ in false }, then: [.raise(.foo), .assign { $0.var1 += 1 }], else: [
                    .if({ _ in false }, then: [.raise(.bar), .assign { $0.var1 += 1 }],
                        else: [.raise(.baz), .assign { $0.var1 += 1 }]),
                ]),
                .raise(.bat),
            ], transitions: [
                .on(.baz, to: .pass, when: { $0.context.var1 == 1 }),
                .on(where: anyD, label: "*", to: .fail),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    // test149: when no condition holds and there is no `<else>`, nothing in the `<if>` runs.
    @Test func test149NothingRunsWithoutAnElse() throws {
        let chart = try DChart(context: Vars(), states: [
            .atomic(.s0, entryActions: [
                .if({ _ in false }, then: [.raise(.foo), .assign { $0.var1 += 1 }], else: [
                    .if({ _ in false }, then: [.raise(.bar), .assign { $0.var1 += 1 }]),
                ]),
                .raise(.bat),
            ], transitions: [
                .on(.bat, to: .pass, when: { $0.context.var1 == 0 }),
                .on(where: anyD, label: "*", to: .fail),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
        #expect(chart.initialState.context == Vars())
    }

    // test372: a final state's entry content has run when its parent's done event is taken,
    // and its exit content has not (Var1 is 2, not 1 or 3). The original's timeout is sent
    // from outside, after the start.
    @Test func test372FinalEntryRunsBeforeTheDoneEvent() throws {
        let chart = try DChart(context: Vars(var1: 1), states: [
            .compound(.s0, initial: .s0final, transitions: [
                .onDone(.s0, to: .pass, when: { $0.context.var1 == 2 }),
                .on(where: anyD, label: "*", to: .fail),
            ], children: [
                .final(.s0final, entryActions: [.assign { $0.var1 = 2 }], exitActions: [.assign { $0.var1 = 3 }]),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        var state = chart.initialState
        #expect(chart.send(.timeout, to: &state).status == .finished)
        #expect(state.isIn(.pass))
        // Leaving s0 ran s0final's exit content.
        #expect(state.context.var1 == 3)
    }

    // test407: exit content runs when the state is exited (Var1 counts it).
    @Test func test407ExitContentRuns() throws {
        let chart = try DChart(context: Vars(), states: [
            .atomic(.s0, exitActions: [.assign { $0.var1 += 1 }], transitions: [.always(to: .s1)]),
            .atomic(.s1, transitions: [
                .always(to: .pass, when: { $0.context.var1 == 1 }),
                .always(to: .fail),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    // test503: a targetless transition exits nothing (s2's exit content runs once, when s2
    // is left for s3) and runs its own content.
    @Test func test503ATargetlessTransitionExitsNothing() throws {
        let chart = try DChart(context: Vars(), states: [
            .atomic(.s1, raiseOnEntry: [.foo, .bar], transitions: [.always(to: .s2)]),
            .atomic(.s2, exitActions: [.assign { $0.var1 += 1 }], transitions: [
                .on(.foo, actions: [.assign { $0.var2 += 1 }]),
                .on(.bar, to: .s3, when: { $0.context.var2 == 1 }),
                .on(.bar, to: .fail),
            ]),
            .atomic(.s3, transitions: [
                .always(to: .pass, when: { $0.context.var1 == 1 }),
                .always(to: .fail),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    // test504: an external transition out of a parallel state exits it and all its regions,
    // not its parent: p's and each region's exit content runs twice, s2's once.
    @Test func test504AnExternalTransitionExitsTheParallelStateAndItsRegions() throws {
        let chart = try DChart(initial: .s1, context: Vars(), states: [
            .atomic(.s1, raiseOnEntry: [.foo, .bar], transitions: [.always(to: .p)]),
            .compound(.s2, exitActions: [.assign { $0.var5 += 1 }], children: [
                .parallel(.p, exitActions: [.assign { $0.var1 += 1 }], transitions: [
                    .on(.foo, to: .ps1, actions: [.assign { $0.var4 += 1 }]),
                    .on(.bar, to: .s3, when: { $0.context.var4 == 1 }),
                    .on(.bar, to: .fail),
                ], children: [
                    .atomic(.ps1, exitActions: [.assign { $0.var2 += 1 }]),
                    .atomic(.ps2, exitActions: [.assign { $0.var3 += 1 }]),
                ]),
            ]),
            .atomic(.s3, transitions: [.always(to: .s4, when: { $0.context.var1 == 2 }), .always(to: .fail)]),
            .atomic(.s4, transitions: [.always(to: .s5, when: { $0.context.var2 == 2 }), .always(to: .fail)]),
            .atomic(.s5, transitions: [.always(to: .s6, when: { $0.context.var3 == 2 }), .always(to: .fail)]),
            .atomic(.s6, transitions: [.always(to: .pass, when: { $0.context.var5 == 1 }), .always(to: .fail)]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    // test505: an internal transition into its own child does not exit its source: s1's exit
    // content runs once (when s1 is left for s2), s11's twice.
    @Test func test505AnInternalTransitionDoesNotExitItsSource() throws {
        let chart = try DChart(context: Vars(), states: [
            .compound(.s1, raiseOnEntry: [.foo, .bar], exitActions: [.assign { $0.var1 += 1 }], transitions: [
                .on(.foo, to: .s11, kind: .internal, actions: [.assign { $0.var3 += 1 }]),
                .on(.bar, to: .s2, when: { $0.context.var3 == 1 }),
                .on(.bar, to: .fail),
            ], children: [
                .atomic(.s11, exitActions: [.assign { $0.var2 += 1 }]),
            ]),
            .atomic(.s2, transitions: [.always(to: .s3, when: { $0.context.var1 == 1 }), .always(to: .fail)]),
            .atomic(.s3, transitions: [.always(to: .pass, when: { $0.context.var2 == 2 }), .always(to: .fail)]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    // test506: an internal transition whose target is its source itself exits it, as an
    // external one does: s2's exit content runs twice.
    @Test func test506AnInternalTransitionToItsSourceExitsIt() throws {
        let chart = try DChart(context: Vars(), states: [
            .atomic(.s1, raiseOnEntry: [.foo, .bar], transitions: [.always(to: .s2)]),
            .compound(.s2, exitActions: [.assign { $0.var1 += 1 }], transitions: [
                .on(.foo, to: .s2, kind: .internal, actions: [.assign { $0.var3 += 1 }]),
                .on(.bar, to: .s3, when: { $0.context.var3 == 1 }),
                .on(.bar, to: .fail),
            ], children: [
                .atomic(.s21, exitActions: [.assign { $0.var2 += 1 }]),
            ]),
            .atomic(.s3, transitions: [.always(to: .s4, when: { $0.context.var1 == 2 }), .always(to: .fail)]),
            .atomic(.s4, transitions: [.always(to: .pass, when: { $0.context.var2 == 2 }), .always(to: .fail)]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }
}

@Suite("Statechart: conditional content and In() (W3C tests 409, 411)")
struct StatechartConditionalContentTests {
    // test409: a state leaves the configuration after its exit content runs, and the states
    // below it before: in s01's exit content, In('s011') is false, so event1 is not raised.
    // The original's timeout is sent from outside, after the start.
    @Test func test409InIsFalseForAStateThatHasExited() throws {
        let chart = try DChart(initial: .s0, context: Vars(), states: [
            .compound(.s0, initial: .s01, transitions: [
                .on(.timeout, to: .pass),
                .on(.event1, to: .fail),
            ], children: [
                .compound(.s01, initial: .s011, exitActions: [
                    .if({ $0.isIn(.s011) }, then: [.raise(.event1)]),
                ], children: [
                    .atomic(.s011, transitions: [.always(to: .s02)]),
                ]),
                .atomic(.s02),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        var state = chart.initialState
        #expect(state.isIn(.s02))
        chart.send(.timeout, to: &state)
        #expect(state.isIn(.pass))
    }

    // test411: a state joins the configuration before its entry content runs, and entries go
    // outermost first: In('s01') is false in s0's entry content and true in s01's, so only
    // event2 is raised.
    @Test func test411InIsTrueForAStateBeingEntered() throws {
        let chart = try DChart(initial: .s0, context: Vars(), states: [
            .compound(.s0, initial: .s01, entryActions: [
                .if({ $0.isIn(.s01) }, then: [.raise(.event1)]),
            ], transitions: [
                .on(.timeout, to: .fail),
                .on(.event1, to: .fail),
                .on(.event2, to: .pass),
            ], children: [
                .atomic(.s01, entryActions: [.if({ $0.isIn(.s01) }, then: [.raise(.event2)])]),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    // Without a context: conditional outputs (if / else-if / else) over In() and a guard.
    @Test func conditionalOutputsWithoutAContext() throws {
        let chart = try Chart(states: [
            .parallel(.p, children: [
                .compound(.ps1, children: [
                    .atomic(.ps1a, transitions: [.on(.e, to: .ps1b)]),
                    .atomic(.ps1b, transitions: [.on(.e, to: .ps1a)]),
                ]),
                .compound(.ps2, children: [
                    .atomic(.ps2a, transitions: [.on(.go, actions: [
                        .if({ $0.isIn(.ps1a) }, then: [.emit("a")], else: [
                            .if({ $0.isIn(.ps1b) && $0.isIn(.p) }, then: [.emit("b")], else: [.emit("neither")]),
                        ]),
                        .emit("after"),
                    ])]),
                ]),
            ]),
        ])
        var state = chart.initialState
        #expect(chart.send(.go, to: &state).outputs == ["a", "after"])
        chart.send(.e, to: &state)
        #expect(chart.send(.go, to: &state).outputs == ["b", "after"])
    }
}

@Suite("Statechart: initial transitions (W3C tests 364, 412, 413, 576, 579)")
struct StatechartInitialTransitionTests {
    /// The s1 of tests 364 and 576: a compound state whose child s11 holds a parallel state
    /// whose regions, entered in s11p112 and s11p122, meet by a raised event.
    static func s11(then target: D) -> StatechartNode<D, DE, String> {
        .compound(.s11, initial: .s111, children: [
            .atomic(.s111),
            .parallel(.s11p1, children: [
                .compound(.s11p11, initial: .s11p111, children: [
                    .atomic(.s11p111),
                    .atomic(.s11p112, raiseOnEntry: [.inS11p112]),
                ]),
                .compound(.s11p12, initial: .s11p121, children: [
                    .atomic(.s11p121),
                    .atomic(.s11p122, transitions: [.on(.inS11p112, to: target)]),
                ]),
            ]),
        ])
    }

    // test364: a state's `initial` may name several descendants, one per region of a parallel
    // state, both in the attribute (s1) and in an `<initial>` transition (s2); a default initial
    // state enters the first child, all the way down (s3).
    @Test func test364SeveralInitialStates() throws {
        let chart = try DChart(initial: .s1, context: Vars(), states: [
            .compound(.s1, initialAll: [.s11p112, .s11p122], transitions: [.on(.timeout, to: .fail)], children: [
                Self.s11(then: .s2),
            ]),
            .compound(.s2, initialAll: [.s21p112, .s21p122], transitions: [.on(.timeout, to: .fail)], children: [
                .compound(.s21, initial: .s211, children: [
                    .atomic(.s211),
                    .parallel(.s21p1, children: [
                        .compound(.s21p11, initial: .s21p111, children: [
                            .atomic(.s21p111),
                            .atomic(.s21p112, raiseOnEntry: [.inS21p112]),
                        ]),
                        .compound(.s21p12, initial: .s21p121, children: [
                            .atomic(.s21p121),
                            .atomic(.s21p122, transitions: [.on(.inS21p112, to: .s3)]),
                        ]),
                    ]),
                ]),
            ]),
            .compound(.s3, transitions: [.always(to: .fail)], children: [
                .compound(.s31, children: [
                    .compound(.s311, children: [
                        .atomic(.s3111, transitions: [.always(to: .pass)]),
                        .atomic(.s3112),
                        .atomic(.s312),
                        .atomic(.s32),
                    ]),
                ]),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialStatus == .transitioned)
        #expect(chart.initialState.isIn(.pass))
    }

    // test576: the chart's own `initial` may name several states.
    @Test func test576SeveralInitialStatesOfTheChart() throws {
        let chart = try DChart(initial: [.s11p112, .s11p122], context: Vars(), states: [
            .atomic(.s0, transitions: [.always(to: .fail)]),
            .compound(.s1, transitions: [.on(.timeout, to: .fail)], children: [Self.s11(then: .pass)]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
        // Without a context too.
        let plain = try Statechart<S, E, String>(initial: [.ps1b, .ps2b], states: [
            .parallel(.p, children: [
                .compound(.ps1, children: [.atomic(.ps1a), .atomic(.ps1b)]),
                .compound(.ps2, children: [.atomic(.ps2a), .atomic(.ps2b)]),
            ]),
        ])
        #expect(plain.activeLeaves(in: plain.initialState) == [.ps1b, .ps2b])
    }

    // test412: an `<initial>` transition's content runs after its parent's entry content and
    // before its target's: the events come out event1, event2, event3.
    @Test func test412InitialTransitionContentRunsBetweenEntries() throws {
        let chart = try DChart(initial: .s0, context: Vars(), states: [
            .compound(.s0, initial: .s01, transitions: [
                .on(.timeout, to: .fail),
                .on(.event1, to: .fail),
                .on(.event2, to: .pass),
            ], children: [
                .compound(.s01, initial: .s011, initialActions: [.raise(.event2)], raiseOnEntry: [.event1], children: [
                    .atomic(.s011, raiseOnEntry: [.event3], transitions: [.always(to: .s02)]),
                ]),
                .atomic(.s02, transitions: [.on(.event1, to: .s03), .on(where: anyD, label: "*", to: .fail)]),
                .atomic(.s03, transitions: [.on(.event2, to: .s04), .on(where: anyD, label: "*", to: .fail)]),
                .atomic(.s04, transitions: [.on(.event3, to: .pass), .on(where: anyD, label: "*", to: .fail)]),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    // test413: a chart started in several states enters those, and the defaults of nothing
    // else: s2p112 and s2p122 are active, each sees the other with In().
    @Test func test413TheChartStartsInTheStatesItNames() throws {
        let chart = try DChart(initial: [.s2p112, .s2p122], context: Vars(), states: [
            .atomic(.s1, transitions: [.always(to: .fail)]),
            .compound(.s2, initial: .s2p1, children: [
                .parallel(.s2p1, transitions: [.always(to: .fail)], children: [
                    .compound(.s2p11, initial: .s2p111, children: [
                        .atomic(.s2p111, transitions: [.always(to: .fail)]),
                        .atomic(.s2p112, transitions: [.always(to: .pass, when: { $0.isIn(.s2p122) })]),
                    ]),
                    .compound(.s2p12, initial: .s2p121, children: [
                        .atomic(.s2p121, transitions: [.always(to: .fail)]),
                        .atomic(.s2p122, transitions: [.always(to: .pass, when: { $0.isIn(.s2p112) })]),
                    ]),
                ]),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    // test579: a compound state's initial transition may target its history state; the first
    // time, the history state's default runs its own content, after the parent's entry content
    // and the initial transition's (event1, event2, event3); the second time, the history is
    // resumed and only the initial transition's content runs. Var1 counts s0's exits. The
    // original's timeout is sent from outside, after the start.
    @Test func test579TheInitialTransitionMayTargetAHistoryState() throws {
        let chart = try DChart(initial: .s0, context: Vars(), states: [
            .compound(.s0, initial: .sh1, initialActions: [.raise(.event2)], raiseOnEntry: [.event1],
                      exitActions: [.assign { $0.var1 += 1 }], children: [
                .history(.sh1, default: .s01, defaultActions: [.raise(.event3)]),
                .atomic(.s01, transitions: [.on(.event1, to: .s02), .on(where: anyD, label: "*", to: .fail)]),
                .atomic(.s02, transitions: [.on(.event2, to: .s03), .on(where: anyD, label: "*", to: .fail)]),
                .atomic(.s03, transitions: [
                    .on(.event3, to: .s0, when: { $0.context.var1 == 0 }),
                    .on(.event1, to: .s2, when: { $0.context.var1 == 1 }),
                    .on(where: anyD, label: "*", to: .fail),
                ]),
            ]),
            .atomic(.s2, transitions: [.on(.event2, to: .s3), .on(where: anyD, label: "*", to: .fail)]),
            .atomic(.s3, transitions: [.on(.event3, to: .fail), .on(.timeout, to: .pass)]),
            .final(.pass),
            .final(.fail),
        ])
        var state = chart.initialState
        #expect(state.isIn(.s3))
        // s0 was left twice: for itself, then for s2.
        #expect(state.context.var1 == 2)
        chart.send(.timeout, to: &state)
        #expect(state.isIn(.pass))
    }

    @Test func initialTargetsAreChecked() {
        // Two initial states in one compound state.
        #expect(throws: StatechartError<S>.conflictingInitials([.ps1a, .ps1b])) {
            try Chart(initial: [.ps1a, .ps1b], states: [.compound(.ps1, children: [.atomic(.ps1a), .atomic(.ps1b)])])
        }
        #expect(throws: StatechartError<S>.conflictingInitials([.ps1a, .ps1b])) {
            try Chart(states: [.compound(.ps1, initialAll: [.ps1a, .ps1b], children: [.atomic(.ps1a), .atomic(.ps1b)])])
        }
        // A history state as a compound state's initial needs a default of its own.
        #expect(throws: StatechartError<S>.historyWithoutDefault(.h)) {
            try Chart(states: [.compound(.s0, initial: .h, children: [.history(.h), .atomic(.s01)])])
        }
        // Another compound state's history state is not an initial.
        #expect(throws: StatechartError<S>.initialNotDescendant(state: .s0, initial: .h)) {
            try Chart(states: [
                .compound(.s0, initial: .h, children: [.compound(.s1, children: [.history(.h, default: .s11), .atomic(.s11)])]),
            ])
        }
        // Initial actions on a state that has no default entry.
        #expect(throws: StatechartError<S>.misplacedContent(.s0)) {
            try Chart(states: [StatechartNode(id: .s0, kind: .atomic, initialTargets: [], initialActions: [.emit("x")])])
        }
    }
}

/// A magazine: the data of the guide's gun.
struct Magazine: Hashable, Sendable {
    var rounds: Int
    var reloads = 0
}

enum Gun: Int, StatechartStateID {
    typealias Context = Magazine
    case armed, ready, empty, reloading
}

enum Trigger: Equatable, Sendable { case fire, reload, done, add(Int) }

enum Shot: Equatable, Sendable { case bang(left: Int), click, reloaded(Int), emptied }

@Suite("Statechart: context")
struct StatechartContextTests {
    static func gun(rounds: Int = 2) throws -> Statechart<Gun, Trigger, Shot> {
        try Statechart(context: Magazine(rounds: rounds), states: [
            .compound(.armed, transitions: [.on(.reload, to: .reloading)], children: [
                .atomic(.ready, transitions: [
                    .on(.fire, when: { $0.context.rounds > 1 }, actions: [
                        .assign { $0.rounds -= 1 },
                        .emit { state, _ in .bang(left: state.context.rounds) },
                    ]),
                    .on(.fire, to: .empty, actions: [.assign { $0.rounds -= 1 }, .emit { state, _ in .bang(left: state.context.rounds) }]),
                ]),
                .atomic(.empty, entryActions: [.emit(.emptied)], transitions: [.on(.fire, outputs: [.click])]),
            ]),
            .atomic(.reloading, exitActions: [.assign { $0.reloads += 1 }], transitions: [
                .on(where: { if case .add = $0 { true } else { false } }, label: "add", actions: [
                    .assign(withEvent: { magazine, event in
                        if case let .add(count)? = event { magazine.rounds += count }
                    }),
                ]),
                .on(.done, to: .ready, when: { $0.context.rounds > 0 }, actions: [.emit { state, _ in .reloaded(state.context.rounds) }]),
            ]),
        ])
    }

    @Test func guardsReadTheContextAndActionsUpdateItInOrder() throws {
        let chart = try Self.gun()
        var state = chart.initialState
        #expect(state.context == Magazine(rounds: 2))
        #expect(chart.send(.fire, to: &state).outputs == [.bang(left: 1)])
        // The last round: the second transition, whose entry says the magazine is empty.
        #expect(chart.send(.fire, to: &state).outputs == [.bang(left: 0), .emptied])
        #expect(state.isIn(.empty))
        #expect(chart.send(.fire, to: &state).outputs == [.click])
        chart.send(.reload, to: &state)
        // The guard holds only once rounds are added; the action reads the event's value.
        #expect(chart.send(.done, to: &state).status == .ignored)
        chart.send(.add(3), to: &state)
        // The exit action runs before the transition's, which sees the updated count.
        #expect(chart.send(.done, to: &state).outputs == [.reloaded(3)])
        #expect(state.context == Magazine(rounds: 3, reloads: 1))
        #expect(state.isIn(.ready))
    }

    @Test func startingAgainResetsTheContext() throws {
        let chart = try Self.gun()
        var state = chart.initialState
        chart.send(.fire, to: &state)
        #expect(chart.initialContext == Magazine(rounds: 2))
        chart.start(into: &state)
        #expect(state == chart.initialState)
    }

    @Test func statesThatDifferOnlyInContextAreDifferent() throws {
        let chart = try Self.gun()
        var state = chart.initialState
        chart.send(.fire, to: &state)
        #expect(state != chart.initialState)
        #expect(state.active == chart.initialState.active)
    }

    @Test func aChartWithoutContextKeepsItsStateSmall() {
        #expect(MemoryLayout<StatechartState<S>>.size == 32)
        #expect(MemoryLayout<StatechartState<Gun>>.size == 32 + MemoryLayout<Magazine>.size)
    }

    @Test func actionsSeeTheEventOnlyForEvents() throws {
        let chart = try Statechart<Gun, Trigger, String>(context: Magazine(rounds: 0), states: [
            .compound(.armed, initial: .ready, transitions: [.onDone(.armed, to: .reloading, actions: [.emit { _, event in "done: \(event == nil)" }])], children: [
                .atomic(.ready, entryActions: [.emit { _, event in "entry: \(event.map { "\($0)" } ?? "nil")" }], transitions: [
                    .on(.fire, to: .empty, actions: [.emit { _, event in "fire: \(event == .fire)" }]),
                ]),
                .final(.empty),
            ]),
            .atomic(.reloading, transitions: [.always(to: .ready, actions: [.emit { _, event in "always: \(event == nil)" }])]),
        ])
        #expect(chart.initialOutputs == ["entry: nil"])
        var state = chart.initialState
        #expect(chart.send(.fire, to: &state).outputs == ["fire: true", "done: true", "always: true", "entry: nil"])
    }

    @Test func raisedEventsFromActionsCountAgainstTheLimitAtItAndOnePast() throws {
        func chart(raising count: Int) throws -> Statechart<Gun, Trigger, String> {
            try Statechart(context: Magazine(rounds: 0), raisedEventLimit: 3, states: [
                .atomic(.ready, transitions: [
                    .on(.fire, actions: Array(repeating: .raise(.reload), count: count)),
                    .on(.reload, actions: [.assign { $0.rounds += 1 }]),
                ]),
            ])
        }
        let atLimit = try chart(raising: 3)
        var state = atLimit.initialState
        #expect(atLimit.send(.fire, to: &state).status == .transitioned)
        #expect(state.context.rounds == 3)
        let onePast = try chart(raising: 4)
        state = onePast.initialState
        #expect(onePast.send(.fire, to: &state).status == .stoppedAtRaisedEventLimit)
        #expect(state.context.rounds == 0)
    }

    @Test func generatedTestsExploreTheContexts() throws {
        // The empty magazine's click is reachable only after two shots: the search goes
        // through the round counts to find it.
        let chart = try Self.gun(rounds: 2)
        let paths = chart.coveringPaths(events: [.fire, .reload, .done, .add(1)], stateLimit: 200)
        let click = try #require(chart.transitions.firstIndex { $0.transition.outputs == [.click] })
        #expect(paths.pathTakingTransition[click] == [.fire, .fire, .fire])
        // `.add` makes the counts unbounded: the search stops at its limit and says so.
        #expect(!paths.isComplete)
    }

    @Test func aCompiledChartKeepsDoneEventsAndDescriptors() throws {
        let chart = try DChart(context: Vars(), states: [
            .compound(.s0, transitions: [
                .on(descriptors: "foo", to: .s1, actions: [.assign { $0.var1 = 1 - $0.var1 }]),
                .on(where: anyD, label: "*", to: .s0, outputs: ["restart"]),
            ], children: [
                .atomic(.s01),
                .compound(.s1, transitions: [.on(.bar, to: .s11)], children: [
                    .atomic(.s11, transitions: [.always(to: .s0final)]),
                    .final(.s0final, doneEvent: { state in .doneS0("\(state.context.var1 % 2)") }),
                ]),
            ]),
        ])
        let events: [DE] = [.foo, .fooZoo, .bar, .baz]
        let compiled = try chart.compiled(events: events) { event in
            switch event {
            case .foo, .fooZoo: 0
            case .bar: 1
            default: 2
            }
        }
        var state = chart.initialState
        var row = compiled.initialState
        for event in [DE.fooZoo, .bar, .baz, .foo, .bar, .foo, .baz] {
            #expect(compiled.send(event, to: &row) == chart.send(event, to: &state))
            #expect(compiled.configuration(of: row) == state.active)
        }
    }

    @Test func aChartWithAContextCompilesOverItsReachableContexts() throws {
        // A magazine refilled to 2: three round counts, each a row of the table.
        let chart = try Statechart<Gun, Trigger, Shot>(context: Magazine(rounds: 2), states: [
            .atomic(.ready, transitions: [
                .on(.fire, when: { $0.context.rounds > 0 }, actions: [
                    .assign { $0.rounds -= 1 },
                    .emit { state, _ in .bang(left: state.context.rounds) },
                ]),
                .on(.fire, outputs: [.click]),
                .on(.reload, actions: [.assign { $0.rounds = 2 }]),
            ]),
        ])
        let compiled = try chart.compiled(events: [.fire, .reload]) { $0 == .fire ? 0 : 1 }
        #expect(compiled.stateCount == 3)
        var state = chart.initialState
        var row = compiled.initialState
        for event in [Trigger.fire, .fire, .fire, .reload, .fire] {
            #expect(compiled.send(event, to: &row) == chart.send(event, to: &state))
        }
        // A count that grows without bound cannot be compiled: exploring stops at the limit.
        let unbounded = try Self.gun()
        #expect(throws: StatechartCompileError<Gun>.stateLimitExceeded(limit: 50)) {
            try unbounded.compiled(events: [.fire, .reload, .done, .add(1)], stateLimit: 50) { event in
                switch event {
                case .fire: 0
                case .reload: 1
                case .done: 2
                case .add: 3
                }
            }
        }
    }
}

@Suite("Statechart: event descriptors and done events as events (W3C tests 399, 527)")
struct StatechartDescriptorAndDoneEventTests {
    // test399: a descriptor matches an event whose name is it or starts with it and a dot,
    // token by token: `foo bar` takes foo, bar and foo.zoo but not foos; `foo.*` is `foo`;
    // `*` takes everything. The original's timeout is sent from outside, after the start.
    @Test func test399EventDescriptorsMatchByTokens() throws {
        let chart = try DChart(initial: .s0, context: Vars(), states: [
            .compound(.s0, initial: .s01, transitions: [.on(.timeout, to: .fail)], children: [
                .atomic(.s01, raiseOnEntry: [.foo], transitions: [.on(descriptors: "foo bar", to: .s02)]),
                .atomic(.s02, raiseOnEntry: [.bar], transitions: [.on(descriptors: "foo bar", to: .s03)]),
                .atomic(.s03, raiseOnEntry: [.fooZoo], transitions: [.on(descriptors: "foo bar", to: .s04)]),
                .atomic(.s04, raiseOnEntry: [.foos], transitions: [
                    .on(descriptors: "foo", to: .fail),
                    .on(descriptors: "foos", to: .s1),
                ]),
                .atomic(.s1, raiseOnEntry: [.fooZoo], transitions: [.on(descriptors: "foo.*", to: .s2)]),
                .atomic(.s2, raiseOnEntry: [.foo], transitions: [.on(descriptors: "*", to: .pass)]),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
        #expect(chart.transitions[1].transition.label == "foo bar")
    }

    @Test func descriptorsAtTheirEdges() {
        let cases: [(String, String, Bool)] = [
            ("foo", "foo", true), ("foo", "foo.bar", true), ("foo", "foos", false), ("foo", "fo", false),
            ("foo.bar", "foo", false), ("foo.bar", "foo.bar.baz", true), ("foo.*", "foo", true), ("foo.", "foo.x", true),
            ("*", "anything", true), ("  bar   foo ", "foo", true), ("", "foo", false), ("bar baz", "foo", false),
        ]
        for (descriptors, name, expected) in cases {
            #expect(StatechartEventDescriptors.matches(descriptors, name: name) == expected, "\(descriptors) / \(name)")
        }
    }

    // test527: a final state's donedata is the data of its parent's done event. Here the
    // done event is an event of the chart's type carrying it, and the guard reads it.
    @Test func test527DoneDataIsTheDoneEventsData() throws {
        let chart = try DChart(initial: .s0, context: Vars(), states: [
            .compound(.s0, initial: .s01, transitions: [
                .on(where: { $0 == .doneS0("foo") }, label: "done.state.s0 [data == 'foo']", to: .pass),
                .onDone(.s0, to: .fail),
            ], children: [
                .final(.s01, doneEvent: { _ in .doneS0("foo") }),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    @Test func aCatchAllTakesADoneEventWithDataFromTheContext() throws {
        let chart = try DChart(context: Vars(), states: [
            .compound(.s0, transitions: [
                .on(.foo, to: .s1, actions: [.assign { $0.var1 = 7 }]),
                .on(where: anyD, label: "*", to: .pass, actions: [
                    .assign(withEvent: { vars, event in if case let .doneS0(data)? = event { vars.var2 = Int(data) ?? -1 } }),
                ]),
            ], children: [
                .atomic(.s01),
                .final(.s1, doneEvent: { state in .doneS0("\(state.context.var1)") }),
            ]),
            .final(.pass),
        ])
        var state = chart.initialState
        #expect(chart.send(.foo, to: &state).status == .transitioned)
        #expect(state.isIn(.pass))
        // The done event carried var1 as its data when s1 was entered; the action read it.
        #expect(state.context.var2 == 7)
    }

    @Test func onDoneStillTakesADoneEventOfTheChartsType() throws {
        let chart = try DChart(context: Vars(), states: [
            .compound(.s0, transitions: [.onDone(.s0, to: .pass)], children: [.final(.s01, doneEvent: { _ in .doneS0("") })]),
            .final(.pass),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    @Test func aParallelStatesDoneEventAndTheRaisedEventLimit() throws {
        // Three regions done at once: three done events of the chart's type and the parallel
        // state's, with room for only one raised event; done events do not count against it.
        let chart = try DChart(context: Vars(), raisedEventLimit: 1, states: [
            .atomic(.s0, transitions: [.on(.foo, to: .p)]),
            .parallel(.p, doneEvent: { _ in .doneP }, transitions: [
                .on(where: { if case .doneRegion = $0 { true } else { false } }, label: "region done", actions: [.assign { $0.var1 += 1 }]),
                .on(.doneP, to: .pass, when: { $0.context.var1 == 3 }),
            ], children: [
                .compound(.ps1, children: [.final(.s01, doneEvent: { _ in .doneRegion(1) })]),
                .compound(.ps2, children: [.final(.s02, doneEvent: { _ in .doneRegion(2) })]),
                .compound(.s1, children: [.final(.s03, doneEvent: { _ in .doneRegion(3) })]),
            ]),
            .final(.pass),
        ])
        var state = chart.initialState
        #expect(chart.send(.foo, to: &state).status == .transitioned)
        #expect(state.isIn(.pass))
    }

    @Test func doneEventsOnlyOnFinalAndParallelStates() {
        var node = StatechartNode<D, DE, String>.atomic(.s0)
        node.doneEvent = { _ in .foo }
        #expect(throws: StatechartError<D>.misplacedContent(.s0)) {
            try DChart(context: Vars(), states: [node])
        }
    }

    /// A final state at the top has no parent to be done: the chart finishes there, and a done
    /// event given to it would never be made. It is refused, not dropped in silence.
    @Test func aTopLevelFinalStateHasNoDoneEvent() {
        #expect(throws: StatechartError<D>.misplacedContent(.s1)) {
            try DChart(context: Vars(), states: [
                .atomic(.s0, transitions: [.on(.foo, to: .s1)]),
                .final(.s1, doneEvent: { _ in .bar }),
            ])
        }
        // Inside a compound state it is its parent's done event, as before.
        #expect(throws: Never.self) {
            try DChart(context: Vars(), states: [
                .compound(.s0, children: [.atomic(.s01, transitions: [.on(.foo, to: .s1)]), .final(.s1, doneEvent: { _ in .bar })]),
            ])
        }
    }
}

@Suite("Statechart: the event actions see (W3C tests 318, 319)")
struct StatechartActionEventTests {
    // test318: the event being processed stays the actions' event until the next one is
    // taken: in s1's entry content, entered by foo's transition, it is still foo (though s1
    // has just raised bar).
    @Test func test318TheEventStaysBoundUntilTheNextIsTaken() throws {
        let chart = try DChart(initial: .s0, context: Vars(), states: [
            .atomic(.s0, raiseOnEntry: [.foo], transitions: [.on(.foo, to: .s1)]),
            .atomic(.s1, entryActions: [
                .raise(.bar),
                .assign(withEvent: { vars, event in vars.eventName = event?.name ?? "" }),
            ], transitions: [
                .always(to: .pass, when: { $0.context.eventName == "foo" }),
                .always(to: .fail),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    // test319: no event is bound while the chart starts. The condition cannot read the
    // event, so the action copies what it sees (the original's `_event`) into the context first.
    @Test func test319NoEventIsBoundAtTheStart() throws {
        let chart = try DChart(initial: .s0, context: Vars(eventName: "unset"), states: [
            .atomic(.s0, entryActions: [
                .assign(withEvent: { vars, event in vars.eventName = event?.name ?? "" }),
                .if({ !$0.context.eventName.isEmpty }, then: [.raise(.bound)], else: [.raise(.unbound)]),
            ], transitions: [
                .on(.unbound, to: .pass),
                .on(.bound, to: .fail),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }
}
