/// The tables of a ``CompiledStatechart``: arrays of numbers and outputs, with no closure and no
/// chart behind them.
///
/// ``swiftSource(named:outputType:accessLevel:output:)`` writes them out as Swift, so a program
/// (a `.wasm` module, firmware) can embed a compiled chart without the chart's definition or
/// the compiler; ``CompiledStatechart/init(tables:classifiedBy:)`` checks them before use.
public struct CompiledStatechartTables<Output> {
    /// The number of event classes: the length of each state's row.
    public var classCount: Int
    /// The index of the initial state.
    public var initialState: Int
    /// The output sequence that entering the initial state emitted.
    public var initialOutputs: Int
    /// One row of `classCount` entries per state, row after row. Bits 0–15 of an entry are the
    /// next state, bits 16–27 the output sequence, bits 28–31 the ``StatechartStatus`` raw value.
    public var entries: [UInt32]
    /// Where each output sequence starts in ``outputs``: sequence `s` is
    /// `outputs[sequenceStarts[s] ..< sequenceStarts[s + 1]]`. Sequence 0 is the empty one.
    public var sequenceStarts: [UInt16]
    /// The outputs of every sequence, one after another.
    public var outputs: [Output]
    /// Two words per state: its active states, as ``StatechartStateSet/words``.
    public var configurations: [UInt64]
    /// The raw values of the chart's atomic and final states, in document order.
    public var leaves: [UInt8]
    /// How the chart's start ended (``Statechart/initialStatus``): ``StatechartStatus/transitioned``,
    /// or the limit it stopped at.
    public var initialStatus: StatechartStatus

    /// Tables from their parts; ``CompiledStatechart/init(tables:classifiedBy:)`` checks them.
    @inlinable
    public init(
        classCount: Int,
        initialState: Int,
        initialOutputs: Int,
        entries: [UInt32],
        sequenceStarts: [UInt16],
        outputs: [Output],
        configurations: [UInt64],
        leaves: [UInt8],
        initialStatus: StatechartStatus = .transitioned
    ) {
        self.classCount = classCount
        self.initialState = initialState
        self.initialOutputs = initialOutputs
        self.entries = entries
        self.sequenceStarts = sequenceStarts
        self.outputs = outputs
        self.configurations = configurations
        self.leaves = leaves
        self.initialStatus = initialStatus
    }

    /// The number of states (rows).
    @inlinable
    public var stateCount: Int { classCount > 0 ? entries.count / classCount : 0 }

    /// The most outputs one event emits: what a fixed buffer for an event's outputs must hold.
    public var longestOutputSequence: Int {
        var longest = 0
        for sequence in sequenceStarts.indices.dropFirst() {
            longest = Swift.max(longest, Int(sequenceStarts[sequence]) - Int(sequenceStarts[sequence - 1]))
        }
        return longest
    }
}

extension CompiledStatechartTables: Sendable where Output: Sendable {}

extension CompiledStatechartTables {
    /// The entry of `row` for `eventClass`, or `nil` when either is outside the table.
    @inlinable
    func entry(row: Int, eventClass: Int) -> UInt32? {
        // Unsigned compares also refuse negative values; a row within the capacity cannot make
        // the slot overflow.
        guard UInt(bitPattern: eventClass) < UInt(bitPattern: classCount),
              UInt(bitPattern: row) <= UInt(CompiledStatechartLimit.states)
        else { return nil }
        let slot = row &* classCount &+ eventClass
        return slot < entries.count ? entries[slot] : nil
    }

    /// Takes the plain entry `entry`: moves `row` to its next state and gives its outputs to
    /// `outputs`; returns its status.
    @inlinable
    func follow<Sink: OutputSink>(_ entry: UInt32, row: inout Int, outputs: inout Sink) -> StatechartStatus where Sink.Output == Output {
        row = CompiledStatechartEntry.next(entry)
        let sequence = CompiledStatechartEntry.sequence(entry)
        if sequence != 0 { emit(sequence: sequence, into: &outputs) }
        return CompiledStatechartEntry.status(entry) ?? .rejected
    }

    /// Gives the outputs of sequence `sequence` to `outputs`, in order.
    @inlinable
    func emit<Sink: OutputSink>(sequence: Int, into outputs: inout Sink) where Sink.Output == Output {
        var position = Int(sequenceStarts[sequence])
        let end = Int(sequenceStarts[sequence &+ 1])
        while position < end {
            outputs.receive(self.outputs[position])
            position &+= 1
        }
    }

