import ActomatonCore
import Testing

/// State names for the rule tests. Their raw values are deliberately not in the document order
/// of most charts below, so the reordering path is what runs.
enum S: Int, StatechartStateID, CustomStringConvertible {
    case s0, s01, s02, s1, s11, s12, s2, s21, s22, p, ps1, ps2, ps1a, ps1b, ps2a, ps2b, h, hd, x, y, pass, fail, done1, done2
    var description: String {
        ["s0", "s01", "s02", "s1", "s11", "s12", "s2", "s21", "s22", "p", "ps1", "ps2", "ps1a", "ps1b", "ps2a", "ps2b",
         "h", "hd", "x", "y", "pass", "fail", "done1", "done2"][rawValue]
    }
}

enum E: Equatable, Sendable { case e, e1, e2, go, back, move(Int) }

typealias Chart = Statechart<S, E, String>

extension Statechart {
    /// Sends each event, returning the outputs of all of them.
    func run(_ events: [Event], from state: inout StatechartState<StateID>) -> [Output] {
        events.flatMap { send($0, to: &state).outputs }
    }
}

@Suite("Statechart: the README example")
struct StatechartExampleTests {
    enum Light: Int, StatechartStateID { case on, bright, dim, off }
    enum Switch: Equatable { case toggle, brighter, dimmer }

    @Test func theReadmeExample() throws {
        enum Light: Int, StatechartStateID { case on, bright, dim, off }
        enum Switch: Equatable { case toggle, brighter, dimmer }

        let chart = try Statechart<Light, Switch, String>(states: [
            .compound(.on, onEntry: ["lamp on"], onExit: ["lamp off"],
                      transitions: [.on(.toggle, to: .off)], children: [
                .atomic(.bright, transitions: [.on(.dimmer, to: .dim)]),
                .atomic(.dim, transitions: [.on(.brighter, to: .bright)]),
            ]),
            .atomic(.off, transitions: [.on(.toggle, to: .on)]),
        ])
        var state = chart.initialState             // on, bright
        chart.send(.dimmer, to: &state)            // on, dim
        #expect(chart.send(.toggle, to: &state).outputs == ["lamp off"])
        #expect(chart.activeLeaves(in: state) == [.off])
    }

    @Test func theLampExampleRunsAsDocumented() throws {
        let chart = try Statechart<Light, Switch, String>(states: [
            .compound(.on, onEntry: ["lamp on"], onExit: ["lamp off"],
                      transitions: [.on(.toggle, to: .off)], children: [
                .atomic(.bright, transitions: [.on(.dimmer, to: .dim)]),
                .atomic(.dim, transitions: [.on(.brighter, to: .bright)]),
            ]),
            .atomic(.off, transitions: [.on(.toggle, to: .on)]),
        ])
        var state = chart.initialState
        #expect(state == StatechartState([.on, .bright]))
        #expect(chart.initialOutputs == ["lamp on"])
        #expect(chart.send(.dimmer, to: &state) == StatechartReply(status: .transitioned, outputs: []))
        #expect(state.isIn(.dim) && state.isIn(.on) && !state.isIn(.bright))
        #expect(chart.activeChild(of: .on, in: state) == .dim)
        #expect(chart.send(.toggle, to: &state).outputs == ["lamp off"])
        #expect(chart.activeLeaves(in: state) == [.off])
        #expect(chart.send(.dimmer, to: &state) == StatechartReply(status: .ignored, outputs: []))
        #expect(chart.send(.toggle, to: &state).outputs == ["lamp on"])
        #expect(chart.activeLeaves(in: state) == [.bright])
    }

    @Test func theStateIsThirtyTwoBytesOfPlainData() {
        // The README's claim: a value the machine copies without allocating.
        #expect(MemoryLayout<StatechartState<Light>>.size == 32)
        #expect(_isPOD(StatechartState<Light>.self))
    }

    @Test func itRunsAsAReducerOnAMachine() throws {
        let chart = try Statechart<Light, Switch, String>(states: [
            .atomic(.off, transitions: [.on(.toggle, to: .on, outputs: ["click"])]),
            .atomic(.on, transitions: [.on(.toggle, to: .off, outputs: ["clack"])]),
        ])
        var machine = chart.machine()
        #expect(machine.send(.toggle).outputs == ["click"])
        #expect(machine.send(.toggle).outputs == ["clack"])
        #expect(machine.send(.dimmer).status == .ignored)
        var closureMachine = MealyMachine(state: chart.initialState, reducer: chart.reducer, effectManager: ReplyEffectManager())
        #expect(closureMachine.send(.toggle).outputs == ["click"])
        #expect(closureMachine.state.isIn(.on))
    }
}

@Suite("Statechart: selecting transitions (SCXML 3.13, W3C tests 403a–c)")
struct StatechartSelectionTests {
    // test403a: the first enabled transition in document order wins; an inner state's wins
    // over its ancestor's.
    @Test func documentOrderAndInnerBeforeOuter() throws {
        let chart = try Chart(states: [
            .compound(.s0, transitions: [.on(.e1, to: .fail)], children: [
                .atomic(.s01, transitions: [
                    .on(.e1, to: .fail, when: { _ in false }),
                    .on(.e1, to: .s02, outputs: ["second"]),
                    .on(.e1, to: .fail),
                ]),
                .atomic(.s02, transitions: [.on(.e2, to: .pass)]),
            ]),
            .final(.pass), .final(.fail),
        ])
        var state = chart.initialState
        #expect(chart.run([.e1], from: &state) == ["second"])
        #expect(state.isIn(.s02))
        chart.send(.e2, to: &state)
        #expect(state.isIn(.pass))
    }

