extension Statechart where Output: Equatable {
    /// The chart compiled into a transition table over every state it can reach: sending an
    /// event to the ``CompiledStatechart`` is one lookup.
    ///
    /// Compiling runs the chart from ``initialState`` with the first event of each class, in
    /// every state it reaches, breadth first. Every other event of `events` is sent in every
    /// reached state too, and must do exactly what the first of its class does. States with the
    /// same active configuration that no sequence of events can tell apart (they differ only in
    /// history that can never show) are then merged.
    ///
    /// - Parameters:
    ///   - events: At least one event of every class `0..<n`; the first of each class stands for
    ///     it. List a few per class to have the classifier checked.
    ///   - stateLimit: The most states to explore, 1 through
    ///     ``CompiledStatechart/stateCapacity``.
    ///   - classify: An event's class: `0, 1, 2, …`. Events of one class must take the same
    ///     transitions in every state.
    /// - Throws: A ``StatechartCompileError`` naming the problem: a class without an event, two
    ///   events of one class that the chart tells apart, or a limit passed.
    public func compiled(
        events: [Event],
        stateLimit: Int = 4_096,
        classifiedBy classify: @escaping @Sendable (Event) -> Int
    ) throws(StatechartCompileError<StateID>) -> CompiledStatechart<StateID, Event, Output> {
        typealias Compiled = CompiledStatechart<StateID, Event, Output>
        guard stateLimit >= 1, stateLimit <= Compiled.stateCapacity else { throw .stateLimitOutOfRange(stateLimit) }
        let (classOf, classCount, representative) = try Self.eventClasses(of: events, classifiedBy: classify)

        func run(_ event: Event, from state: StatechartState<StateID>) -> (StatechartStatus, [Output], StatechartState<StateID>) {
            var next = state
            var outputs: [Output] = []
            var trace = StatechartNoTrace()
            let status = send(event, to: &next, outputs: &outputs, trace: &trace)
            return (status, outputs, next)
        }

        // Explore breadth first. Per slot (state × class): the next state, and the entry with
        // its output sequence and status (its next state is set once states are merged).
        var sequences = OutputSequences<Output>()
        guard let initialSequence = sequences.id(of: initialOutputs) else { throw .tooManyOutputs }
        var states = [initialState]
        var indexOf = [initialState: 0]
        var next: [Int] = []
        var codes: [UInt32] = []
        var head = 0
        while head < states.count {
            let state = states[head]
            for eventClass in 0..<classCount {
                let (status, outputs, target) = run(events[representative[eventClass]], from: state)
                if let known = indexOf[target] {
                    next.append(known)
                } else {
                    guard states.count < stateLimit else { throw .stateLimitExceeded(limit: stateLimit) }
                    guard (states.count + 1) * classCount <= Compiled.entryLimit else {
                        throw .tableTooLarge(states: states.count + 1, classes: classCount)
                    }
                    indexOf[target] = states.count
                    next.append(states.count)
                    states.append(target)
                }
                guard let sequence = sequences.id(of: outputs) else { throw .tooManyOutputs }
                codes.append(CompiledStatechartEntry.make(next: 0, sequence: sequence, status: status))
            }
            for (index, eventClass) in classOf.enumerated() where representative[eventClass] != index {
                let (status, outputs, target) = run(events[index], from: state)
                let slot = head * classCount + eventClass
                guard status == CompiledStatechartEntry.status(codes[slot]),
                      outputs[...] == sequences.outputs(of: CompiledStatechartEntry.sequence(codes[slot])),
                      target == states[next[slot]]
                else {
                    throw .classDisagrees(event: index, representative: representative[eventClass], state: state.activeStates)
                }
            }
            head += 1
        }

        let block = Self.equivalenceClasses(states: states, classCount: classCount, next: next, codes: codes)
        var blockCount = 0
        var firstOfBlock: [Int] = []
        for (state, stateBlock) in block.enumerated() where stateBlock == blockCount {
            firstOfBlock.append(state)
            blockCount += 1
        }
        var entries: [UInt32] = []
        entries.reserveCapacity(blockCount * classCount)
        var configurations: [UInt64] = []
        configurations.reserveCapacity(blockCount * 2)
        for state in firstOfBlock {
            for slot in state * classCount..<(state + 1) * classCount {
                entries.append(CompiledStatechartEntry.replacingNext(of: codes[slot], with: block[next[slot]]))
            }
            let words = states[state].active.words
            configurations.append(words.0)
            configurations.append(words.1)
        }
        let tables = compiledTables(
            classCount: classCount, initialOutputs: initialSequence, entries: entries, sequences: sequences,
            configurations: configurations)
        return try Compiled(tables: tables, classifiedBy: classify)
    }

