import ActomatonCore
import Testing

// Raised events and the internal queue (SCXML's `<raise>` and the macrostep of appendix D), the
// explicit start, and exits in the trace.

/// Events for the W3C ports: their names as in the tests.
enum IE: Equatable, Sendable {
    case foo, bar, event1, event2, event3, event4, externalEvent, internalEvent1, internalEvent2, internalEvent3, internalEvent4
    case timeout
}

typealias IChart = Statechart<S, IE, String>

/// SCXML's `event="*"`: every event.
let anyEvent: @Sendable (IE) -> Bool = { _ in true }

@Suite("Statechart: raised events (W3C tests 144, 375, 377, 404, 405, 406, 421)")
struct StatechartRaiseTests {
    // test144: events raised in one onentry are queued, and processed, in the order raised.
    @Test func test144RaisedEventsAreQueuedInOrder() throws {
        let chart = try IChart(states: [
            .atomic(.s0, raiseOnEntry: [.foo, .bar], transitions: [
                .on(.foo, to: .s1),
                .on(where: anyEvent, label: "*", to: .fail),
            ]),
            .atomic(.s1, transitions: [
                .on(.bar, to: .pass),
                .on(where: anyEvent, label: "*", to: .fail),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
        #expect(chart.isFinished(chart.initialState))
    }

    // test375: onentry content runs in document order (two handlers: event1 then event2).
    @Test func test375OnEntryRaisesInDocumentOrder() throws {
        let chart = try IChart(states: [
            .atomic(.s0, raiseOnEntry: [.event1, .event2], transitions: [
                .on(.event1, to: .s1),
                .on(where: anyEvent, label: "*", to: .fail),
            ]),
            .atomic(.s1, transitions: [
                .on(.event2, to: .pass),
                .on(where: anyEvent, label: "*", to: .fail),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    // test377: onexit content runs in document order when the state is exited.
    @Test func test377OnExitRaisesInDocumentOrder() throws {
        let chart = try IChart(states: [
            .atomic(.s0, raiseOnExit: [.event1, .event2], transitions: [.always(to: .s1)]),
            .atomic(.s1, transitions: [
                .on(.event1, to: .s2),
                .on(where: anyEvent, label: "*", to: .fail),
            ]),
            .atomic(.s2, transitions: [
                .on(.event2, to: .pass),
                .on(where: anyEvent, label: "*", to: .fail),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    // test404: states are exited innermost first, regions in reverse document order, before
    // the transition's content: event1 (s01p2), event2 (s01p1), event3 (s01p), event4 (the
    // transition) are raised in that order.
    @Test func test404ExitContentThenTransitionContent() throws {
        let chart = try IChart(states: [
            .compound(.s0, initial: .p, transitions: [.on(.timeout, to: .fail)], children: [
                .parallel(.p, raiseOnExit: [.event3], transitions: [.always(to: .s01, raise: [.event4])], children: [
                    .atomic(.ps1, raiseOnExit: [.event2]),
                    .atomic(.ps2, raiseOnExit: [.event1]),
                ]),
                .atomic(.s01, transitions: [.on(.event1, to: .s02), .on(where: anyEvent, label: "*", to: .fail)]),
                .atomic(.s02, transitions: [.on(.event2, to: .s11), .on(where: anyEvent, label: "*", to: .fail)]),
                .atomic(.s11, transitions: [.on(.event3, to: .s12), .on(where: anyEvent, label: "*", to: .fail)]),
                .atomic(.s12, transitions: [.on(.event4, to: .pass), .on(where: anyEvent, label: "*", to: .fail)]),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    // test406: the transition's content runs before the entries, which go parents first and
    // then regions in document order: event1 (the transition), event2 (the parallel state),
    // event3 and event4 (its regions).
    @Test func test406TransitionContentThenEntryContent() throws {
        let chart = try IChart(states: [
            .compound(.s0, transitions: [.on(.timeout, to: .fail)], children: [
                .atomic(.s01, transitions: [.always(to: .p, raise: [.event1])]),
                .parallel(.p, raiseOnEntry: [.event2], transitions: [
                    .on(.event1, to: .s02),
                    .on(where: anyEvent, label: "*", to: .fail),
                ], children: [
                    .atomic(.ps1, raiseOnEntry: [.event3]),
                    .atomic(.ps2, raiseOnEntry: [.event4]),
                ]),
                .atomic(.s02, transitions: [.on(.event2, to: .s11), .on(where: anyEvent, label: "*", to: .fail)]),
                .atomic(.s11, transitions: [.on(.event3, to: .s12), .on(where: anyEvent, label: "*", to: .fail)]),
                .atomic(.s12, transitions: [.on(.event4, to: .pass), .on(where: anyEvent, label: "*", to: .fail)]),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    // test405: the transitions' content runs in document order after every state has exited:
    // event1 and event2 from the exits (reverse document order), then event3 and event4 from
    // the two regions' transitions (document order).
    @Test func test405TransitionContentAfterAllExits() throws {
        let chart = try IChart(states: [
            .compound(.s0, initial: .p, transitions: [.on(.timeout, to: .fail)], children: [
                .parallel(.p, transitions: [.on(.event1, to: .s01)], children: [
                    .compound(.ps1, children: [
                        .atomic(.ps1a, raiseOnExit: [.event2], transitions: [.always(to: .ps1b, raise: [.event3])]),
                        .atomic(.ps1b),
                    ]),
                    .compound(.ps2, children: [
                        .atomic(.ps2a, raiseOnExit: [.event1], transitions: [.always(to: .ps2b, raise: [.event4])]),
                        .atomic(.ps2b),
                    ]),
                ]),
                .atomic(.s01, transitions: [.on(.event2, to: .s02), .on(where: anyEvent, label: "*", to: .fail)]),
                .atomic(.s02, transitions: [.on(.event3, to: .s11), .on(where: anyEvent, label: "*", to: .fail)]),
                .atomic(.s11, transitions: [.on(.event4, to: .pass), .on(where: anyEvent, label: "*", to: .fail)]),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        #expect(chart.initialState.isIn(.pass))
    }

    // test421: the internal queue is worked off, dropping events that enable nothing, before
    // the next external event: internalEvent1 and 2 enable nothing, 3 and 4 lead to pass, and
    // the external event only comes after.
    @Test func test421InternalEventsBeforeExternalOnes() throws {
        let chart = try IChart(states: [
            .compound(.s1, raiseOnEntry: [.internalEvent1, .internalEvent2, .internalEvent3, .internalEvent4],
                      transitions: [.on(.externalEvent, to: .fail)], children: [
                .atomic(.s11, transitions: [.on(.internalEvent3, to: .s12)]),
                .atomic(.s12, transitions: [.on(.internalEvent4, to: .pass)]),
            ]),
            .final(.pass),
            .final(.fail),
        ])
        var state = chart.initialState
        #expect(state.isIn(.pass))
        #expect(chart.send(.externalEvent, to: &state).status == .finished)
        #expect(state.isIn(.pass))
    }

    // SCXML's macrostep: eventless transitions first; then the internal queue in the order its
    // events were generated: a transition's content, then a final state's entry content, then
    // the done event that final state causes.
    @Test func eventlessFirstThenTheQueueInGenerationOrder() throws {
        let chart = try IChart(states: [
            .parallel(.p, transitions: [.onDone(.ps1, outputs: ["done ps1"])], children: [
                .compound(.ps1, children: [
                    .atomic(.ps1a, transitions: [.on(.foo, to: .done1, raise: [.event1])]),
                    .final(.done1, raiseOnEntry: [.event2]),
                ]),
                .compound(.ps2, children: [
                    .atomic(.ps2a, transitions: [
                        .always(to: .ps2b, when: { $0.isIn(.done1) }, outputs: ["eventless"], raise: [.event3]),
                    ]),
                    .atomic(.ps2b, transitions: [
                        .on(.event1, outputs: ["event1"]),
                        .on(.event2, outputs: ["event2"]),
                        .on(.event3, outputs: ["event3"]),
                    ]),
                ]),
            ]),
        ])
        var state = chart.initialState
        let reply = chart.send(.foo, to: &state)
        #expect(reply.status == .transitioned)
        #expect(reply.outputs == ["eventless", "event1", "event2", "done ps1", "event3"])
    }

    @Test func aRaisedEventIsTakenLikeAnExternalOne() throws {
        let chart = try IChart(states: [
            .atomic(.s0, transitions: [.on(.foo, to: .s1, outputs: ["foo"], raise: [.bar])]),
            .atomic(.s1, onEntry: ["enter s1"], onExit: ["exit s1"], transitions: [.on(.bar, to: .s2, outputs: ["bar"])]),
            .atomic(.s2, onEntry: ["enter s2"]),
        ])
        var state = chart.initialState
        #expect(chart.send(.foo, to: &state) == StatechartReply(status: .transitioned, outputs: ["foo", "enter s1", "exit s1", "bar", "enter s2"]))
        #expect(state.isIn(.s2))
        // Sending the raised event from outside does the same.
        state = chart.initialState
        chart.send(.foo, to: &state)
        #expect(chart.send(.bar, to: &state).status == .ignored)
    }

    @Test func raisedEventsWaitingWhenTheChartFinishesAreDropped() throws {
        let chart = try IChart(states: [
            .atomic(.s0, transitions: [.on(.foo, to: .pass, raise: [.bar])]),
            .final(.pass, raiseOnEntry: [.bar]),
        ])
        var state = chart.initialState
        #expect(chart.send(.foo, to: &state).status == .transitioned)
        #expect(chart.isFinished(state))
        #expect(chart.send(.bar, to: &state).status == .finished)
    }

    @Test func aRaiseLoopStopsAtTheMicrostepLimit() throws {
        let chart = try IChart(microstepLimit: 10, states: [
            .atomic(.s0, transitions: [
                .on(.foo, outputs: ["foo"], raise: [.bar]),
                .on(.bar, outputs: ["bar"], raise: [.foo]),
            ]),
        ])
        var state = chart.initialState
        let reply = chart.send(.foo, to: &state)
        #expect(reply.status == .stoppedAtMicrostepLimit)
        // The ring's slots are reused across the loop: the events come out in order.
        #expect(reply.outputs == (0..<5).flatMap { _ in ["foo", "bar"] })
        #expect(state == chart.initialState)
        // The next event starts afresh: nothing is left over from the stopped step.
        #expect(chart.send(.bar, to: &state).outputs.first == "bar")
        // A start that raises in a loop says so in its status, as a start whose eventless
        // transitions loop.
        let looping = try IChart(states: [.atomic(.s0, raiseOnEntry: [.foo], transitions: [.on(.foo, raise: [.foo])])])
        #expect(looping.initialStatus == .stoppedAtMicrostepLimit)
        #expect(looping.initialState.isIn(.s0) && looping.isValid(looping.initialState))
        var restarted = chart.initialState
        #expect(looping.start(into: &restarted).status == .stoppedAtMicrostepLimit)
    }

    /// A chart whose `.foo` enters `s1`, which raises `count` events; each is counted.
    static func flood(_ count: Int, limit: Int) throws -> IChart {
        try IChart(microstepLimit: 10_000, raisedEventLimit: limit, states: [
            .atomic(.s0, transitions: [.on(.foo, to: .s1)]),
            .atomic(.s1, raiseOnEntry: Array(repeating: .bar, count: count), transitions: [.on(.bar, outputs: ["bar"])]),
        ])
    }

    @Test func theRaisedEventLimitAtTheLimitAndOnePast() throws {
        for limit in [1, 4, 1_000] {
            let atLimit = try Self.flood(limit, limit: limit)
            var state = atLimit.initialState
            let reply = atLimit.send(.foo, to: &state)
            #expect(reply.status == .transitioned)
            #expect(reply.outputs.count == limit)

            let onePast = try Self.flood(limit + 1, limit: limit)
            state = onePast.initialState
            let stopped = onePast.send(.foo, to: &state)
            // The microstep that raised one too many finishes, legally, and the step stops there.
            #expect(stopped.status == .stoppedAtRaisedEventLimit)
            #expect(stopped.outputs.isEmpty)
            #expect(state.isIn(.s1) && onePast.isValid(state))
        }
        let atLimit = try IChart(raisedEventLimit: 2, states: [.atomic(.s0, raiseOnEntry: [.foo, .foo])])
        #expect(atLimit.initialStatus == .transitioned)
        let onePast = try IChart(raisedEventLimit: 2, states: [.atomic(.s0, raiseOnEntry: [.foo, .foo, .foo])])
        #expect(onePast.initialStatus == .stoppedAtRaisedEventLimit)
        #expect(onePast.initialState.isIn(.s0))
    }

    @Test func theRaisedEventLimitIsChecked() {
        #expect(throws: StatechartError<S>.raisedEventLimitOutOfRange(0)) {
            try IChart(raisedEventLimit: 0, states: [.atomic(.s0)])
        }
        #expect(throws: StatechartError<S>.raisedEventLimitOutOfRange(1_001)) {
            try IChart(raisedEventLimit: 1_001, states: [.atomic(.s0)])
        }
        #expect(throws: Never.self) { try IChart(raisedEventLimit: 1_000, states: [.atomic(.s0)]) }
        #expect(StatechartError<S>.raisedEventLimitOutOfRange(0).description == "raised-event limit 0 is outside 1...1000")
        #expect(throws: StatechartError<S>.misplacedContent(.h)) {
            try IChart(states: [.compound(.s0, children: [.atomic(.s01), StatechartNode(id: .h, kind: .history(.shallow), raiseOnEntry: [.foo])])])
        }
    }

    /// Events that own memory, so the queue's moves and drops are checked for leaks and double
    /// frees by the allocator (and by address sanitizer runs).
    enum Word: Equatable, Sendable {
        case say(String)
        case go
    }

    @Test func eventsThatOwnMemoryAreMovedThroughTheQueueAndDropped() throws {
        let long = String(repeating: "x", count: 100)
        let chart = try Statechart<S, Word, String>(microstepLimit: 3, raisedEventLimit: 4, states: [
            .atomic(.s0, transitions: [
                .on(.go, to: .s1, raise: [.say(long + "1"), .say(long + "2"), .say(long + "3"), .say(long + "4")]),
                .on(where: { if case .say = $0 { true } else { false } }, label: "say", outputs: ["said"]),
            ]),
            .atomic(.s1, transitions: [
                .on(where: { $0 == .say(long + "1") }, label: "say 1", outputs: ["1"]),
                .on(where: { $0 == .say(long + "2") }, label: "say 2", outputs: ["2"]),
            ]),
        ])
        var state = chart.initialState
        // go, say 1, say 2: three microsteps; say 3 is taken off the queue but enables nothing,
        // say 4 likewise; the step ends.
        #expect(chart.send(.go, to: &state) == StatechartReply(status: .transitioned, outputs: ["1", "2"]))
        // Stopped at the microstep limit with events left in the queue: they are dropped.
        let stopping = try Statechart<S, Word, String>(microstepLimit: 2, raisedEventLimit: 4, states: [
            .atomic(.s0, transitions: [.on(.go, to: .s1, raise: [.say(long + "1"), .say(long + "2"), .say(long + "3")])]),
            .atomic(.s1, transitions: [.on(where: { _ in true }, label: "*", outputs: ["said"])]),
        ])
        state = stopping.initialState
        #expect(stopping.send(.go, to: &state) == StatechartReply(status: .stoppedAtMicrostepLimit, outputs: ["said"]))
    }

    @Test func diagramsNameTheRaisedEvents() throws {
        let chart = try IChart(states: [
            .atomic(.s0, transitions: [.on(.foo, to: .s1, raise: [.bar, .event1])]),
            .atomic(.s1),
        ])
        #expect(chart.mermaidStateDiagram(stateName: { "\($0)" }, eventName: { "\($0)" }).contains("s0 --> s1 : foo / raise bar, event1"))
    }

    @Test func aCompiledChartKeepsWhatRaisedEventsDo() throws {
        let chart = try IChart(states: [
            .atomic(.s0, transitions: [.on(.foo, to: .s1, raise: [.bar])]),
            .atomic(.s1, transitions: [.on(.bar, to: .s2, outputs: ["bar"]), .on(.foo, to: .s0)]),
            .atomic(.s2, raiseOnExit: [.event1], transitions: [.on(.foo, to: .s0)]),
        ])
        let compiled = try chart.compiled(events: [.foo, .bar, .event1]) { event in
            switch event {
            case .foo: 0
            case .bar: 1
            default: 2
            }
        }
        var state = chart.initialState
        var row = compiled.initialState
        for event in [IE.foo, .bar, .foo, .foo, .event1, .foo] {
            #expect(chart.send(event, to: &state) == compiled.send(event, to: &row))
            #expect(compiled.configuration(of: row) == state.active)
        }
    }
}

@Suite("Statechart: an explicit start")
struct StatechartStartTests {
    @Test func startingGivesTheInitialStateAndOutputsThroughYourSinkAndTrace() throws {
        let chart = try IChart(states: [
            .compound(.s0, onEntry: ["s0"], raiseOnEntry: [.foo], children: [
                .atomic(.s01, onEntry: ["s01"], onExit: ["-s01"], transitions: [.on(.foo, to: .s02, outputs: ["foo"])]),
                .atomic(.s02, onEntry: ["s02"]),
            ]),
        ])
        var state = StatechartState<S>([.s1])  // anything: it is replaced
        var outputs: [String] = []
        var trace = StatechartTransitionList()
        let status = chart.start(into: &state, outputs: &outputs, trace: &trace)
        #expect(status == .transitioned)
        #expect(state == chart.initialState)
        #expect(outputs == chart.initialOutputs)
        #expect(outputs == ["s0", "s01", "-s01", "foo", "s02"])
        #expect(trace.indices == [0])
        #expect(trace.enteredStates == [S.s0, .s01, .s02].map(\.rawValue))
        #expect(trace.exitedStates == [S.s01.rawValue])

        var other = chart.initialState
        other.history = StatechartState<S>([.s01]).active
        #expect(chart.start(into: &other) == StatechartReply(status: .transitioned, outputs: chart.initialOutputs))
        #expect(other == chart.initialState)
    }

    @Test func aStartThatFinishesTheChartSaysTransitioned() throws {
        let chart = try IChart(states: [.atomic(.s0, transitions: [.always(to: .pass)]), .final(.pass)])
        var state = StatechartState<S>()
        #expect(chart.start(into: &state).status == .transitioned)
        #expect(chart.isFinished(state))
    }
}

/// A trace that follows the configuration from the entries and exits it is told of, and
/// evaluates SCXML's `In(…)` where entry and exit content would: the way conditional content
/// is rebuilt outside the chart.
struct ConfigurationTrace: StatechartTrace {
    var active: Set<Int>
    /// `(state, in)` for every state whose exit or entry was reported: whether `watched` was
    /// active then.
    var seenOnExit: [(Int, Bool)] = []
    var seenOnEntry: [(Int, Bool)] = []
    let watched: Int

    init(active: Set<Int>, watching state: S) {
        self.active = active
        self.watched = state.rawValue
    }

    mutating func took(transition index: Int) {}

    mutating func entered(state index: Int) {
        active.insert(index)
        seenOnEntry.append((index, active.contains(watched)))
    }

    mutating func exited(state index: Int) {
        seenOnExit.append((index, active.contains(watched)))
        active.remove(index)
    }
}

@Suite("Statechart: exits in the trace (W3C tests 409, 411)")
struct StatechartExitTraceTests {
    @Test func exitsAreReportedInExitOrderBeforeTheTransitionAndTheEntries() throws {
        let chart = try Chart(states: [
            .compound(.s0, initial: .p, children: [
                .parallel(.p, transitions: [.on(.e, to: .s1)], children: [
                    .compound(.ps1, children: [.atomic(.ps1a)]),
                    .compound(.ps2, children: [.atomic(.ps2a)]),
                ]),
                .atomic(.s1),
            ]),
        ])
        var state = chart.initialState
        var outputs: [String] = []
        var trace = StatechartTransitionList()
        _ = chart.send(.e, to: &state, outputs: &outputs, trace: &trace)
        #expect(trace.exitedStates == [S.ps2a, .ps2, .ps1a, .ps1, .p].map(\.rawValue))
        #expect(trace.enteredStates == [S.s1.rawValue])
        #expect(trace.indices == [0])
    }

    // test409: a state is removed from the configuration as it exits, so when s01's exit
    // content runs, In('s011') is false (the original raises event1, which fails, if it is
    // true). The configuration here is the trace's, built from what the chart reports.
    @Test func test409StatesLeaveTheConfigurationAsTheyExit() throws {
        let chart = try Chart(states: [
            .compound(.s0, transitions: [.on(.e1, to: .fail)], children: [
                .compound(.s01, children: [
                    .compound(.s11, children: [.atomic(.s12, transitions: [.always(to: .s02)])]),
                ]),
                .atomic(.s02),
            ]),
            .final(.fail),
        ])
        var state = StatechartState<S>()
        var outputs: [String] = []
        var trace = ConfigurationTrace(active: [], watching: .s11)
        #expect(chart.start(into: &state, outputs: &outputs, trace: &trace) == .transitioned)
        #expect(trace.seenOnExit.map(\.0) == [S.s12, .s11, .s01].map(\.rawValue))
        #expect(trace.seenOnExit.first { $0.0 == S.s01.rawValue }?.1 == false)
        #expect(trace.active == Set(state.activeStates.map(\.rawValue)))
        #expect(state.isIn(.s02))
    }

    // test411: a state is added to the configuration before its entry content runs, and
    // entries go outermost first: In('s01') is false in s0's onentry and true in s01's.
    @Test func test411StatesJoinTheConfigurationBeforeTheirEntryContent() throws {
        let chart = try Chart(states: [
            .compound(.s0, children: [.atomic(.s01)]),
        ])
        var state = StatechartState<S>()
        var outputs: [String] = []
        var trace = ConfigurationTrace(active: [], watching: .s01)
        _ = chart.start(into: &state, outputs: &outputs, trace: &trace)
        #expect(trace.seenOnEntry.map(\.0) == [S.s0, .s01].map(\.rawValue))
        #expect(trace.seenOnEntry.map(\.1) == [false, true])
        #expect(trace.active == Set(state.activeStates.map(\.rawValue)))
    }

    @Test func aTraceFollowingEntriesAndExitsKeepsTheConfiguration() throws {
        let chart = StatechartHistoryTests.chart
        var state = StatechartState<S>()
        var outputs: [String] = []
        var trace = ConfigurationTrace(active: [], watching: .s0)
        _ = chart.start(into: &state, outputs: &outputs, trace: &trace)
        for event in [E.e, .e1, .e2, .go, .back, .e, .go, .e2, .back, .e1] {
            _ = chart.send(event, to: &state, outputs: &outputs, trace: &trace)
            #expect(trace.active == Set(state.activeStates.map(\.rawValue)))
        }
    }
}