    // test403b: in a parallel state, regions that both select their ancestor's transition take
    // it once; the outer state's transition is shadowed.
    @Test func aSharedAncestorTransitionIsTakenOnce() throws {
        let chart = try Chart(states: [
            .compound(.s0, initial: .p, transitions: [.on(.e1, outputs: ["s0"])], children: [
                .parallel(.p, transitions: [.on(.e1, outputs: ["p"])], children: [
                    .atomic(.ps1, transitions: [.on(.e2, to: .pass, when: { _ in true })]),
                    .atomic(.ps2),
                ]),
            ]),
            .final(.pass),
        ])
        var state = chart.initialState
        #expect(chart.send(.e1, to: &state) == StatechartReply(status: .transitioned, outputs: ["p"]))
        chart.send(.e2, to: &state)
        #expect(state.isIn(.pass))
    }

    // test403c: of two conflicting transitions, one whose source is inside the other's
    // preempts it; otherwise the first selected wins.
    @Test func conflictsAreResolvedByNestingThenOrder() throws {
        let chart = try Chart(states: [
            .parallel(.p, transitions: [.on(.e1, to: .fail)], children: [
                .atomic(.ps1),
                .compound(.ps2, children: [
                    .atomic(.ps2a, transitions: [
                        .on(.e1, to: .ps2b, outputs: ["inner"]),
                        .on(.e2, to: .x, outputs: ["ps2a leaves p"]),
                    ]),
                    .atomic(.ps2b),
                ]),
            ]),
            .atomic(.x), .atomic(.y), .final(.fail),
        ])
        var state = chart.initialState
        // ps1 selects p's transition (to fail); ps2a's own, selected later, is inside p: it wins.
        #expect(chart.run([.e1], from: &state) == ["inner"])
        #expect(state.isIn(.ps2b) && state.isIn(.ps1))

        let racing = try Chart(states: [
            .parallel(.p, children: [
                .atomic(.ps1, transitions: [.on(.e1, to: .x, outputs: ["first"])]),
                .atomic(.ps2, transitions: [.on(.e1, to: .y, outputs: ["second"])]),
            ]),
            .atomic(.x), .atomic(.y),
        ])
        state = racing.initialState
        #expect(racing.run([.e1], from: &state) == ["first"])
        #expect(state.active == StatechartState<S>([.x]).active)
    }

    @Test func regionsThatDoNotConflictAllTransition() throws {
        // test405's shape: each region's transition runs, in document order of the regions.
        let chart = try Chart(states: [
            .parallel(.p, children: [
                .compound(.ps1, children: [
                    .atomic(.ps1a, onExit: ["exit ps1a"], transitions: [.on(.e, to: .ps1b, outputs: ["t1"])]),
                    .atomic(.ps1b, onEntry: ["enter ps1b"]),
                ]),
                .compound(.ps2, children: [
                    .atomic(.ps2a, onExit: ["exit ps2a"], transitions: [.on(.e, to: .ps2b, outputs: ["t2"])]),
                    .atomic(.ps2b, onEntry: ["enter ps2b"]),
                ]),
            ]),
        ])
        var state = chart.initialState
        #expect(chart.run([.e], from: &state) == ["exit ps2a", "exit ps1a", "t1", "t2", "enter ps1b", "enter ps2b"])
        #expect(chart.activeLeaves(in: state) == [.ps1b, .ps2b])
    }

    @Test func predicateTriggersSeeTheEventsValue() throws {
        let chart = try Chart(states: [
            .atomic(.s0, transitions: [
                .on(where: { if case let .move(speed) = $0 { speed > 5 } else { false } }, to: .s2),
                .on(where: { if case .move = $0 { true } else { false } }, to: .s1),
            ]),
            .atomic(.s1), .atomic(.s2),
        ])
        var slow = chart.initialState, fast = chart.initialState
        chart.send(.move(3), to: &slow)
        chart.send(.move(9), to: &fast)
        #expect(slow.isIn(.s1) && fast.isIn(.s2))
    }

    @Test func conditionsSeeTheConfiguration() throws {
        // SCXML's In() predicate.
        let chart = try Chart(states: [
            .parallel(.p, children: [
                .compound(.ps1, children: [
                    .atomic(.ps1a, transitions: [.on(.go, to: .ps1b)]),
                    .atomic(.ps1b),
                ]),
                .compound(.ps2, children: [
                    .atomic(.ps2a, transitions: [.on(.e, to: .ps2b, when: { $0.isIn(.ps1b) })]),
                    .atomic(.ps2b),
                ]),
            ]),
        ])
        var state = chart.initialState
        #expect(chart.send(.e, to: &state).status == .ignored)
        chart.send(.go, to: &state)
        chart.send(.e, to: &state)
        #expect(state.isIn(.ps2b))
    }
}

@Suite("Statechart: exit and entry (SCXML 3.13, W3C tests 404, 406, 412, 503–506, 533)")
struct StatechartExitEntryTests {
    // test404 and test406: exits innermost first (regions in reverse document order), then the
    // transition's content, then entries outermost first (regions in document order).
    @Test func exitAndEntryOrder() throws {
        let chart = try Chart(states: [
            .compound(.s0, initial: .p, children: [
                .parallel(.p, onEntry: ["enter p"], onExit: ["exit p"], transitions: [.on(.e, to: .s1, outputs: ["t"])], children: [
                    .atomic(.ps1, onEntry: ["enter ps1"], onExit: ["exit ps1"]),
                    .atomic(.ps2, onEntry: ["enter ps2"], onExit: ["exit ps2"]),
                ]),
                .parallel(.s1, onEntry: ["enter s1"], children: [
                    .atomic(.s11, onEntry: ["enter s11"]),
                    .atomic(.s12, onEntry: ["enter s12"]),
                ]),
            ]),
        ])
        #expect(chart.initialOutputs == ["enter p", "enter ps1", "enter ps2"])
        var state = chart.initialState
        #expect(chart.run([.e], from: &state) == ["exit ps2", "exit ps1", "exit p", "t", "enter s1", "enter s11", "enter s12"])
        #expect(state.active == StatechartState<S>([.s0, .s1, .s11, .s12]).active)
    }