    /// Each state's block of indistinguishable states (Moore's partition refinement): states
    /// start apart when their configurations or their rows' outputs and statuses differ, and
    /// split until each block's states go to the same blocks on every class. Blocks are numbered
    /// in the order of their first state, so the initial state's is 0.
    static func equivalenceClasses(states: [StatechartState<StateID>], classCount: Int, next: [Int], codes: [UInt32]) -> [Int] {
        refinedPartition(
            count: states.count,
            apart: { state in
                let words = states[state].active.words
                return [words.0, words.1] + codes[state * classCount..<(state + 1) * classCount].map { UInt64($0) }
            },
            successors: { state, block in next[state * classCount..<(state + 1) * classCount].map { block[$0] } })
    }

    /// The tables of a compiled chart from what compiling found: the initial state is row 0.
    func compiledTables(
        classCount: Int, initialOutputs: Int, entries: [UInt32], sequences: OutputSequences<Output>, configurations: [UInt64]
    ) -> CompiledStatechartTables<Output> {
        CompiledStatechartTables(
            classCount: classCount, initialState: 0, initialOutputs: initialOutputs, entries: entries,
            sequenceStarts: sequences.starts, outputs: sequences.outputs, configurations: configurations,
            leaves: inDocumentOrder(atomicStates).map { UInt8($0) }, initialStatus: initialStatus)
    }

    /// The classes of `events`, checked: each event's class, how many classes there are, and
    /// the first event of each class, which stands for it.
    static func eventClasses(
        of events: [Event], classifiedBy classify: (Event) -> Int
    ) throws(StatechartCompileError<StateID>) -> (classOf: [Int], count: Int, representative: [Int]) {
        guard !events.isEmpty else { throw .noEvents }
        var classOf: [Int] = []
        classOf.reserveCapacity(events.count)
        for (index, event) in events.enumerated() {
            let eventClass = classify(event)
            guard eventClass >= 0 else { throw .negativeClass(event: index, eventClass: eventClass) }
            guard eventClass < CompiledStatechartLimit.classes else { throw .tooManyClasses(eventClass: eventClass) }
            classOf.append(eventClass)
        }
        let classCount = classOf.reduce(0, Swift.max) + 1
        var representative = Array(repeating: -1, count: classCount)
        for (index, eventClass) in classOf.enumerated() where representative[eventClass] < 0 {
            representative[eventClass] = index
        }
        if let missing = representative.firstIndex(of: -1) { throw .classWithoutEvent(eventClass: missing) }
        return (classOf, classCount, representative)
    }
}

/// Moore's partition refinement over states `0..<count`: each state's block, numbered in the
/// order of their first state. States start apart when `apart` gives them different keys, and
/// split until each block's states have, by `successors` (given the current blocks), the same
/// blocks after them.
func refinedPartition<Key: Hashable>(count: Int, apart: (Int) -> Key, successors: (Int, [Int]) -> [Int]) -> [Int] {
    func number<Numbered: Hashable>(_ key: (Int) -> Numbered) -> (blocks: [Int], count: Int) {
        var numbers: [Numbered: Int] = [:]
        var blocks: [Int] = []
        blocks.reserveCapacity(count)
        for state in 0..<count {
            let stateKey = key(state)
            if let known = numbers[stateKey] {
                blocks.append(known)
            } else {
                numbers[stateKey] = numbers.count
                blocks.append(numbers.count - 1)
            }
        }
        return (blocks, numbers.count)
    }
    var (block, blockCount) = number(apart)
    while true {
        let current = block
        let (refined, refinedCount) = number { state in [current[state]] + successors(state, current) }
        block = refined
        if refinedCount == blockCount { return block }
        blockCount = refinedCount
    }
}

/// The distinct output sequences of a table being compiled; sequence 0 is the empty one.
struct OutputSequences<Output: Equatable> {
    /// Where each sequence starts in `outputs`, and one past the last.
    var starts: [UInt16] = [0, 0]
    var outputs: [Output] = []
    /// The sequences of each length, so a new sequence is compared only with those as long.
    var sequencesOfLength: [Int: [Int]] = [:]

    /// The outputs of sequence `id`.
    func outputs(of id: Int) -> ArraySlice<Output> {
        outputs[Int(starts[id])..<Int(starts[id + 1])]
    }

    /// The number of `sequence`, added when it is new; `nil` when adding it would pass
    /// ``CompiledStatechart/outputSequenceLimit`` or ``CompiledStatechart/outputLimit``.
    mutating func id(of sequence: [Output]) -> Int? {
        if sequence.isEmpty { return 0 }
        for id in sequencesOfLength[sequence.count, default: []] where outputs(of: id) == sequence[...] {
            return id
        }
        guard starts.count - 2 < CompiledStatechartLimit.outputSequences,
              outputs.count + sequence.count <= CompiledStatechartLimit.outputs
        else { return nil }
        outputs.append(contentsOf: sequence)
        starts.append(UInt16(outputs.count))
        sequencesOfLength[sequence.count, default: []].append(starts.count - 2)
        return starts.count - 2
    }
}