    /// The active states of row `row` (empty for an index that is not a row).
    @inlinable
    func configuration(ofRow row: Int) -> StatechartStateSet {
        let word = row &* 2
        guard row >= 0, word &+ 1 < configurations.count else { return StatechartStateSet() }
        return StatechartStateSet(words: (configurations[word], configurations[word &+ 1]))
    }
}

/// The layout of an entry of ``CompiledStatechartTables/entries``: bits 0–15 the next state,
/// 16–27 the output sequence, 28–31 the ``StatechartStatus`` raw value.
@usableFromInline
enum CompiledStatechartEntry {
    @inlinable
    static func make(next: Int, sequence: Int, status: StatechartStatus) -> UInt32 {
        UInt32(truncatingIfNeeded: next) & 0xFFFF | UInt32(truncatingIfNeeded: sequence) << 16 | UInt32(status.rawValue) << 28
    }

    /// `entry` going to `next` instead.
    static func replacingNext(of entry: UInt32, with next: Int) -> UInt32 {
        entry & ~0xFFFF | UInt32(truncatingIfNeeded: next) & 0xFFFF
    }

    @inlinable
    static func next(_ entry: UInt32) -> Int { Int(entry & 0xFFFF) }

    @inlinable
    static func sequence(_ entry: UInt32) -> Int { Int(entry >> 16 & 0xFFF) }

    /// The status, or `nil` for a code that is not one.
    @inlinable
    static func status(_ entry: UInt32) -> StatechartStatus? { StatechartStatus(rawValue: UInt8(truncatingIfNeeded: entry >> 28)) }
}
extension CompiledStatechartTables: Equatable where Output: Equatable {}

extension CompiledStatechartTables {
    /// What is wrong with the tables, or `nil` when they are consistent. It builds no text, so
    /// a program that embeds tables does not carry string formatting for it.
    var problem: CompiledStatechartTableProblem? {
        typealias Limits = CompiledStatechartLimit
        guard classCount >= 1, classCount <= Limits.classes else { return .classCount(classCount) }
        guard !entries.isEmpty, entries.count % classCount == 0 else { return .partialRow(entries: entries.count) }
        let states = stateCount
        guard states <= Limits.states, entries.count <= Limits.entries else { return .tooLarge(states: states, classes: classCount) }
        guard configurations.count == 2 * states else { return .configurationWords(configurations.count) }
        guard sequenceStarts.count >= 2, sequenceStarts.count - 2 <= Limits.outputSequences,
              sequenceStarts[0] == 0, sequenceStarts[1] == 0
        else { return .sequenceStarts }
        for s in 1..<sequenceStarts.count where sequenceStarts[s] < sequenceStarts[s - 1] {
            return .sequenceEndsBeforeItStarts(s - 1)
        }
        guard Int(sequenceStarts[sequenceStarts.count - 1]) == outputs.count else {
            return .outputCount(covered: Int(sequenceStarts[sequenceStarts.count - 1]), given: outputs.count)
        }
        let sequences = sequenceStarts.count - 1
        guard initialState >= 0, initialState < states else { return .initialState(initialState) }
        guard initialOutputs >= 0, initialOutputs < sequences else { return .initialOutputs(initialOutputs) }
        for (slot, entry) in entries.enumerated() {
            guard CompiledStatechartEntry.next(entry) < states, CompiledStatechartEntry.sequence(entry) < sequences,
                  let status = CompiledStatechartEntry.status(entry), status != .rejected
            else { return .entry(slot) }
        }
        for leaf in leaves where Int(leaf) >= StatechartStateSet.capacity { return .leaf(Int(leaf)) }
        return nil
    }