    // test412's shape: an initial that names a deep descendant enters every state on the way.
    @Test func anInitialDeepInsideEntersThePath() throws {
        let chart = try Chart(initial: .s1, states: [
            .atomic(.s0),
            .compound(.s1, initial: .s12, onEntry: ["s1"], children: [
                .atomic(.s11, onEntry: ["s11"]),
                .compound(.s12, initial: .ps1b, onEntry: ["s12"], children: [
                    .atomic(.ps1a, onEntry: ["ps1a"]),
                    .atomic(.ps1b, onEntry: ["ps1b"]),
                ]),
            ]),
        ])
        #expect(chart.initialOutputs == ["s1", "s12", "ps1b"])
        #expect(chart.activeLeaves(in: chart.initialState) == [.ps1b])
    }

    // test503: a transition without targets exits and enters nothing.
    @Test func aTargetlessTransitionOnlyEmits() throws {
        let chart = try Chart(states: [
            .compound(.s0, onEntry: ["enter s0"], onExit: ["exit s0"], transitions: [.on(.e, outputs: ["t"])], children: [
                .atomic(.s01, onEntry: ["enter s01"], onExit: ["exit s01"]),
            ]),
        ])
        var state = chart.initialState
        #expect(chart.run([.e, .e], from: &state) == ["t", "t"])
        #expect(state == chart.initialState)
    }

    // test504: a transition from a parallel state to one of its regions exits the parallel
    // state (its domain is the compound state above it), and re-enters it.
    @Test func theExitSetOfATransitionFromAParallelState() throws {
        let chart = try Chart(states: [
            .compound(.s2, onExit: ["exit s2"], children: [
                .parallel(.p, onEntry: ["enter p"], onExit: ["exit p"], transitions: [.on(.e, to: .ps1)], children: [
                    .atomic(.ps1, onEntry: ["enter ps1"], onExit: ["exit ps1"]),
                    .atomic(.ps2, onEntry: ["enter ps2"], onExit: ["exit ps2"]),
                ]),
            ]),
        ])
        var state = chart.initialState
        #expect(chart.run([.e], from: &state) == ["exit ps2", "exit ps1", "exit p", "enter p", "enter ps1", "enter ps2"])
    }

    // test505: an internal transition to a child does not exit its compound source; an external
    // one does.
    @Test func internalTransitionsKeepTheirSource() throws {
        func chart(_ kind: StatechartTransitionKind) throws -> Chart {
            try Chart(states: [
                .compound(.s1, onEntry: ["enter s1"], onExit: ["exit s1"],
                          transitions: [.on(.e, to: .s12, kind: kind)], children: [
                    .atomic(.s11, onExit: ["exit s11"]),
                    .atomic(.s12, onEntry: ["enter s12"], onExit: ["exit s12"]),
                ]),
            ])
        }
        var state = try chart(.internal).initialState
        #expect(try chart(.internal).run([.e], from: &state) == ["exit s11", "enter s12"])
        state = try chart(.external).initialState
        #expect(try chart(.external).run([.e], from: &state) == ["exit s11", "exit s1", "enter s1", "enter s12"])
    }

    // test506 and test533: "internal" only keeps a compound source; from a parallel or an
    // atomic source, or to a target outside, the transition is external.
    @Test func internalFromAParallelSourceIsExternal() throws {
        let chart = try Chart(states: [
            .compound(.s0, children: [
                .parallel(.p, onEntry: ["enter p"], onExit: ["exit p"],
                          transitions: [.on(.e, to: .ps1, kind: .internal)], children: [
                    .atomic(.ps1, onExit: ["exit ps1"]),
                    .atomic(.ps2, onExit: ["exit ps2"]),
                ]),
            ]),
        ])
        var state = chart.initialState
        #expect(chart.run([.e], from: &state) == ["exit ps2", "exit ps1", "exit p", "enter p"])

        let outward = try Chart(states: [
            .compound(.s1, onExit: ["exit s1"], transitions: [.on(.e, to: .s2, kind: .internal)], children: [.atomic(.s11)]),
            .atomic(.s2),
        ])
        state = outward.initialState
        #expect(outward.run([.e], from: &state) == ["exit s1"])
        #expect(state.active == StatechartState<S>([.s2]).active)
    }

    @Test func aSelfTransitionExitsAndReentersTheSource() throws {
        let chart = try Chart(states: [
            .atomic(.s0, onEntry: ["enter"], onExit: ["exit"], transitions: [.on(.e, to: .s0, outputs: ["t"])]),
        ])
        var state = chart.initialState
        #expect(chart.run([.e], from: &state) == ["exit", "t", "enter"])
    }

    @Test func aTransitionToSeveralRegionsEntersEachTarget() throws {
        let chart = try Chart(states: [
            .atomic(.s0, transitions: [.on(.e, toAll: [.ps1b, .ps2b])]),
            .parallel(.p, children: [
                .compound(.ps1, children: [.atomic(.ps1a), .atomic(.ps1b)]),
                .compound(.ps2, children: [.atomic(.ps2a), .atomic(.ps2b)]),
            ]),
        ])
        var state = chart.initialState
        chart.send(.e, to: &state)
        #expect(chart.activeLeaves(in: state) == [.ps1b, .ps2b])
    }

