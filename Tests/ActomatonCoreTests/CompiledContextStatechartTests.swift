import ActomatonCore
import Testing

// A chart with a context compiled over its configurations, the context evaluated at run time.

private enum Counter: Int, StatechartStateID {
    typealias Context = Int
    case counting
}

private enum Tally: Equatable, Sendable {
    case add, report
}

/// A magazine whose rounds grow without bound with `.load(n)`, and a loop of eventless
/// transitions that unloads it one round a microstep.
private enum Revolver: Int, StatechartStateID {
    typealias Context = Cylinder
    case loaded, ready, empty, unloading, jammed
}

private struct Cylinder: Hashable, Sendable {
    var rounds = 0
    var shots = 0
    var log: [String] = []
}

private enum Hammer: Equatable, Sendable {
    case load(Int), fire, unload, check, jam, clear
}

private func hammerClass(_ trigger: Hammer) -> Int {
    switch trigger {
    case .load: 0
    case .fire: 1
    case .unload: 2
    case .check: 3
    case .jam: 4
    case .clear: 5
    }
}

private let hammers: [Hammer] = [.load(1), .fire, .unload, .check, .jam, .clear, .load(7)]

private func revolver(microstepLimit: Int = 100) throws -> Statechart<Revolver, Hammer, String> {
    try Statechart(context: Cylinder(rounds: 1), microstepLimit: microstepLimit, states: [
        .compound(.loaded, transitions: [
            .on(.jam, to: .jammed, outputs: ["jam"]),
            .on(.unload, to: .unloading),
        ], children: [
            .atomic(.ready, entryActions: [.emit { state, _ in "ready with \(state.context.rounds)" }], transitions: [
                .on(.fire, to: .empty, when: { $0.context.rounds == 1 }, actions: [.assign { $0.rounds = 0; $0.shots += 1 }]),
                .on(.fire, when: { $0.context.rounds > 1 }, outputs: ["bang"], actions: [
                    .assign { $0.rounds -= 1; $0.shots += 1 },
                    .if({ $0.context.rounds < 3 }, then: [.emit("low")], else: [
                        .if({ $0.isIn(.ready) && $0.context.rounds > 100 }, then: [.emit("plenty")]),
                    ]),
                ]),
                .on(.fire, outputs: ["click"]),
                .on(where: { if case .load = $0 { true } else { false } }, label: "load", actions: [
                    .assign(withEvent: { magazine, event in
                        if case let .load(count)? = event { magazine.rounds += count }
                    }),
                    .raise(.check),
                ]),
                .on(.check, actions: [.emit { state, event in "checked \(state.context.rounds) after \(event.map { "\($0)" } ?? "nil")" }]),
            ]),
            .atomic(.empty, entryActions: [.emit("empty")], transitions: [
                .on(where: { if case .load = $0 { true } else { false } }, label: "load", to: .ready, actions: [
                    .assign(withEvent: { magazine, event in
                        if case let .load(count)? = event { magazine.rounds += count }
                    }),
                ]),
                // Whatever the context, the same thing happens: the guard is left out.
                .on(.fire, when: { $0.context.shots > 3 }, outputs: ["click"]),
                .on(.fire, outputs: ["click"]),
            ]),
        ]),
        .atomic(.unloading, transitions: [
            .always(when: { $0.context.rounds > 0 }, actions: [.assign { $0.rounds -= 1; $0.log.append("out") }]),
            .always(to: .empty, outputs: ["unloaded"]),
        ]),
        .atomic(.jammed, transitions: [.on(.clear, to: .ready)]),
    ])
}

