import ComputeOffThePool
import ActomatonCore
import Testing

@Suite("CompiledStatechart: a chart as a transition table")
struct CompiledStatechartTests {
    enum Light: Int, StatechartStateID { case on, bright, dim, off }
    enum Switch: Equatable { case toggle, brighter, dimmer }

    static func lampChart() throws -> Statechart<Light, Switch, String> {
        try Statechart<Light, Switch, String>(states: [
            .compound(.on, onEntry: ["lamp on"], onExit: ["lamp off"],
                      transitions: [.on(.toggle, to: .off)], children: [
                .atomic(.bright, transitions: [.on(.dimmer, to: .dim)]),
                .atomic(.dim, transitions: [.on(.brighter, to: .bright)]),
            ]),
            .atomic(.off, transitions: [.on(.toggle, to: .on)]),
        ])
    }

    static func lampClass(_ event: Switch) -> Int {
        switch event {
        case .toggle: 0
        case .brighter: 1
        case .dimmer: 2
        }
    }

    @Test func theDocumentationExample() throws {
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
        let lamp = try chart.compiled(events: [.toggle, .brighter, .dimmer]) { event in
            switch event {
            case .toggle: 0
            case .brighter: 1
            case .dimmer: 2
            }
        }
        var state = lamp.initialState             // on, bright
        lamp.send(.dimmer, to: &state)            // on, dim
        #expect(lamp.send(.toggle, to: &state).outputs == ["lamp off"])
        #expect(lamp.isIn(.off, state))

        #expect(lamp.activeLeaves(in: state) == [.off])
    }

    @Test func itAnswersAsTheChartDoes() throws {
        let chart = try Self.lampChart()
        let lamp = try chart.compiled(events: [.toggle, .brighter, .dimmer], classifiedBy: Self.lampClass)
        #expect(lamp.initialOutputs == ["lamp on"])
        #expect(lamp.tables.longestOutputSequence == 1)
        var initial: [String] = []
        lamp.emitInitialOutputs(into: &initial)
        #expect(initial == ["lamp on"])
        #expect(lamp.configuration(of: lamp.initialState) == chart.initialState.active)
        // on/bright, on/dim, off — and off after a toggle from dim is the same state as from
        // bright (history is not kept here), so three states.
        #expect(lamp.stateCount == 3 && lamp.classCount == 3)
        var state = lamp.initialState
        var chartState = chart.initialState
        for event in [Switch.brighter, .dimmer, .dimmer, .toggle, .dimmer, .toggle, .brighter, .toggle, .toggle] {
            #expect(lamp.send(event, to: &state) == chart.send(event, to: &chartState))
            #expect(lamp.configuration(of: state) == chartState.active)
        }
    }

    @Test func statesThatDifferOnlyInHistoryThatNeverShowsAreMerged() throws {
        // `on` remembers bright or dim, but a toggle back always enters bright (no history
        // state), so the two `off`s the chart reaches are one compiled state.
        let chart = try Self.lampChart()
        let lamp = try chart.compiled(events: [.toggle, .brighter, .dimmer], classifiedBy: Self.lampClass)
        var fromBright = chart.initialState
        chart.send(.toggle, to: &fromBright)
        var fromDim = chart.initialState
        chart.send(.dimmer, to: &fromDim)
        chart.send(.toggle, to: &fromDim)
        #expect(fromBright != fromDim && fromBright.active == fromDim.active)
        #expect(lamp.stateCount == 3)

        // With a history state the memory shows: off remembering bright and off remembering dim
        // stay apart. (The initial on/bright, with nothing remembered, behaves as on/bright does
        // after a return, and is merged with it.)
        enum Lamp: Int, StatechartStateID { case on, resume, bright, dim, off }
        let remembering = try Statechart<Lamp, Switch, String>(states: [
            .compound(.on, transitions: [.on(.toggle, to: .off)], children: [
                .history(.resume, .shallow),
                .atomic(.bright, transitions: [.on(.dimmer, to: .dim)]),
                .atomic(.dim, transitions: [.on(.brighter, to: .bright)]),
            ]),
            .atomic(.off, transitions: [.on(.toggle, to: .resume)]),
        ])
        let compiled = try remembering.compiled(events: [.toggle, .brighter, .dimmer], classifiedBy: Self.lampClass)
        #expect(compiled.stateCount == 4)
        var state = compiled.initialState
        var chartState = remembering.initialState
        for event in [Switch.dimmer, .toggle, .toggle, .toggle, .brighter, .toggle, .toggle, .dimmer] {
            #expect(compiled.send(event, to: &state) == remembering.send(event, to: &chartState))
            #expect(compiled.configuration(of: state) == chartState.active)
        }
    }