    /// Several targets with every kind of trigger, not only an event: a predicate, a done
    /// event, an eventless transition.
    @Test func everyKindOfTransitionTakesSeveralTargets() throws {
        let regions: StatechartNode<S, E, String> = .parallel(.p, children: [
            .compound(.ps1, children: [.atomic(.ps1a), .atomic(.ps1b)]),
            .compound(.ps2, children: [.atomic(.ps2a), .atomic(.ps2b)]),
        ])
        let byPredicate = try Chart(states: [.atomic(.s0, transitions: [.on(where: { $0 == .e }, label: "e", toAll: [.ps1b, .ps2b])]), regions])
        var state = byPredicate.initialState
        byPredicate.send(.e, to: &state)
        #expect(byPredicate.activeLeaves(in: state) == [.ps1b, .ps2b])

        let eventless = try Chart(states: [.atomic(.s0, transitions: [.always(toAll: [.ps1b, .ps2a])]), regions])
        #expect(eventless.activeLeaves(in: eventless.initialState) == [.ps1b, .ps2a])

        let onDone = try Chart(states: [
            .compound(.s0, transitions: [.onDone(.s0, toAll: [.ps1a, .ps2b])], children: [.final(.s1)]),
            regions,
        ])
        #expect(onDone.activeLeaves(in: onDone.initialState) == [.ps1a, .ps2b])
    }
}

@Suite("Statechart: done events and eventless transitions (W3C tests 416, 417, 419, 570)")
struct StatechartCompletionTests {
    // test416: entering a final child raises the compound state's done event.
    @Test func aFinalChildRaisesItsParentsDoneEvent() throws {
        let chart = try Chart(states: [
            .compound(.s1, transitions: [.onDone(.s11, to: .pass, outputs: ["done s11"])], children: [
                .compound(.s11, children: [
                    .atomic(.ps1a, transitions: [.on(.e, to: .done1)]),
                    .final(.done1, onEntry: ["final"]),
                ]),
            ]),
            .final(.pass),
        ])
        var state = chart.initialState
        #expect(chart.run([.e], from: &state) == ["final", "done s11"])
        #expect(state.isIn(.pass) && chart.isFinished(state))
    }

    // test570: a parallel state is done when every region is in a final state, and its done
    // event follows its regions'.
    @Test func aParallelStateIsDoneWhenEveryRegionIs() throws {
        let chart = try Chart(states: [
            .parallel(.p, transitions: [
                .onDone(.ps1, outputs: ["ps1 done"]),
                .onDone(.p, to: .pass, outputs: ["p done"]),
            ], children: [
                .compound(.ps1, children: [.atomic(.ps1a, transitions: [.on(.e1, to: .done1)]), .final(.done1)]),
                .compound(.ps2, children: [.atomic(.ps2a, transitions: [.on(.e2, to: .done2)]), .final(.done2)]),
            ]),
            .final(.pass),
        ])
        var state = chart.initialState
        #expect(chart.run([.e1], from: &state) == ["ps1 done"])
        #expect(!state.isIn(.pass))
        #expect(chart.run([.e2], from: &state) == ["p done"])
        #expect(state.isIn(.pass))
        #expect(chart.isFinished(state))
        #expect(chart.send(.e1, to: &state).status == .finished)
    }

    // test419: eventless transitions are taken before queued done events.
    @Test func eventlessTransitionsGoBeforeDoneEvents() throws {
        let chart = try Chart(states: [
            .parallel(.p, children: [
                .compound(.ps1, transitions: [.onDone(.ps1, outputs: ["done ps1"])], children: [
                    .atomic(.ps1a, transitions: [.on(.e, to: .done1)]),
                    .final(.done1),
                ]),
                .compound(.ps2, children: [
                    .atomic(.ps2a, transitions: [.on(.e, to: .ps2b)]),
                    .atomic(.ps2b, transitions: [.always(to: .x, outputs: ["eventless"])]),
                    .atomic(.x),
                ]),
            ]),
        ])
        var state = chart.initialState
        #expect(chart.run([.e], from: &state) == ["eventless", "done ps1"])
    }

    @Test func eventlessTransitionsRunAtStart() throws {
        let chart = try Chart(states: [
            .atomic(.s0, onEntry: ["s0"], transitions: [.always(to: .s1)]),
            .atomic(.s1, onEntry: ["s1"], transitions: [.always(to: .s2, when: { _ in false })]),
            .atomic(.s2),
        ])
        #expect(chart.initialOutputs == ["s0", "s1"])
        #expect(chart.initialState == StatechartState([.s1]))
    }

    @Test func aStepStopsAtTheMicrostepLimitAndSaysSo() throws {
        // The event, then a chain of four eventless transitions: five microsteps.
        func chart(limit: Int) throws -> Chart {
            try Chart(microstepLimit: limit, states: [
                .atomic(.s0, transitions: [.on(.e, to: .s1)]),
                .atomic(.s1, transitions: [.always(to: .s2)]),
                .atomic(.s2, transitions: [.always(to: .x)]),
                .atomic(.x, transitions: [.always(to: .y)]),
                .atomic(.y, transitions: [.always(to: .pass)]),
                .atomic(.pass),
            ])
        }
        var state = try chart(limit: 5).initialState
        #expect(try chart(limit: 5).send(.e, to: &state).status == .transitioned)
        #expect(state.isIn(.pass))
        state = try chart(limit: 4).initialState
        #expect(try chart(limit: 4).send(.e, to: &state).status == .stoppedAtMicrostepLimit)
        #expect(state.isIn(.y))
    }