@Suite("CompiledContextStatechart: the context evaluated at run time")
struct CompiledContextStatechartTests {
    @Test func theDocumentationExample() throws {
        enum Counter: Int, StatechartStateID {
            typealias Context = Int
            case counting
        }
        enum Tally: Equatable { case add, report }

        let chart = try Statechart<Counter, Tally, String>(context: 0, states: [
            .atomic(.counting, transitions: [
                .on(.add, actions: [.assign { $0 += 1 }]),
                .on(.report, when: { $0.context >= 3 }, actions: [.emit { state, _ in "\(state.context)" }]),
            ]),
        ])
        let counter = try chart.compiledEvaluatingContext(events: [.add, .report]) { $0 == .add ? 0 : 1 }
        var state = counter.initialState
        for _ in 0..<1_000 { counter.send(.add, to: &state) }
        #expect(counter.send(.report, to: &state).outputs == ["1000"])
        #expect(counter.stateCount == 1)
        // The enumerated form cannot compile a counter without bound.
        #expect(throws: StatechartCompileError<Counter>.stateLimitExceeded(limit: 100)) {
            try chart.compiled(events: [.add, .report], stateLimit: 100) { $0 == .add ? 0 : 1 }
        }
    }

    @Test func itAnswersAsTheChartDoesOnRandomEvents() throws {
        let chart = try revolver()
        let compiled = try chart.compiledEvaluatingContext(events: hammers, classifiedBy: hammerClass)
        #expect(compiled.initialOutputs == chart.initialOutputs && compiled.initialOutputs == ["ready with 1"])
        #expect(compiled.initialState.context == chart.initialState.context)
        // One row per configuration: the rows that differ only in the history `loaded` keeps
        // (none, `ready` or `empty`), which no event can tell apart, are merged.
        #expect(compiled.stateCount == 4)
        var random = SplitMix64(seed: 28)
        var state = chart.initialState
        var compiledState = compiled.initialState
        var statuses: [StatechartStatus: Int] = [:]
        for step in 0..<5_000 {
            let event: Hammer = switch Int.random(in: 0..<8, using: &random) {
            case 0: .load(Int.random(in: 0...60, using: &random))
            case 1, 2: .fire
            case 3: .unload
            case 4: .check
            case 5: .jam
            default: .clear
            }
            let expected = chart.send(event, to: &state)
            let reply = compiled.send(event, to: &compiledState)
            statuses[reply.status, default: 0] += 1
            #expect(reply == expected, "step \(step), \(event)")
            #expect(compiledState.context == state.context, "step \(step), \(event)")
            #expect(compiled.configuration(of: compiledState) == state.active, "step \(step), \(event)")
            if reply != expected || compiledState.context != state.context { break }
        }
        // The walk reaches every status the chart can give, the microstep limit included (an
        // unload of over 98 rounds).
        #expect(statuses[.transitioned, default: 0] > 0 && statuses[.ignored, default: 0] > 0)
        #expect(statuses[.stoppedAtMicrostepLimit, default: 0] > 0, "\(statuses)")
    }

    @Test func aGuardWhoseAnswersChangeNothingIsLeftOut() throws {
        let chart = try revolver()
        let compiled = try chart.compiledEvaluatingContext(events: hammers, classifiedBy: hammerClass)
        // In `empty`, `fire` clicks whatever the shots: a plain entry. In `ready` it depends on
        // the rounds: a program.
        var state = compiled.initialState
        compiled.send(.fire, to: &state)
        #expect(compiled.isIn(.empty, state))
        let before = compiled.programSlotCount
        let plain = try Statechart<Revolver, Hammer, String>(context: Cylinder(), states: [
            .atomic(.empty, transitions: [
                .on(.fire, when: { $0.context.shots > 3 }, outputs: ["click"]),
                .on(.fire, outputs: ["click"]),
            ]),
        ]).compiledEvaluatingContext(events: [.fire]) { _ in 0 }
        #expect(plain.programSlotCount == 0 && plain.programSize == 0)
        #expect(before > 0)
        // Outputs emitted before such a guard and after it stay one sequence: a plain entry.
        let around = try Statechart<Revolver, Hammer, String>(context: Cylinder(), states: [
            .atomic(.ready, onExit: ["bye"], transitions: [.on(.fire, to: .unloading)]),
            .atomic(.unloading, onEntry: ["in"], transitions: [
                .always(to: .empty, when: { $0.context.shots > 3 }),
                .always(to: .empty),
            ]),
            .atomic(.empty, onEntry: ["empty"]),
        ]).compiledEvaluatingContext(events: [.fire]) { _ in 0 }
        #expect(around.programSlotCount == 0)
        var aroundState = around.initialState
        #expect(around.send(.fire, to: &aroundState).outputs == ["bye", "in", "empty"])
    }

    @Test func aGuardMarkedAsReadingOnlyTheConfigurationIsAnsweredWhileCompiling() throws {
        // `e0` clicks in x1 only while the other region is in z1; `e1` moves that region.
        func chart(marked: Bool) throws -> Statechart<Shape, Pulse, String> {
            let click = StatechartTransition<Shape, Pulse, String>.on(.e0, when: { $0.isIn(.z1) }, outputs: ["click"])
            return try Statechart(context: Pair(), states: [
                .parallel(.p, children: [
                    .compound(.r1, children: [.atomic(.x1, transitions: [marked ? click.guardReadsConfigurationOnly() : click])]),
                    .compound(.r2, children: [
                        .atomic(.z1, transitions: [.on(.e1, to: .z2)]),
                        .atomic(.z2, transitions: [.on(.e1, to: .z1)]),
                    ]),
                ]),
            ])
        }
        // Unmarked, the guard is tested at run time; marked, each row knows its answer.
        let unmarked = try chart(marked: false).compiledEvaluatingContext(events: [.e0, .e1]) { $0.eventClass }
        let marked = try chart(marked: true).compiledEvaluatingContext(events: [.e0, .e1]) { $0.eventClass }
        #expect(unmarked.programSlotCount == 2)
        #expect(marked.programSlotCount == 0)
        let interpreted = try chart(marked: true)
        var state = interpreted.initialState
        var markedState = marked.initialState
        var replies: [StatechartReply<[String]>] = []
        for event in [Pulse.e0, .e1, .e0, .e1, .e0] {
            let reply = marked.send(event, to: &markedState)
            #expect(reply == interpreted.send(event, to: &state))
            #expect(marked.configuration(of: markedState) == state.active)
            replies.append(reply)
        }
        #expect(replies.map(\.outputs) == [["click"], [], [], [], ["click"]])
        #expect(replies[2].status == .ignored)
    }

    @Test func raisedEventsAreWhatTheirActionsSee() throws {
        let chart = try revolver()
        let compiled = try chart.compiledEvaluatingContext(events: hammers, classifiedBy: hammerClass)
        var state = compiled.initialState
        var chartState = chart.initialState
        let reply = compiled.send(.load(4), to: &state)
        #expect(reply == chart.send(.load(4), to: &chartState))
        #expect(reply.outputs == ["checked 5 after check"])
        #expect(compiled.send(.check, to: &state).outputs == ["checked 5 after check"])
    }

    @Test func aChartWithoutContextHasNoProgram() throws {
        enum Light: Int, StatechartStateID { case on, off }
        let chart = try Statechart<Light, Tally, String>(states: [
            .atomic(.on, transitions: [.on(.add, to: .off, when: { $0.isIn(.on) }, outputs: ["off"])]),
            .atomic(.off, transitions: [.on(.add, to: .on, when: { !$0.isIn(.on) }, outputs: ["on"])]),
        ])
        let compiled = try chart.compiledEvaluatingContext(events: [.add, .report]) { $0 == .add ? 0 : 1 }
        #expect(compiled.programSlotCount == 0)
        var state = compiled.initialState
        #expect(compiled.send(.add, to: &state).outputs == ["off"])
        #expect(compiled.activeLeaves(in: state) == [.off])
    }

    @Test func itRunsOnAMealyMachine() throws {
        let compiled = try revolver().compiledEvaluatingContext(events: hammers, classifiedBy: hammerClass)
        var machine = compiled.machine()
        #expect(machine.send(.load(2)).outputs == ["checked 3 after check"])
        #expect(machine.send(.fire).outputs == ["bang", "low"])
        #expect(machine.state.context.rounds == 2)
        let reducer = compiled.reducer
        var state = compiled.initialState
        #expect(reducer.reduce(.fire, into: &state, environment: ()).outputs == ["empty"])
    }

    @Test func thePathLimitAtTheLimitAndOnePast() throws {
        // `unload` in `ready` loops once per round: its guard fails after 0 to 19 turns, or holds
        // on the 20th microstep, where the step stops at the limit: 21 ways.
        let chart = try revolver(microstepLimit: 20)
        var ways = 0
        for limit in 1...100 where ways == 0 {
            if (try? chart.compiledEvaluatingContext(events: hammers, pathLimit: limit, classifiedBy: hammerClass)) != nil { ways = limit }
        }
        #expect(ways == 21)
        #expect(throws: StatechartCompileError<Revolver>.tooManyPaths(state: [.loaded, .ready], limit: ways - 1)) {
            try chart.compiledEvaluatingContext(events: hammers, pathLimit: ways - 1, classifiedBy: hammerClass)
        }
        #expect(throws: StatechartCompileError<Revolver>.pathLimitOutOfRange(0)) {
            try chart.compiledEvaluatingContext(events: hammers, pathLimit: 0, classifiedBy: hammerClass)
        }
        #expect(throws: StatechartCompileError<Revolver>.pathLimitOutOfRange(65_537)) {
            try chart.compiledEvaluatingContext(events: hammers, pathLimit: 65_537, classifiedBy: hammerClass)
        }
        #expect(StatechartCompileError<Revolver>.tooManyPaths(state: [.loaded, .ready], limit: 19).description
            == "an event in state {loaded, ready} can go more than 19 ways through the guards it meets (an eventless loop on the context?); raise pathLimit or run the chart uncompiled")
    }

    @Test func theClassifierIsChecked() throws {
        // `jam` and `clear` in one class: refused, naming the first event that disagrees.
        #expect(throws: StatechartCompileError<Revolver>.classDisagrees(event: 5, representative: 4, state: [.loaded, .ready])) {
            try revolver().compiledEvaluatingContext(events: [.load(1), .fire, .unload, .check, .jam, .clear]) { min(hammerClass($0), 4) }
        }
    }

    @Test func doneEventsMadeFromTheStateAreRefused() throws {
        let chart = try DChart(context: Vars(), states: [
            .compound(.s0, children: [.final(.s0final, doneEvent: { .doneS0("\($0.context.var1)") })]),
        ])
        #expect(throws: StatechartCompileError<D>.doneEventsMadeAtRunTime) {
            try chart.compiledEvaluatingContext(events: [.foo]) { _ in 0 }
        }
    }
}

