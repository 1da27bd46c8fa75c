extension Statechart where Output: Equatable, Event: Equatable {
    /// The chart compiled into a table over its configurations, with its context evaluated at
    /// run time: a ``CompiledContextStatechart``.
    ///
    /// Compiling explores the configurations (active states and history) the chart reaches from
    /// ``initialState`` with the first event of each class, breadth first. In each slot it runs
    /// the step once for every way the guards it meets can answer, recording the assignments and
    /// outputs on each way, and keeps them as the slot's program (or as a plain entry when no
    /// guard, assignment or computed output takes part). Every other event of `events` must make
    /// the same program as the first of its class.
    ///
    /// - Parameters:
    ///   - events: At least one event of every class `0..<n`; the first of each class stands for
    ///     it.
    ///   - stateLimit: The most rows (configurations with their history), 1 through
    ///     ``CompiledStatechart/stateCapacity``.
    ///   - pathLimit: The most ways through one slot, 1 through 65,536 (1,024 by default): an
    ///     eventless loop whose guard reads the context takes a way per turn, up to
    ///     ``microstepLimit``.
    ///   - classify: An event's class: `0, 1, 2, …`.
    /// - Throws: A ``StatechartCompileError`` naming the problem.
    public func compiledEvaluatingContext(
        events: [Event],
        stateLimit: Int = 4_096,
        pathLimit: Int = 1_024,
        classifiedBy classify: @escaping @Sendable (Event) -> Int
    ) throws(StatechartCompileError<StateID>) -> CompiledContextStatechart<StateID, Event, Output> {
        typealias Compiled = CompiledStatechart<StateID, Event, Output>
        typealias Code = CompiledContextCode
        guard stateLimit >= 1, stateLimit <= Compiled.stateCapacity else { throw .stateLimitOutOfRange(stateLimit) }
        guard pathLimit >= 1, pathLimit <= 65_536 else { throw .pathLimitOutOfRange(pathLimit) }
        guard !hasDoneEvents else { throw .doneEventsMadeAtRunTime }
        let (classOf, classCount, representative) = try Self.eventClasses(of: events, classifiedBy: classify)

        // A context of no size has one value, so no guard can depend on it (a chart without a
        // context, whose context is `StatechartNoContext`): its guards are answered here.
        let recorder = ContextPathRecorder<StateID, Event, Output>(
            evaluatesGuards: MemoryLayout<StateID.Context>.size == 0, conditionsReadingOnlyTheConfiguration: content.conditionsReadingOnlyTheConfiguration)
        var sequences = OutputSequences<Output>()
        guard let initialSequence = sequences.id(of: initialOutputs) else { throw .tooManyOutputs }
        var rows = [ContextRowKey(initialState)]
        var rowOf = [rows[0]: 0]
        var entries: [UInt32] = []
        var programStarts: [[UInt32]: Int] = [:]
        var program = CompiledContextProgram<StateID, Event, Output>()

        /// The slot's code: every way through it, as one program.
        func code(for event: Event, from row: ContextRowKey) throws(StatechartCompileError<StateID>) -> [UInt32] {
            var paths: [ContextPath<Output>] = []
            var pending: [[Bool]] = [[]]
            while let answers = pending.popLast() {
                recorder.start(answering: answers)
                var state = StatechartState<StateID>(active: row.active, history: row.history, context: initialContext)
                var sink = ContextPathSink(recorder: recorder)
                var trace = StatechartNoTrace()
                var evaluation = ContextPathEvaluation(recorder: recorder)
                let status = step(event, &state, &sink, &trace, &evaluation)
                let answered = recorder.answered
                for position in answers.count..<answered.count {
                    pending.append(Array(answered[..<position]) + [false])
                }
                paths.append(ContextPath(steps: recorder.steps, status: status, target: ContextRowKey(state)))
                guard paths.count + pending.count <= pathLimit else {
                    throw .tooManyPaths(state: row.active.compactMap(StateID.init(rawValue:)), limit: pathLimit)
                }
            }
            return try build(paths[...], at: 0, carrying: [])
        }

        /// The program of `paths`, which agree up to `start`, from there; `carried` are fixed
        /// outputs not yet emitted. A guard reads no output, so fixed outputs before a test are
        /// emitted after it, in each branch: when both branches turn out the same, the test goes
        /// and the outputs stay one sequence.
        func build(
            _ paths: ArraySlice<ContextPath<Output>>, at start: Int, carrying carried: [Output]
        ) throws(StatechartCompileError<StateID>) -> [UInt32] {
            let first = paths[paths.startIndex]
            var code: [UInt32] = []
            var fixed = carried
            func flush() throws(StatechartCompileError<StateID>) {
                guard !fixed.isEmpty else { return }
                guard let sequence = sequences.id(of: fixed) else { throw .tooManyOutputs }
                code.append(Code.emit << Code.opcodeShift | UInt32(sequence))
                fixed = []
            }
            var position = start
            while position < first.steps.count {
                switch first.steps[position] {
                case let .output(output):
                    fixed.append(output)
                case let .assign(assignment, event):
                    try flush()
                    code += [Code.assign << Code.opcodeShift | UInt32(assignment), UInt32(event)]
                case let .compute(computation, configuration, event):
                    try flush()
                    code += [Code.compute << Code.opcodeShift | UInt32(computation), UInt32(configuration), UInt32(event)]
                case let .test(condition, configuration, _):
                    let held = paths.filter { $0.steps[position].answer }
                    let failed = paths.filter { !$0.steps[position].answer }
                    let whenHeld = try build(held[...], at: position + 1, carrying: fixed)
                    let whenFailed = try build(failed[...], at: position + 1, carrying: fixed)
                    if whenHeld == whenFailed { return code + whenHeld }
                    return code + [Code.test << Code.opcodeShift | UInt32(condition), UInt32(configuration), UInt32(whenHeld.count)]
                        + whenHeld + whenFailed
                }
                position += 1
            }
            try flush()
            let next: Int
            if let known = rowOf[first.target] {
                next = known
            } else {
                guard rows.count < stateLimit else { throw .stateLimitExceeded(limit: stateLimit) }
                guard (rows.count + 1) * classCount <= Compiled.entryLimit else {
                    throw .tableTooLarge(states: rows.count + 1, classes: classCount)
                }
                next = rows.count
                rowOf[first.target] = next
                rows.append(first.target)
            }
            return code + [Code.end << Code.opcodeShift | UInt32(next) | UInt32(first.status.rawValue) << 16]
        }

        // Explore breadth first; each slot's code names the rows it ends in.
        var codes: [[UInt32]] = []
        var head = 0
        while head < rows.count {
            let row = rows[head]
            for eventClass in 0..<classCount {
                codes.append(try code(for: events[representative[eventClass]], from: row))
            }
            for (index, eventClass) in classOf.enumerated() where representative[eventClass] != index {
                guard try code(for: events[index], from: row) == codes[head * classCount + eventClass] else {
                    throw .classDisagrees(
                        event: index, representative: representative[eventClass],
                        state: row.active.compactMap(StateID.init(rawValue:)))
                }
            }
            head += 1
        }

        // Merge the rows that no sequence of events can tell apart (they differ only in history
        // that never shows), then write each kept row's slots with the merged rows.
        let block = Self.equivalentRows(rows, classCount: classCount, codes: codes)
        var kept: [Int] = []
        for (row, rowBlock) in block.enumerated() where rowBlock == kept.count { kept.append(row) }
        for row in kept {
            for eventClass in 0..<classCount {
                var slot = codes[row * classCount + eventClass]
                for end in CompiledContextCode.ends(in: slot) {
                    slot[end] = slot[end] & ~0xFFFF | UInt32(block[Int(slot[end] & 0xFFFF)])
                }
                let end = slot[slot.count - 1] & Code.operandMask
                if slot.count == 1 || (slot.count == 2 && slot[0] >> Code.opcodeShift == Code.emit) {
                    let sequence = slot.count == 2 ? Int(slot[0] & Code.operandMask) : 0
                    entries.append(CompiledStatechartEntry.make(
                        next: Int(end & 0xFFFF), sequence: sequence, status: StatechartStatus(rawValue: UInt8(end >> 16))!))
                } else if let known = programStarts[slot] {
                    entries.append(Code.programFlag | UInt32(known))
                } else {
                    guard program.words.count + slot.count <= Code.wordLimit else { throw .programTooLarge }
                    programStarts[slot] = program.words.count
                    entries.append(Code.programFlag | UInt32(program.words.count))
                    program.words += slot
                }
            }
        }
        rows = kept.map { rows[$0] }
        program.guards = recorder.guards.values
        program.assigns = recorder.assignments.values
        program.computed = recorder.computations.values
        program.events = recorder.events
        program.configurations = recorder.configurations.values.flatMap { [$0.words.0, $0.words.1] }

        var configurations: [UInt64] = []
        configurations.reserveCapacity(rows.count * 2)
        for row in rows {
            let words = row.active.words
            configurations += [words.0, words.1]
        }
        let tables = compiledTables(
            classCount: classCount, initialOutputs: initialSequence, entries: entries, sequences: sequences,
            configurations: configurations)
        return CompiledContextStatechart(
            tables: tables, program: program, classify: classify,
            initialState: CompiledContextStatechartState(row: CompiledStatechartState(index: 0), context: initialState.context),
            initialOutputs: initialOutputs, initialStatus: initialStatus)
    }

    /// Each row's block of indistinguishable rows (Moore's partition refinement, as
    /// ``equivalenceClasses(states:classCount:next:codes:)`` does for the enumerated form): rows
    /// start apart when their configurations or their slots' programs, next rows aside, differ,
    /// and split until each block's rows end in the same blocks on every way of every slot.
    static func equivalentRows(_ rows: [ContextRowKey], classCount: Int, codes: [[UInt32]]) -> [Int] {
        let ends = codes.map { CompiledContextCode.ends(in: $0) }
        return refinedPartition(
            count: rows.count,
            apart: { row in
                let words = rows[row].active.words
                var key: [UInt32] = [UInt32(truncatingIfNeeded: words.0), UInt32(truncatingIfNeeded: words.0 >> 32),
                                     UInt32(truncatingIfNeeded: words.1), UInt32(truncatingIfNeeded: words.1 >> 32)]
                for slot in row * classCount..<(row + 1) * classCount {
                    var template = codes[slot]
                    for end in ends[slot] { template[end] &= ~0xFFFF }
                    key.append(UInt32(template.count))
                    key += template
                }
                return key
            },
            successors: { row, block in
                var next: [Int] = []
                for slot in row * classCount..<(row + 1) * classCount {
                    for end in ends[slot] { next.append(block[Int(codes[slot][end] & 0xFFFF)]) }
                }
                return next
            })
    }
}