    @Test func aLoopOfEventlessTransitionsStopsInsteadOfHanging() throws {
        let chart = try Chart(states: [
            .atomic(.s0, transitions: [.on(.e, to: .s1)]),
            .atomic(.s1, transitions: [.always(to: .s2, outputs: ["a"])]),
            .atomic(.s2, transitions: [.always(to: .s1, outputs: ["b"])]),
        ])
        var state = chart.initialState
        let reply = chart.send(.e, to: &state)
        #expect(reply.status == .stoppedAtMicrostepLimit)
        #expect(reply.outputs.count == 99)
        // A start that loops is built, and says where it stopped.
        let looping = try Chart(states: [
            .atomic(.s1, transitions: [.always(to: .s2, outputs: ["a"])]),
            .atomic(.s2, transitions: [.always(to: .s1, outputs: ["b"])]),
        ])
        #expect(looping.initialStatus == .stoppedAtMicrostepLimit)
        #expect(looping.initialOutputs.count == 99)
        #expect(looping.isValid(looping.initialState))
    }
}

@Suite("Statechart: history (W3C tests 387, 388, 579, 580)")
struct StatechartHistoryTests {
    static let chart = try! Chart(initial: .x, states: [
        .compound(.s0, transitions: [.on(.e, to: .x), .on(.e2, to: .s1)], children: [
            .history(.h, .shallow),
            .history(.hd, .deep, default: .s12),
            .atomic(.s01),
            .compound(.s1, children: [
                .atomic(.s11, transitions: [.on(.e1, to: .s12)]),
                .atomic(.s12),
            ]),
        ]),
        .atomic(.x, transitions: [.on(.back, to: .h), .on(.go, to: .hd)]),
    ])

    // test387's shape: the defaults apply before anything is remembered.
    @Test func defaultsApplyBeforeAnyHistory() {
        let chart = Self.chart
        var viaShallow = chart.initialState, viaDeep = chart.initialState
        chart.send(.back, to: &viaShallow)
        chart.send(.go, to: &viaDeep)
        #expect(chart.activeLeaves(in: viaShallow) == [.s01]) // the parent's initial
        #expect(chart.activeLeaves(in: viaDeep) == [.s12])    // the history's default
    }

    // test388: shallow history resumes the child (which enters its initial); deep history
    // resumes the leaf.
    @Test func shallowResumesTheChildDeepResumesTheLeaf() {
        let chart = Self.chart
        var state = chart.initialState
        _ = chart.run([.back, .e2, .e1], from: &state)
        #expect(chart.activeLeaves(in: state) == [.s12])
        chart.send(.e, to: &state)
        var viaShallow = state, viaDeep = state
        chart.send(.back, to: &viaShallow)
        chart.send(.go, to: &viaDeep)
        #expect(chart.activeLeaves(in: viaShallow) == [.s11])
        #expect(chart.activeLeaves(in: viaDeep) == [.s12])
    }

    // test580: a history state is never active.
    @Test func historyStatesAreNeverActive() {
        let chart = Self.chart
        var state = chart.initialState
        for event in [E.e, .back, .e2, .e1, .e, .go, .e, .back] {
            chart.send(event, to: &state)
            #expect(!state.isIn(.h) && !state.isIn(.hd))
        }
    }

    @Test func deepHistoryInsideAParallelStateResumesEveryRegion() throws {
        let chart = try Chart(states: [
            .compound(.s0, transitions: [.on(.e, to: .x)], children: [
                .history(.hd, .deep),
                .parallel(.p, children: [
                    .compound(.ps1, children: [.atomic(.ps1a, transitions: [.on(.e1, to: .ps1b)]), .atomic(.ps1b)]),
                    .compound(.ps2, children: [.atomic(.ps2a, transitions: [.on(.e2, to: .ps2b)]), .atomic(.ps2b)]),
                ]),
            ]),
            .atomic(.x, transitions: [.on(.back, to: .hd)]),
        ])
        var state = chart.initialState
        _ = chart.run([.e1, .e, .back], from: &state)
        #expect(chart.activeLeaves(in: state) == [.ps1b, .ps2a])
        _ = chart.run([.e2, .e, .back], from: &state)
        #expect(chart.activeLeaves(in: state) == [.ps1b, .ps2b])
    }

    @Test func anInnerHistoryKeepsItsMemoryWhenItsParentExitsWithoutIt() throws {
        // s1 remembers s12; s0 then exits while s01 is active; s1's history must still be s12.
        let chart = try Chart(states: [
            .compound(.s0, transitions: [.on(.e, to: .x)], children: [
                .atomic(.s01, transitions: [.on(.go, to: .s1)]),
                .compound(.s1, transitions: [.on(.back, to: .s01)], children: [
                    .history(.h, .shallow),
                    .atomic(.s11, transitions: [.on(.e1, to: .s12)]),
                    .atomic(.s12),
                ]),
            ]),
            .atomic(.x, transitions: [.on(.e2, to: .h)]),
        ])
        var state = chart.initialState
        _ = chart.run([.go, .e1, .back, .e, .e2], from: &state)
        #expect(chart.activeLeaves(in: state) == [.s12])
    }
}