// Random charts with a context, compiled with the context at run time, against the chart: a
// fixed shape (a parallel state with deep history and a final state in one region, a second
// compound state, a top-level final state) with random transitions, guards, and content.

private enum Shape: Int, StatechartStateID, CaseIterable {
    typealias Context = Pair
    case p, r1, h1, x1, x2, y1, y2, yDone, r2, z1, z2, z3, q, q1, q2, end
}

private struct Pair: Hashable, Sendable {
    var a = 0
    var b = 1
}

private enum Pulse: Equatable, Sendable {
    case e0, e1, e2, add(Int)

    var eventClass: Int {
        switch self {
        case .e0: 0
        case .e1: 1
        case .e2: 2
        case .add: 3
        }
    }
}

private struct ContextChartGenerator {
    var random: SplitMix64

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
    mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &random) < probability }

    typealias Action = StatechartAction<Shape, Pulse, String>
    typealias Guard = @Sendable (StatechartState<Shape>) -> Bool

    mutating func guardOrNil() -> Guard? {
        if chance(0.4) { return nil }
        let k = int(-2...4)
        switch int(0...3) {
        case 0: return { $0.context.a > k }
        case 1: return { $0.context.b % 2 == 0 }
        case 2: return { $0.isIn(.z2) && $0.context.a < k }
        default: return { $0.isIn(.y1) }
        }
    }

    mutating func action(depth: Int = 0) -> Action {
        switch int(0...(depth == 0 ? 7 : 6)) {
        case 0: let r = int(-2...3); return .assign { $0.a += r }
        case 1: return .assign { $0.b = $0.a - $0.b }
        case 2: return .emit { state, event in "a\(state.context.a) b\(state.context.b) \(event.map { "\($0)" } ?? "-")" }
        case 3: return .emit("o\(int(0...9))")
        case 4: return .assign(withEvent: { pair, event in if case let .add(n)? = event { pair.a += n } })
        case 5: return chance(0.5) ? .raise([Pulse.e0, .e1, .e2][int(0...2)]) : .emit("p\(int(0...9))")
        case 6: return .emit { state, _ in state.isIn(.z3) ? "in z3" : "not z3" }
        default:
            let condition = guardOrNil() ?? { $0.context.a == 0 }
            return .if(condition, then: [action(depth: 1)], else: chance(0.5) ? [action(depth: 1)] : [])
        }
    }

    mutating func actions(_ probability: Double) -> [Action] {
        chance(probability) ? (0..<int(1...3)).map { _ in action() } : []
    }

    mutating func transitions(of state: Shape) -> [StatechartTransition<Shape, Pulse, String>] {
        let targets: [Shape] = [.x1, .x2, .y1, .y2, .yDone, .z1, .z2, .z3, .q, .q1, .q2, .p, .r1, .h1]
        return (0..<int(0...3)).map { _ in
            let target: [Shape] = chance(0.5) ? [chance(0.03) ? .end : targets[int(0...(targets.count - 1))]] : []
            let trigger: StatechartTrigger<Shape, Pulse>
            switch int(0...19) {
            case 0...13: trigger = .event(TransitionPattern([Pulse.e0, .e1, .e2][int(0...2)]))
            case 14...16: trigger = .event(TransitionPattern(where: { if case .add = $0 { true } else { false } }))
            case 17: trigger = .always
            default: trigger = state == .x2 || state == .r1 ? .done(.x2) : .event(TransitionPattern(.e0))
            }
            return StatechartTransition(
                trigger: trigger, targets: target, kind: chance(0.2) ? .internal : .external, condition: guardOrNil(),
                outputs: chance(0.3) ? ["t\(int(0...9))"] : [], actions: actions(0.6))
        }
    }

    mutating func chart() throws -> Statechart<Shape, Pulse, String> {
        func node(_ id: Shape) -> (entry: [Action], exit: [Action], transitions: [StatechartTransition<Shape, Pulse, String>]) {
            (actions(0.3), actions(0.3), transitions(of: id))
        }
        let x1 = node(.x1), x2 = node(.x2), y1 = node(.y1), y2 = node(.y2), r1 = node(.r1)
        let z1 = node(.z1), z2 = node(.z2), z3 = node(.z3), r2 = node(.r2), p = node(.p)
        let q1 = node(.q1), q2 = node(.q2), q = node(.q)
        return try Statechart(context: Pair(), microstepLimit: 8, states: [
            .parallel(.p, entryActions: p.entry, exitActions: p.exit, transitions: p.transitions, children: [
                .compound(.r1, entryActions: r1.entry, exitActions: r1.exit, transitions: r1.transitions, children: [
                    .history(.h1, .deep),
                    .atomic(.x1, entryActions: x1.entry, exitActions: x1.exit, transitions: x1.transitions),
                    .compound(.x2, entryActions: x2.entry, exitActions: x2.exit, transitions: x2.transitions, children: [
                        .atomic(.y1, entryActions: y1.entry, exitActions: y1.exit, transitions: y1.transitions),
                        .atomic(.y2, entryActions: y2.entry, exitActions: y2.exit, transitions: y2.transitions),
                        .final(.yDone, entryActions: actions(0.3)),
                    ]),
                ]),
                .compound(.r2, entryActions: r2.entry, exitActions: r2.exit, transitions: r2.transitions, children: [
                    .atomic(.z1, entryActions: z1.entry, exitActions: z1.exit, transitions: z1.transitions),
                    .atomic(.z2, entryActions: z2.entry, exitActions: z2.exit, transitions: z2.transitions),
                    .atomic(.z3, entryActions: z3.entry, exitActions: z3.exit, transitions: z3.transitions),
                ]),
            ]),
            .compound(.q, entryActions: q.entry, exitActions: q.exit, transitions: q.transitions, children: [
                .atomic(.q1, entryActions: q1.entry, exitActions: q1.exit, transitions: q1.transitions),
                .atomic(.q2, entryActions: q2.entry, exitActions: q2.exit, transitions: q2.transitions),
            ]),
            .final(.end),
        ])
    }
}