    @Test func sendingByClassAndRejectingWhatIsNotInTheTable() throws {
        let lamp = try Self.lampChart().compiled(events: [.toggle, .brighter, .dimmer], classifiedBy: Self.lampClass)
        var state = lamp.initialState
        var outputs: [String] = []
        #expect(lamp.send(eventClass: 2, to: &state, outputs: &outputs) == .transitioned)
        #expect(lamp.isIn(.dim, state))
        for eventClass in [-1, 3, Int.max, Int.min] {
            let before = state
            #expect(lamp.send(eventClass: eventClass, to: &state, outputs: &outputs) == .rejected)
            #expect(state == before && outputs.isEmpty)
        }
        // A state of another compiled chart (one with more states) is rejected too.
        #expect(lamp.state(atIndex: 2) != nil)
        #expect(lamp.state(atIndex: 3) == nil && lamp.state(atIndex: -1) == nil)
        var foreign = try Self.bigChart(regions: 3).compiled(events: Array(0..<3), classifiedBy: { $0 }).state(atIndex: 7)!
        #expect(lamp.send(eventClass: 0, to: &foreign, outputs: &outputs) == .rejected)
        #expect(foreign.index == 7 && lamp.configuration(of: foreign).isEmpty && lamp.activeLeaves(in: foreign).isEmpty)
        // A classifier that answers out of range is rejected the same way.
        let sloppy = try CompiledStatechart<Light, Switch, String>(tables: lamp.tables) { $0 == .dimmer ? 9 : 0 }
        #expect(sloppy.send(.dimmer, to: &state) == StatechartReply(status: .rejected, outputs: []))
    }

    @Test func itRunsOnAMealyMachine() throws {
        let lamp = try Self.lampChart().compiled(events: [.toggle, .brighter, .dimmer], classifiedBy: Self.lampClass)
        var machine = lamp.machine()
        #expect(machine.send(.toggle) == StatechartReply(status: .transitioned, outputs: ["lamp off"]))
        #expect(machine.send(.toggle) == StatechartReply(status: .transitioned, outputs: ["lamp on"]))
        var state = lamp.initialState
        #expect(lamp.reducer.reduce(.dimmer, into: &state, environment: ()) == StatechartReply(status: .transitioned, outputs: []))
        #expect(lamp.isIn(.dim, state))
    }

    // MARK: Classes