@Suite("Statechart: building")
struct StatechartBuildTests {
    @Test func everyMistakeInADefinitionIsNamed() {
        let cases: [(StatechartError<S>, () throws -> Chart)] = [
            (.duplicateState(.s0), { try Chart(states: [.atomic(.s0), .atomic(.s0)]) }),
            (.unknownState(.x), { try Chart(states: [.atomic(.s0, transitions: [.on(.e, to: .x)])]) }),
            (.noChildren(.s0), { try Chart(states: [.compound(.s0, children: [.history(.h)])]) }),
            (.initialNotDescendant(state: .s0, initial: .s1), {
                try Chart(states: [.compound(.s0, initial: .s1, children: [.atomic(.s01)]), .atomic(.s1)])
            }),
            (.historyDefaultNotDescendant(history: .h, target: .s1), {
                try Chart(states: [.compound(.s0, children: [.history(.h, default: .s1), .atomic(.s01)]), .atomic(.s1)])
            }),
            (.historyAtTopLevel(.h), { try Chart(states: [.atomic(.s0), .history(.h)]) }),
            (.conflictingTargets(source: .s0, targets: [.s11, .s12]), {
                try Chart(states: [
                    .atomic(.s0, transitions: [.on(.e, toAll: [.s11, .s12])]),
                    .compound(.s1, children: [.atomic(.s11), .atomic(.s12)]),
                ])
            }),
            (.conflictingTargets(source: .s0, targets: [.s1, .s11]), {
                try Chart(states: [
                    .atomic(.s0, transitions: [.on(.e, toAll: [.s1, .s11])]),
                    .compound(.s1, children: [.atomic(.s11), .atomic(.s12)]),
                ])
            }),
            (.doneOfStateWithoutChildren(.s0), { try Chart(states: [.atomic(.s0, transitions: [.onDone(.s0, to: .s0)])]) }),
            (.misplacedContent(.s0), { try Chart(states: [StatechartNode(id: .s0, kind: .atomic, children: [.atomic(.s1)])]) }),
            (.microstepLimitOutOfRange(0), { try Chart(microstepLimit: 0, states: [.atomic(.s0)]) }),
            (.microstepLimitOutOfRange(10_001), { try Chart(microstepLimit: 10_001, states: [.atomic(.s0)]) }),
            (.empty, { try Chart(states: []) }),
        ]
        for (expected, build) in cases {
            #expect(throws: expected) { try build() }
        }
        #expect(throws: Never.self) { try Chart(microstepLimit: 10_000, states: [.atomic(.s0)]) }
        #expect(StatechartError<S>.duplicateState(.s0).description == "state s0 appears twice in the chart")
    }

    /// Each error's description says what is wrong with the definition that threw it, whichever
    /// of the mistakes its case covers: not "not inside it" for a history state that is inside,
    /// not "children or transitions" for an initial or a done event.
    @Test func everyMistakesDescriptionSaysWhatIsWrong() {
        let cases: [(words: [String], build: () throws -> Chart)] = [
            // The chart's initial is a history state.
            (["history"], { try Chart(initial: .h, states: [.compound(.s0, children: [.history(.h), .atomic(.s01)])]) }),
            // A compound state's initial is another state's history state, inside it.
            (["history"], {
                try Chart(states: [
                    .compound(.s0, initial: .h, children: [.compound(.s1, children: [.history(.h, default: .s11), .atomic(.s11)])]),
                ])
            }),
            // A history state's default is a history state inside its parent.
            (["not a state inside its parent"], {
                try Chart(states: [.compound(.s0, children: [.history(.h), .history(.hd, .deep, default: .h), .atomic(.s01)])])
            }),
            // A parallel state given an initial.
            (["initial"], {
                try Chart(states: [StatechartNode(id: .p, kind: .parallel, initial: .ps1, children: [.atomic(.ps1), .atomic(.ps2)])])
            }),
            // A history state given entry outputs.
            (["entry"], {
                try Chart(states: [.compound(.s0, children: [StatechartNode(id: .h, kind: .history(.shallow), onEntry: ["x"]), .atomic(.s01)])])
            }),
            // A compound state given a done event.
            (["done event"], {
                var node = StatechartNode<S, E, String>.compound(.s0, children: [.atomic(.s01)])
                node.doneEvent = { _ in .e }
                return try Chart(states: [node])
            }),
        ]
        for (index, (words, build)) in cases.enumerated() {
            do {
                _ = try build()
                Issue.record("case \(index) was built")
            } catch {
                let description = "\(error)"
                #expect(words.allSatisfy { description.contains($0) }, "case \(index): \(description)")
            }
        }
    }

    enum Wide: Int, StatechartStateID {
        case first = 0, last = 127, tooFar = 128, negative = -1
    }

    @Test func rawValuesAreCheckedAtTheLimitAndOnePast() {
        #expect(throws: Never.self) {
            try Statechart<Wide, E, String>(states: [.atomic(.first, transitions: [.on(.e, to: .last)]), .atomic(.last)])
        }
        #expect(throws: StatechartError<Wide>.rawValueOutOfRange(128)) {
            try Statechart<Wide, E, String>(states: [.atomic(.first), .atomic(.tooFar)])
        }
        #expect(throws: StatechartError<Wide>.rawValueOutOfRange(-1)) {
            try Statechart<Wide, E, String>(states: [.atomic(.negative)])
        }
        let chart = try! Statechart<Wide, E, String>(states: [.atomic(.first, transitions: [.on(.e, to: .last)]), .atomic(.last)])
        var state = chart.initialState
        chart.send(.e, to: &state)
        #expect(state.isIn(.last) && !state.isIn(.first) && !state.isIn(.tooFar) && !state.isIn(.negative))
    }
}