@Suite("CompiledContextStatechart: random charts with a context against the chart")
struct CompiledContextStatechartModelTests {
    @Test func randomChartsWithAContextAgreeWithTheirCharts() async {
        var compiledCharts = 0, tooManyPaths = 0, programs = 0, steps = 0, mismatches = 0
        var statuses: [StatechartStatus: Int] = [:]
        for seed in 0..<UInt64(250) {
            // Computes for seconds: lets the tests waiting for the pool's threads run meanwhile.
            await Task.yield()
            var generator = ContextChartGenerator(random: SplitMix64(seed: seed))
            guard let chart = try? generator.chart() else { continue }
            let compiled: CompiledContextStatechart<Shape, Pulse, String>
            do {
                compiled = try chart.compiledEvaluatingContext(events: [.e0, .e1, .e2, .add(1), .add(-3)]) { $0.eventClass }
            } catch .tooManyPaths {
                tooManyPaths += 1
                continue
            } catch {
                Issue.record("seed \(seed): \(error)")
                continue
            }
            compiledCharts += 1
            if compiled.programSlotCount > 0 { programs += 1 }
            guard compiled.initialOutputs == chart.initialOutputs, compiled.initialState.context == chart.initialState.context,
                  compiled.configuration(of: compiled.initialState) == chart.initialState.active
            else {
                Issue.record("seed \(seed): the start differs")
                continue
            }
            var state = chart.initialState
            var compiledState = compiled.initialState
            var random = SplitMix64(seed: seed ^ 0xC0FFEE)
            for step in 0..<300 {
                let event: Pulse = switch Int.random(in: 0...3, using: &random) {
                case 0: .e0
                case 1: .e1
                case 2: .e2
                default: .add(Int.random(in: -3...3, using: &random))
                }
                let expected = chart.send(event, to: &state)
                let reply = compiled.send(event, to: &compiledState)
                statuses[reply.status, default: 0] += 1
                guard reply == expected, compiledState.context == state.context, compiled.configuration(of: compiledState) == state.active else {
                    mismatches += 1
                    if mismatches <= 3 {
                        Issue.record("""
                            seed \(seed), step \(step) (\(event)):
                              chart:    \(expected.status) \(expected.outputs) \(state.activeStates) \(state.context)
                              compiled: \(reply.status) \(reply.outputs) \(compiled.activeLeaves(in: compiledState)) \(compiledState.context)
                            """)
                    }
                    break
                }
                steps += 1
            }
        }
        #expect(mismatches == 0)
        #expect(compiledCharts >= 150, "compiled \(compiledCharts), over the path limit \(tooManyPaths)")
        #expect(programs >= compiledCharts * 9 / 10)
        for status in [StatechartStatus.transitioned, .ignored, .finished, .stoppedAtMicrostepLimit] {
            #expect(statuses[status, default: 0] > 0, "no \(status) in \(statuses)")
        }
        print("CompiledContextStatechartModelTests: \(compiledCharts) charts compiled (\(tooManyPaths) over the path limit),",
              "\(steps) events compared; statuses \(statuses)")
    }
}
