import ActomatonCore
import ComputeOffThePool
import Foundation
import ActomatonTesting
import PlatformerExample
import Testing

@Suite("Platformer: the chart compiled into a table")
struct CompiledPlatformerTests {
    let chart: Statechart<Platformer.State, Platformer.Event, Platformer.Output>
    let compiled: CompiledStatechart<Platformer.State, Platformer.Event, Platformer.Output>

    /// The chart compiled once for every test, off the pool's threads: seconds in a debug build.
    private static let compiledOnce = Task {
        try await computeOffThePool { try Platformer.compiled(try Platformer.chart()) }
    }

    init() async throws {
        chart = try Platformer.chart()
        compiled = try await Self.compiledOnce.value
    }

    /// Every state the hand-written controller can reach from the start, with the sample events.
    static func handWrittenStates() -> [HandWrittenPlatformer] {
        var states = [HandWrittenPlatformer()]
        var head = 0
        while head < states.count {
            for event in Platformer.sampleEvents {
                var next = states[head]
                var outputs: [Platformer.Output] = []
                _ = next.send(event, outputs: &outputs)
                if !states.contains(next) { states.append(next) }
            }
            head += 1
        }
        return states
    }

    @Test func itHasAsManyStatesAsTheHandWrittenSwitch() {
        // The chart reaches more states (its history differs before and after a first stun),
        // but no event can tell them apart, so the compiled table has the hand-written count:
        // the body's 7 motions (3 on the ground, jumping and falling after one jump or two)
        // with the weapon's 14 (holstered and aiming with 0 to 3 rounds, recoil and cooldown
        // with 0 to 2), and the same 7 stunned with 1 or 2 ticks left with the weapon's 8 it
        // can be in then (a stunned character cannot fire).
        let handWritten = Self.handWrittenStates().count
        #expect(handWritten == 7 * 14 + 7 * 2 * 8)
        #expect(compiled.stateCount == handWritten)
        #expect(chart.coveringPaths(events: Platformer.sampleEvents).statesExplored > handWritten)
        #expect(compiled.classCount == Platformer.sampleEvents.count)
    }

    @Test func theGeneratedTestsPassOnTheCompiledChart() {
        var machine = StatechartTestMachine(chart)
        var state = compiled.initialState
        machine.runCoveringPaths(events: Platformer.sampleEvents) { path, position, reply, chartState in
            if position == 0 { state = compiled.initialState }
            let event = path[position]
            #expect(compiled.send(event, to: &state) == reply, "\(path) at \(event)")
            #expect(compiled.activeLeaves(in: state) == chart.activeLeaves(in: chartState), "\(path) at \(event)")
        }
        machine.expectEveryTransitionTaken()
    }

    @Test func tenThousandRandomEventsAgreeWithTheChartAndTheHandWrittenSwitch() {
        var random = SplitMix64(seed: 7)
        var chartState = chart.initialState
        var state = compiled.initialState
        var handWritten = HandWrittenPlatformer()
        for step in 0..<10_000 {
            // Every kind, with speeds across and beyond the bands.
            var event = Platformer.sampleEvents[Int(random.next() % UInt64(Platformer.sampleEvents.count))]
            if case .move = event { event = .move(speed: Int(random.next() % 41) - 20) }
            let expected = chart.send(event, to: &chartState)
            let reply = compiled.send(event, to: &state)
            var outputs: [Platformer.Output] = []
            let handled = handWritten.send(event, outputs: &outputs)
            guard reply == expected, compiled.configuration(of: state) == chartState.active,
                  handled == (reply.status == .transitioned), outputs == reply.outputs,
                  handWritten.activeLeaves == compiled.activeLeaves(in: state),
                  handWritten.counters == chartState.context else {
                Issue.record("step \(step): \(event): chart \(expected), compiled \(reply) \(compiled.activeLeaves(in: state)), hand-written \(handled) \(outputs) \(handWritten.counters), chart's context \(chartState.context)")
                return
            }
        }
    }

    @Test func withTheContextLeftToRunTimeItAgreesWithTheChart() throws {
        let evaluating = try Platformer.compiledEvaluatingContext(chart)
        // A row per configuration (merged as in the enumerated table), not per value of the
        // counters: 40 rows against the enumerated table's 210 (the README's figures), and the
        // slots that read or update the counters run programs.
        #expect(evaluating.stateCount == 40 && compiled.stateCount == 210)
        #expect(evaluating.programSlotCount > 0)
        #expect(evaluating.initialOutputs == chart.initialOutputs)
        var random = SplitMix64(seed: 11)
        var chartState = chart.initialState
        var state = evaluating.initialState
        for step in 0..<10_000 {
            var event = Platformer.sampleEvents[Int(random.next() % UInt64(Platformer.sampleEvents.count))]
            if case .move = event { event = .move(speed: Int(random.next() % 41) - 20) }
            let expected = chart.send(event, to: &chartState)
            let reply = evaluating.send(event, to: &state)
            guard reply == expected, evaluating.configuration(of: state) == chartState.active, state.context == chartState.context else {
                Issue.record("step \(step): \(event): chart \(expected) \(chartState.context), compiled \(reply) \(state.context)")
                return
            }
        }
        var machine = StatechartTestMachine(chart)
        machine.runCoveringPaths(events: Platformer.sampleEvents) { path, position, reply, chartState in
            if position == 0 { state = evaluating.initialState }
            let event = path[position]
            #expect(evaluating.send(event, to: &state) == reply, "\(path) at \(event)")
            #expect(evaluating.activeLeaves(in: state) == chart.activeLeaves(in: chartState), "\(path) at \(event)")
            #expect(state.context == chartState.context, "\(path) at \(event)")
        }
        print("Platformer compiled with its context at run time: \(evaluating.stateCount) rows,",
              "\(evaluating.programSlotCount) of \(evaluating.stateCount * evaluating.classCount) slots run programs",
              "(\(evaluating.programSize) words)")
    }

    @Test func compilingChecksTheSpeedBands() throws {
        // A classifier that puts a speed of 5 with the runs is caught while compiling.
        let wrong: @Sendable (Platformer.Event) -> Int = { event in
            if case let .move(speed) = event, speed == 5 { return 2 }
            return Platformer.eventClass(event)
        }
        #expect(throws: StatechartCompileError<Platformer.State>.self) {
            try chart.compiled(events: Platformer.sampleEvents + [.move(speed: 5)], classifiedBy: wrong)
        }
    }

    /// The embedded tables, as the module holds them.
    static let tablesPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Plugins/PlatformerExample/PlatformerTables.swift")

    @Test func theEmbeddedTablesAreTheChartsCurrentOnes() throws {
        let source = compiled.tables.swiftSource(named: "platformerTables", outputType: "Platformer.Output", accessLevel: "public") {
            ".\($0.name)"
        }
        if ProcessInfo.processInfo.environment["ACTOMATON_REGENERATE"] != nil {
            try source.write(to: Self.tablesPath, atomically: true, encoding: .utf8)
        }
        let embedded = try String(contentsOf: Self.tablesPath, encoding: .utf8)
        #expect(embedded == source, """
            Plugins/PlatformerExample/PlatformerTables.swift is not the chart's current tables; regenerate it with
            ACTOMATON_REGENERATE=1 swift test --filter theEmbeddedTablesAreTheChartsCurrentOnes
            """)
        #expect(Platformer.embeddedChart.tables == compiled.tables)
    }
}