@Suite("Generated tests: covering paths")
struct CoveringPathsTests {
    @Test func aTablesPathsFireEveryRow() {
        let covering = loginTable.coveringPaths(from: .loggedOut)
        #expect(covering.isComplete)
        #expect(covering.untakenTransitions.isEmpty)
        // No path is a prefix of another, and together they fire every row.
        for path in covering.paths {
            #expect(!covering.paths.contains { $0 != path && $0.starts(with: path) })
        }
        var fired = Set<Int>()
        for path in covering.paths {
            var state = LoginState.loggedOut
            for input in path {
                let index = loginTable.rows.firstIndex { $0.matches(input, in: state) }!
                fired.insert(index)
                state = loginTable.rows[index].transition.to
            }
        }
        #expect(fired == Set(loginTable.rows.indices))
        // The shortest path to the force-logout row from a logged-in state is two inputs long.
        #expect(covering.pathTakingTransition[4] == [.login, .forceLogout])
    }

    @Test func aChartsPathsTakeEveryTransitionAndEnterEveryState() throws {
        let chart = try Chart(states: [
            .compound(.s0, transitions: [.on(.e, to: .x)], children: [
                .atomic(.s01, transitions: [.on(.e1, to: .s02)]),
                .compound(.s02, transitions: [.onDone(.s02, to: .s01, outputs: ["done"])], children: [
                    .atomic(.s21, transitions: [.on(.e2, to: .done1)]),
                    .final(.done1),
                ]),
            ]),
            .atomic(.x, transitions: [.on(.back, to: .s0)]),
            .atomic(.y, transitions: [.on(.go, to: .x)]), // unreachable
        ])
        let covering = chart.coveringPaths(events: [.e, .e1, .e2, .back, .go])
        #expect(covering.isComplete)
        let unreachable = chart.transitions.first { $0.source == .y }!.index
        #expect(covering.untakenTransitions == [unreachable])
        #expect(chart.unreachedStates(events: [.e, .e1, .e2, .back, .go]) == [.y])
        // done1 is entered (and left at once) by e2 after e1.
        #expect(covering.paths.contains([.e1, .e2]))
    }

    @Test func theStartsTransitionsAreTakenAndItsPassingStatesEntered() throws {
        // s0 is left by the start's eventless transition; x by the event raised on its entry.
        let chart = try Chart(states: [
            .atomic(.s0, transitions: [.always(to: .x, outputs: ["t0"])]),
            .atomic(.x, raiseOnEntry: [.go], transitions: [.on(.go, to: .s1)]),
            .atomic(.s1, transitions: [.on(.e, to: .s2)]),
            .atomic(.s2),
        ])
        let covering = chart.coveringPaths(events: [.e])
        #expect(covering.untakenTransitions == [])
        #expect(covering.pathTakingTransition[0] == [])
        #expect(covering.pathTakingTransition[1] == [])
        #expect(covering.pathTakingTransition[2] == [.e])
        #expect(covering.paths == [[.e]])
        #expect(chart.unreachedStates(events: [.e]) == [])
    }

    @Test func theSearchStopsAtItsStateLimitAndSaysSo() throws {
        let chart = try Self.smallChart()
        let full = chart.coveringPaths(events: [.e, .e1, .e2, .back])
        #expect(full.isComplete)
        #expect(chart.coveringPaths(events: [.e, .e1, .e2, .back], stateLimit: full.statesExplored).isComplete)
        let cut = chart.coveringPaths(events: [.e, .e1, .e2, .back], stateLimit: full.statesExplored - 1)
        #expect(!cut.isComplete)
        #expect(cut.statesExplored == full.statesExplored - 1)
    }

    /// A small chart with several reachable states.
    static func smallChart() throws -> Chart {
        try Chart(states: [
            .parallel(.p, children: [
                .compound(.ps1, children: [
                    .atomic(.ps1a, transitions: [.on(.e1, to: .ps1b)]),
                    .atomic(.ps1b, transitions: [.on(.back, to: .ps1a)]),
                ]),
                .compound(.ps2, children: [
                    .atomic(.ps2a, transitions: [.on(.e2, to: .ps2b)]),
                    .atomic(.ps2b, transitions: [.on(.e, to: .ps2a)]),
                ]),
            ]),
        ])
    }
}

@Suite("Statechart: states from outside")
struct StatechartValidationTests {
    let chart = try! Chart(states: [
        .compound(.s0, children: [
            .history(.h),
            .atomic(.s01, transitions: [.on(.e, to: .p)]),
            .parallel(.p, children: [.atomic(.ps1), .compound(.ps2, children: [.atomic(.ps2a), .atomic(.ps2b)])]),
        ]),
        .atomic(.x),
    ])

    @Test func everyStateTheChartReachesIsValid() {
        var state = chart.initialState
        #expect(chart.isValid(state))
        chart.send(.e, to: &state)
        #expect(chart.isValid(state))
    }

    @Test func illegalConfigurationsAreRefused() {
        let illegal: [[S]] = [
            [],                                  // nothing active
            [.s0, .x, .s01],                     // two top-level states
            [.s01],                              // a child without its parent
            [.s0],                               // a compound state without a child
            [.s0, .s01, .p, .ps1, .ps2, .ps2a],  // two children of a compound state
            [.s0, .p, .ps1],                     // a parallel state missing a region
            [.s0, .h, .s01],                     // a history state active
            [.s0, .s01, .y],                     // a state not in the chart
        ]
        for states in illegal {
            #expect(!chart.isValid(StatechartState(states)), "\(states)")
        }
        var withBadHistory = chart.initialState
        withBadHistory.history = StatechartState<S>([.s01, .p]).active // two children remembered
        #expect(!chart.isValid(withBadHistory))
        withBadHistory.history = StatechartState<S>([.s0]).active      // a top-level state remembered
        #expect(!chart.isValid(withBadHistory))
        var beyond = chart.initialState
        beyond.active.insert(127)
        #expect(!chart.isValid(beyond))
    }