    @Test func theClassifierIsChecked() throws {
        let chart = try Self.lampChart()
        #expect(throws: StatechartCompileError<Light>.noEvents) { try chart.compiled(events: []) { _ in 0 } }
        #expect(throws: StatechartCompileError<Light>.negativeClass(event: 1, eventClass: -1)) {
            try chart.compiled(events: [.toggle, .dimmer]) { $0 == .toggle ? 0 : -1 }
        }
        #expect(throws: StatechartCompileError<Light>.classWithoutEvent(eventClass: 1)) {
            try chart.compiled(events: [.toggle, .dimmer]) { $0 == .toggle ? 0 : 2 }
        }
        // Toggle and dimmer in one class: the chart tells them apart in the first state.
        #expect(throws: StatechartCompileError<Light>.classDisagrees(event: 2, representative: 0, state: [.on, .bright])) {
            try chart.compiled(events: [.toggle, .brighter, .dimmer]) { $0 == .brighter ? 1 : 0 }
        }
        // Two events that do the same everywhere may share a class.
        let merged = try chart.compiled(events: [.toggle, .toggle, .brighter, .dimmer], classifiedBy: Self.lampClass)
        #expect(merged.classCount == 3)
        #expect(StatechartCompileError<Light>.classDisagrees(event: 2, representative: 0, state: [.on, .bright]).description
            == "event #2 and event #0 are in one class but take different transitions in state {on, bright}: give them different classes")
    }

    @Test func theClassLimitAtTheLimitAndOnePast() throws {
        let chart = try Self.bigChart(regions: 1)
        let limit = CompiledStatechart<Region, Int, Int>.classLimit
        let atLimit = try chart.compiled(events: Array(0..<limit), classifiedBy: { $0 })
        #expect(atLimit.classCount == limit)
        #expect(throws: StatechartCompileError<Region>.tooManyClasses(eventClass: limit)) {
            try chart.compiled(events: Array(0...limit), classifiedBy: { $0 })
        }
    }

    // MARK: Limits

    /// States for charts of `regions` parallel regions of two states each: 2^regions
    /// configurations. Event `i` toggles region `i`; other events are ignored.
    struct Region: StatechartStateID {
        var rawValue: Int
        static let root = Region(rawValue: 0)
    }

    static func bigChart(regions: Int) throws -> Statechart<Region, Int, Int> {
        let children: [StatechartNode<Region, Int, Int>] = (0..<regions).map { region in
            let base = 1 + region * 3
            return .compound(Region(rawValue: base), children: [
                .atomic(Region(rawValue: base + 1), transitions: [.on(region, to: Region(rawValue: base + 2), outputs: [region])]),
                .atomic(Region(rawValue: base + 2), transitions: [.on(region, to: Region(rawValue: base + 1))]),
            ])
        }
        return try Statechart(states: [.parallel(.root, children: children)])
    }

    @Test func isInAnswersFalseForRawValuesOutsideAChart() throws {
        let compiled = try Self.bigChart(regions: 2).compiled(events: [0, 1], classifiedBy: { $0 })
        let state = compiled.initialState
        #expect(compiled.isIn(.root, state) && compiled.isIn(Region(rawValue: 2), state))
        #expect(!compiled.isIn(Region(rawValue: -1), state))
        #expect(!compiled.isIn(Region(rawValue: 127), state))
        #expect(!compiled.isIn(Region(rawValue: 128), state))
        #expect(!compiled.isIn(Region(rawValue: 130), state))
    }

    @Test func theEntryLimitWhileCompilingAtTheLimitAndOnePast() async throws {
        try await computeOffThePool {
            // 1,024 classes (12 or 13 toggle regions, the rest ignored): 4,096 states fill the
            // table exactly; a 4,097th passes it.
            let limit = CompiledStatechart<Region, Int, Int>.entryLimit
            let classes = CompiledStatechart<Region, Int, Int>.classLimit
            let atLimit = try Self.bigChart(regions: 12).compiled(events: Array(0..<classes), classifiedBy: { $0 })
            #expect(atLimit.stateCount * atLimit.classCount == limit)
            #expect(throws: StatechartCompileError<Region>.tableTooLarge(states: 4_097, classes: classes)) {
                try Self.bigChart(regions: 13).compiled(events: Array(0..<classes), stateLimit: 8_192, classifiedBy: { $0 })
            }
        }
    }

    @Test func theStateLimitAtTheLimitAndOnePast() throws {
        let chart = try Self.bigChart(regions: 5) // 32 states
        let compiled = try chart.compiled(events: Array(0..<5), stateLimit: 32, classifiedBy: { $0 })
        #expect(compiled.stateCount == 32)
        #expect(throws: StatechartCompileError<Region>.stateLimitExceeded(limit: 31)) {
            try chart.compiled(events: Array(0..<5), stateLimit: 31, classifiedBy: { $0 })
        }
        let capacity = CompiledStatechart<Region, Int, Int>.stateCapacity
        #expect(throws: StatechartCompileError<Region>.stateLimitOutOfRange(0)) {
            try chart.compiled(events: [0], stateLimit: 0, classifiedBy: { $0 })
        }
        #expect(throws: StatechartCompileError<Region>.stateLimitOutOfRange(capacity + 1)) {
            try chart.compiled(events: [0], stateLimit: capacity + 1, classifiedBy: { $0 })
        }
        #expect(try chart.compiled(events: [0], stateLimit: capacity, classifiedBy: { $0 }).stateCount == 2)
        #expect(StatechartCompileError<Region>.stateLimitExceeded(limit: 31).description
            == "the chart reaches more than 31 states with these event classes; raise stateLimit (up to 65535) or run the chart uncompiled")
    }

    @Test func theOutputSequenceLimitAtTheLimitAndOnePast() async throws {
        try await computeOffThePool {
            // Four states, each with 1,024 events: 1,023 emit their own output and stay, the last
            // emits its own and moves on — 4,096 distinct sequences, or 4,095 when the last state's
            // move emits nothing.
            enum Four: Int, StatechartStateID, CaseIterable { case a, b, c, d }
            func chart(silentLastMove: Bool) throws -> Statechart<Four, Int, Int> {
                try Statechart(states: Four.allCases.map { state in
                    let base = state.rawValue * 1_024
                    let next = Four(rawValue: (state.rawValue + 1) % 4)!
                    let stays: [StatechartTransition<Four, Int, Int>] = (0..<1_023).map { .on($0, to: nil, outputs: [base + $0]) }
                    let moves = silentLastMove && state == .d ? [] : [base + 1_023]
                    return .atomic(state, transitions: stays + [.on(1_023, to: next, outputs: moves)])
                })
            }
            let limit = CompiledStatechart<Four, Int, Int>.outputSequenceLimit
            let atLimit = try chart(silentLastMove: true).compiled(events: Array(0..<1_024), classifiedBy: { $0 })
            #expect(atLimit.tables.sequenceStarts.count == limit + 2)
            var state = atLimit.initialState
            #expect(atLimit.send(1_022, to: &state).outputs == [1_022])
            #expect(throws: StatechartCompileError<Four>.tooManyOutputs) {
                try chart(silentLastMove: false).compiled(events: Array(0..<1_024), classifiedBy: { $0 })
            }
        }
    }

    @Test func theOutputLimitAtTheLimitAndOnePast() throws {
        enum One: Int, StatechartStateID { case only }
        let limit = CompiledStatechart<One, Int, Int>.outputLimit
        func chart(outputs: Int) throws -> Statechart<One, Int, Int> {
            try Statechart(states: [.atomic(.only, transitions: [.on(0, to: nil, outputs: Array(repeating: 7, count: outputs))])])
        }
        let atLimit = try chart(outputs: limit).compiled(events: [0], classifiedBy: { $0 })
        var state = atLimit.initialState
        #expect(atLimit.send(0, to: &state).outputs.count == limit)
        #expect(throws: StatechartCompileError<One>.tooManyOutputs) {
            try chart(outputs: limit + 1).compiled(events: [0], classifiedBy: { $0 })
        }
    }

    // MARK: Tables

    @Test func tablesRoundTripThroughSwiftSource() throws {
        let lamp = try Self.lampChart().compiled(events: [.toggle, .brighter, .dimmer], classifiedBy: Self.lampClass)
        let source = lamp.tables.swiftSource(named: "lampTables", outputType: "String", accessLevel: "public") { "\"\($0)\"" }
        #expect(source.contains("public let lampTables = CompiledStatechartTables<String>("))
        #expect(source.contains("    classCount: 3,\n    initialState: 0,\n"))
        #expect(source.contains("\"lamp off\""))
        let rebuilt = try CompiledStatechart<Light, Switch, String>(tables: lamp.tables, classifiedBy: Self.lampClass)
        var state = rebuilt.initialState
        #expect(rebuilt.send(.toggle, to: &state).outputs == ["lamp off"])
    }

    /// Regression (review): a chart whose start stops at a limit (its raised events loop) said
    /// so in `initialStatus`; compiled, it did not, and its tables as Swift lost it too.
    @Test func aStartCutOffAtALimitIsKeptByTheCompiledChart() throws {
        enum One: Int, StatechartStateID { case only }
        let looping = try Statechart<One, Int, Int>(states: [
            .atomic(.only, raiseOnEntry: [1], transitions: [.on(1, to: nil, raise: [2]), .on(2, to: nil, raise: [1])]),
        ])
        #expect(looping.initialStatus == .stoppedAtMicrostepLimit)
        let compiled = try looping.compiled(events: [0], classifiedBy: { _ in 0 })
        #expect(compiled.initialStatus == .stoppedAtMicrostepLimit)
        let source = compiled.tables.swiftSource(named: "looping", outputType: "Int", accessLevel: "public") { "\($0)" }
        #expect(source.contains("\n    ],\n    initialStatus: .stoppedAtMicrostepLimit\n)\n"), "\(source)")
        let rebuilt = try CompiledStatechart<One, Int, Int>(tables: compiled.tables, classifiedBy: { _ in 0 })
        #expect(rebuilt.initialStatus == .stoppedAtMicrostepLimit)
        // A start that settles writes nothing new: the tables of such charts read as before.
        let lamp = try Self.lampChart().compiled(events: [.toggle, .brighter, .dimmer], classifiedBy: Self.lampClass)
        #expect(lamp.initialStatus == .transitioned)
        #expect(!lamp.tables.swiftSource(named: "lamp", outputType: "String", accessLevel: "public") { "\"\($0)\"" }.contains("initialStatus"))
    }

    @Test func malformedTablesAreRefusedWithOneLine() throws {
        let lamp = try Self.lampChart().compiled(events: [.toggle, .brighter, .dimmer], classifiedBy: Self.lampClass)
        let good = lamp.tables
        func refused(_ change: (inout CompiledStatechartTables<String>) -> Void) -> CompiledStatechartTableProblem? {
            var tables = good
            change(&tables)
            do {
                _ = try CompiledStatechart<Light, Switch, String>(tables: tables, classifiedBy: Self.lampClass)
                return nil
            } catch {
                guard case let .malformedTables(problem) = error else { Issue.record("\(error)"); return nil }
                #expect(!error.description.contains("\n"))
                return problem
            }
        }
        #expect(refused { _ in } == nil)
        #expect(refused { $0.classCount = 0 } != nil)
        #expect(refused { $0.classCount = 1_025 } != nil)
        #expect(refused { $0.entries.removeLast() } != nil)
        #expect(refused { $0.entries[4] = $0.entries[4] & ~0xFFFF | 3 } == .entry(4))
        #expect(StatechartCompileError<Light>.malformedTables(.entry(4)).description
            == "the compiled chart's tables are malformed: entry 4 has a next state, an output sequence or a status out of range")
        #expect(refused { $0.entries[0] |= 0xFFF << 16 } != nil)
        #expect(refused { $0.entries[0] = $0.entries[0] & 0x0FFF_FFFF | UInt32(StatechartStatus.rejected.rawValue) << 28 } != nil)
        #expect(refused { $0.entries[0] |= 0xF << 28 } != nil)
        #expect(refused { $0.configurations.removeLast() } != nil)
        #expect(refused { $0.sequenceStarts = [0] } != nil)
        #expect(refused { $0.sequenceStarts[1] = 1 } != nil)
        #expect(refused { $0.sequenceStarts.append(0) } != nil)
        #expect(refused { $0.outputs.append("extra") } != nil)
        #expect(refused { $0.initialState = 3 } != nil)
        #expect(refused { $0.initialState = -1 } != nil)
        #expect(refused { $0.initialOutputs = 99 } != nil)
        #expect(refused { $0.leaves.append(128) } != nil)
    }

    /// Tables from outside, corrupted at random: each is refused with one line, or runs every
    /// call without trapping (a trap would end the test process).
    @Test func corruptedTablesAreRefusedOrRunWithoutTrapping() throws {
        let good = try Self.bigChart(regions: 3).compiled(events: [0, 1, 2], classifiedBy: { $0 }).tables
        var random = SplitMix64(seed: 99)
        func number(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(random.next() % UInt64(range.count)) }
        var accepted = 0, refused = 0
        for _ in 0..<3_000 {
            var tables = good
            for _ in 0..<number(1...3) {
                switch number(0...9) {
                case 0: tables.entries[number(0...(tables.entries.count - 1))] = UInt32(truncatingIfNeeded: random.next())
                case 1: tables.entries[number(0...(tables.entries.count - 1))] ^= 1 << UInt32(number(0...31))
                case 2: tables.sequenceStarts[number(0...(tables.sequenceStarts.count - 1))] = UInt16(number(0...6))
                case 3: tables.classCount = number(-2...10)
                case 4: tables.initialState = number(-2...20)
                case 5: tables.initialOutputs = number(-2...6)
                case 6: if number(0...1) == 0 { tables.configurations.removeLast() } else { tables.configurations.append(UInt64(number(0...9))) }
                case 7: tables.leaves.append(UInt8(number(0...255)))
                case 8: if number(0...1) == 0, !tables.outputs.isEmpty { tables.outputs.removeLast() } else { tables.outputs.append(7) }
                default: if number(0...1) == 0 { tables.entries.removeLast() } else { tables.sequenceStarts.append(UInt16(number(0...6))) }
                }
            }
            do {
                let chart = try CompiledStatechart<Region, Int, Int>(tables: tables) { $0 }
                accepted += 1
                var state = chart.initialState
                var initial: [Int] = []
                chart.emitInitialOutputs(into: &initial)
                #expect(initial == chart.initialOutputs)
                for _ in 0..<40 {
                    _ = chart.send(number(-2...5), to: &state)
                    _ = chart.activeLeaves(in: state)
                    _ = chart.isIn(Region(rawValue: number(-2...130)), state)
                    if let restored = chart.state(atIndex: number(-2...20)) { state = restored }
                }
            } catch {
                refused += 1
                #expect(!error.description.contains("\n"))
            }
        }
        #expect(accepted > 100 && refused > 1_000, "accepted \(accepted), refused \(refused)")
    }

    @Test func theStateCapacityOfTablesAtTheLimitAndOnePast() throws {
        let capacity = CompiledStatechart<Light, Switch, String>.stateCapacity
        func tables(states: Int) -> CompiledStatechartTables<String> {
            CompiledStatechartTables(
                classCount: 1, initialState: states - 1, initialOutputs: 0,
                entries: (0..<states).map { UInt32($0) | UInt32(StatechartStatus.ignored.rawValue) << 28 },
                sequenceStarts: [0, 0], outputs: [], configurations: Array(repeating: 1, count: 2 * states), leaves: [0])
        }
        let atLimit = try CompiledStatechart<Light, Switch, String>(tables: tables(states: capacity)) { _ in 0 }
        var state = atLimit.initialState
        #expect(state.index == capacity - 1)
        #expect(atLimit.send(.toggle, to: &state).status == .ignored)
        #expect(state.index == capacity - 1)
        #expect(throws: StatechartCompileError<Light>.malformedTables(.tooLarge(states: capacity + 1, classes: 1))) {
            try CompiledStatechart<Light, Switch, String>(tables: tables(states: capacity + 1)) { _ in 0 }
        }
    }

    @Test func theOutputSequenceLimitOfTablesAtTheLimitAndOnePast() throws {
        let limit = CompiledStatechart<Light, Switch, String>.outputSequenceLimit
        func tables(sequences: Int) -> CompiledStatechartTables<String> {
            CompiledStatechartTables(
                classCount: 1, initialState: 0, initialOutputs: sequences,
                entries: [UInt32(StatechartStatus.ignored.rawValue) << 28],
                sequenceStarts: [0, 0] + (1...sequences).map { UInt16($0) },
                outputs: (1...sequences).map { "\($0)" }, configurations: [1, 0], leaves: [0])
        }
        let atLimit = try CompiledStatechart<Light, Switch, String>(tables: tables(sequences: limit)) { _ in 0 }
        #expect(atLimit.initialOutputs == ["\(limit)"])
        #expect(throws: StatechartCompileError<Light>.malformedTables(.sequenceStarts)) {
            try CompiledStatechart<Light, Switch, String>(tables: tables(sequences: limit + 1)) { _ in 0 }
        }
    }

    @Test func theEntryLimitOfTablesAtTheLimitAndOnePast() throws {
        // One class, a table of `entryLimit` self-loops, and one past it.
        let limit = CompiledStatechart<Light, Switch, String>.entryLimit
        func tables(states: Int, classes: Int) -> CompiledStatechartTables<String> {
            CompiledStatechartTables(
                classCount: classes, initialState: 0, initialOutputs: 0,
                entries: Array(repeating: UInt32(StatechartStatus.ignored.rawValue) << 28, count: states * classes),
                sequenceStarts: [0, 0], outputs: [], configurations: Array(repeating: 1, count: 2 * states), leaves: [0])
        }
        let atLimit = try CompiledStatechart<Light, Switch, String>(tables: tables(states: limit / 128, classes: 128)) { _ in 0 }
        #expect(atLimit.stateCount == limit / 128)
        #expect(throws: StatechartCompileError<Light>.self) {
            try CompiledStatechart<Light, Switch, String>(tables: tables(states: limit / 128 + 1, classes: 128)) { _ in 0 }
        }
    }
}