    /// The tables as Swift source: a `let` named `name` of type
    /// `CompiledStatechartTables<outputType>`, to check into a program that runs the chart
    /// without building it.
    ///
    /// - Parameters:
    ///   - name: The constant's name.
    ///   - outputType: The output type as the program spells it, such as `"Platformer.Output"`.
    ///   - accessLevel: The constant's access level, such as `"public"`.
    ///   - output: An output as a Swift expression, such as `".jumpSound"`.
    public func swiftSource(
        named name: String,
        outputType: String,
        accessLevel: String = "internal",
        output: (Output) -> String
    ) -> String {
        func list(_ items: [String], perLine: Int) -> String {
            guard !items.isEmpty else { return "[]" }
            var lines: [String] = []
            var start = 0
            while start < items.count {
                let end = Swift.min(start + perLine, items.count)
                lines.append("        " + items[start..<end].joined(separator: ", ") + ",")
                start = end
            }
            return "[\n" + lines.joined(separator: "\n") + "\n    ]"
        }
        func hex<Word: FixedWidthInteger>(_ value: Word, digits: Int) -> String {
            let text = String(value, radix: 16)
            return "0x" + String(repeating: "0", count: Swift.max(0, digits - text.count)) + text
        }
        return """
        // The compiled tables of a statechart, written by CompiledStatechartTables.swiftSource.
        // Do not edit: compile the chart again and regenerate them.

        import ActomatonCore

        \(accessLevel) let \(name) = CompiledStatechartTables<\(outputType)>(
            classCount: \(classCount),
            initialState: \(initialState),
            initialOutputs: \(initialOutputs),
            entries: \(list(entries.map { hex($0, digits: 8) }, perLine: 8)),
            sequenceStarts: \(list(sequenceStarts.map { String($0) }, perLine: 16)),
            outputs: \(list(outputs.map(output), perLine: 8)),
            configurations: \(list(configurations.map { hex($0, digits: 16) }, perLine: 4)),
            leaves: \(list(leaves.map { String($0) }, perLine: 16))\(initialStatusArgument)
        )

        """
    }
}

extension CompiledStatechartTables {
    /// The `initialStatus:` argument of ``swiftSource(named:outputType:accessLevel:output:)``:
    /// none for a start that settled (the default), so the tables of such charts read as before.
    var initialStatusArgument: String {
        let name = switch initialStatus {
        case .transitioned: ""
        case .ignored: "ignored"
        case .finished: "finished"
        case .stoppedAtMicrostepLimit: "stoppedAtMicrostepLimit"
        case .rejected: "rejected"
        case .stoppedAtRaisedEventLimit: "stoppedAtRaisedEventLimit"
        }
        return name.isEmpty ? "" : ",\n    initialStatus: .\(name)"
    }
}

/// What is wrong with tables given to ``CompiledStatechart/init(tables:classifiedBy:)``.
public enum CompiledStatechartTableProblem: Equatable, Sendable {
    /// The class count is outside 1 through ``CompiledStatechart/classLimit``.
    case classCount(Int)
    /// The entries do not make whole rows.
    case partialRow(entries: Int)
    /// The table passes ``CompiledStatechart/stateCapacity`` or ``CompiledStatechart/entryLimit``.
    case tooLarge(states: Int, classes: Int)
    /// There are not two configuration words per state.
    case configurationWords(Int)
    /// Sequence 0 is not the empty one, or there are more than
    /// ``CompiledStatechart/outputSequenceLimit`` others.
    case sequenceStarts
    /// An output sequence ends before it starts.
    case sequenceEndsBeforeItStarts(Int)
    /// The sequences cover a different number of outputs than are given.
    case outputCount(covered: Int, given: Int)
    /// The initial state is not a row of the table.
    case initialState(Int)
    /// The initial outputs are not one of the sequences.
    case initialOutputs(Int)
    /// The entry at this index has a next state, a sequence or a status out of range.
    case entry(Int)
    /// A leaf is not a state raw value (`0..<128`).
    case leaf(Int)
}

extension CompiledStatechartTableProblem: CustomStringConvertible {
    /// The problem, in a few words.
    public var description: String {
        switch self {
        case let .classCount(count):
            "\(count) event classes, where 1...\(CompiledStatechartLimit.classes) are allowed"
        case let .partialRow(entries):
            "\(entries) entries do not make whole rows"
        case let .tooLarge(states, classes):
            "\(states) states × \(classes) classes is over the limits"
        case let .configurationWords(count):
            "\(count) configuration words, where there must be two per state"
        case .sequenceStarts:
            "output sequence 0 must be the empty one, and there are at most \(CompiledStatechartLimit.outputSequences) others"
        case let .sequenceEndsBeforeItStarts(sequence):
            "output sequence \(sequence) ends before it starts"
        case let .outputCount(covered, given):
            "the output sequences cover \(covered) outputs, not the \(given) given"
        case let .initialState(state):
            "initial state \(state) is not a row of the table"
        case let .initialOutputs(sequence):
            "initial outputs \(sequence) is not one of the output sequences"
        case let .entry(slot):
            "entry \(slot) has a next state, an output sequence or a status out of range"
        case let .leaf(leaf):
            "leaf \(leaf) is not a state raw value (0..<\(StatechartStateSet.capacity))"
        }
    }
}