    /// A state written as its four words and read back is the same state; words of a state the
    /// chart cannot be in read back too, and `isValid` is what refuses them.
    @Test func aStateRoundTripsThroughItsWords() {
        var state = chart.initialState
        chart.send(.e, to: &state)
        let (activeLow, activeHigh) = state.active.words
        let (historyLow, historyHigh) = state.history.words
        let read = StatechartState<S>(active: StatechartStateSet(words: (activeLow, activeHigh)),
                                      history: StatechartStateSet(words: (historyLow, historyHigh)))
        #expect(read == state)
        #expect(chart.isValid(read))
        var set = StatechartStateSet()
        set.insert(0)
        set.insert(63)
        set.insert(64)
        set.insert(127)
        #expect(set.words.0 == 1 | 1 << 63 && set.words.1 == 1 | 1 << 63)
        #expect(StatechartStateSet(words: set.words) == set)
        #expect(Array(StatechartStateSet(words: (0b101, 0b10))) == [0, 2, 65])
        let tampered = StatechartState<S>(active: StatechartStateSet(words: (activeLow | 1 << UInt64(S.x.rawValue), activeHigh)), history: state.history)
        #expect(!chart.isValid(tampered))
    }
}

@Suite("Statechart: diagrams")
struct StatechartDiagramTests {
    enum Light: Int, StatechartStateID { case on, bright, dim, off }
    enum Switch: Equatable { case toggle, brighter, dimmer }

    /// The start arrow is valid DOT whether the chart starts in a compound state (an arrow into
    /// its cluster, with `lhead`) or an atomic one (a plain arrow). It used to be written
    /// without brackets around `lhead`, which `dot` refuses.
    @Test func theStartArrowIsValidDOT() throws {
        let compoundFirst = try Statechart<Light, Switch, String>(states: [
            .compound(.on, transitions: [.on(.toggle, to: .off)], children: [
                .atomic(.bright, transitions: [.on(.dimmer, to: .dim)]),
                .atomic(.dim),
            ]),
            .atomic(.off, transitions: [.on(.toggle, to: .on)]),
        ])
        #expect(compoundFirst.graphvizDOT(name: "Lamp", stateName: { "\($0)" }, eventName: { "\($0)" }).contains("    \"[*]\" -> \"0\" [lhead=\"cluster_0\"];\n"))
        let atomicFirst = try Statechart<Light, Switch, String>(states: [
            .atomic(.off, transitions: [.on(.toggle, to: .on)]),
            .compound(.on, transitions: [.on(.toggle, to: .off)], children: [.atomic(.bright), .atomic(.dim)]),
        ])
        #expect(atomicFirst.graphvizDOT(name: "Lamp", stateName: { "\($0)" }, eventName: { "\($0)" }).contains("    \"[*]\" -> \"3\";\n"))
    }

    /// Two states whose names make the same Mermaid identifier stay two nodes: the transition
    /// between them is not drawn as a loop. Only the chart's states are named: the raw values
    /// it skips (`S` has states this chart does not) are not.
    @Test func statesWhoseNamesMakeOneMermaidIdentifierStayApart() throws {
        let chart = try Chart(states: [
            .atomic(.s0, transitions: [.on(.e, to: .s1)]),
            .atomic(.s1, transitions: [.on(.e, to: .s2)]),
            .atomic(.s2),
        ])
        let names: [S: String] = [.s0: "door open", .s1: "door_open", .s2: "door-open"]
        let mermaid = chart.mermaidStateDiagram(
            stateName: { state in
                guard let name = names[state] else {
                    Issue.record("asked to name \(state), which is not in the chart")
                    return "\(state)"
                }
                return name
            },
            eventName: { "\($0)" })
        let lines = mermaid.split(separator: "\n").map { String($0.drop { $0 == " " }) }
        let edges = lines.filter { $0.contains("-->") && !$0.hasPrefix("[*]") }
        #expect(edges.count == 2, "\(mermaid)")
        for edge in edges {
            let ends = edge.split(separator: " ")
            #expect(ends[0] != ends[2], "\(mermaid)")
        }
        #expect(Set(edges.flatMap { edge in edge.split(separator: " ").enumerated().filter { $0.offset == 0 || $0.offset == 2 }.map { String($0.element) } }).count == 3, "\(mermaid)")
    }

    /// A parallel state's history state is drawn inside it, not as a region of its own: only
    /// its two regions are separated by `--`, whatever the history state's place among them.
    @Test func aParallelStatesHistoryIsNoRegionInMermaid() throws {
        for historyPosition in 0...2 {
            var children: [StatechartNode<S, E, String>] = [
                .compound(.ps1, children: [.atomic(.ps1a, transitions: [.on(.e, to: .ps1b)]), .atomic(.ps1b)]),
                .compound(.ps2, children: [.atomic(.ps2a)]),
            ]
            children.insert(.history(.h), at: historyPosition)
            let chart = try Chart(states: [
                .parallel(.p, children: children),
                .atomic(.x, transitions: [.on(.back, to: .h)]),
            ])
            let mermaid = chart.mermaidStateDiagram(stateName: { "\($0)" }, eventName: { "\($0)" })
            let lines = mermaid.split(separator: "\n").map { String($0.drop { $0 == " " }) }
            #expect(lines.filter { $0 == "--" }.count == 1, "\(mermaid)")
            #expect(lines.contains("state \"H\" as h"), "\(mermaid)")
        }
    }
}
