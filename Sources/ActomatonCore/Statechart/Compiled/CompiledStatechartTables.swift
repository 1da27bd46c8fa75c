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
        leaves: [UInt8]
    ) {
        self.classCount = classCount
        self.initialState = initialState
        self.initialOutputs = initialOutputs
        self.entries = entries
        self.sequenceStarts = sequenceStarts
        self.outputs = outputs
        self.configurations = configurations
        self.leaves = leaves
    }

    /// The number of states (rows).
    @inlinable
    public var stateCount: Int { classCount > 0 ? entries.count / classCount : 0 }
}

extension CompiledStatechartTables: Sendable where Output: Sendable {}
extension CompiledStatechartTables: Equatable where Output: Equatable {}

extension CompiledStatechartTables {
    /// What is wrong with the tables, in a few words, or `nil` when they are consistent.
    var problem: String? {
        typealias Limits = CompiledStatechartLimit
        guard classCount >= 1, classCount <= Limits.classes else {
            return "\(classCount) event classes, where 1...\(Limits.classes) are allowed"
        }
        guard !entries.isEmpty, entries.count % classCount == 0 else {
            return "\(entries.count) entries do not make whole rows of \(classCount)"
        }
        let states = stateCount
        guard states <= Limits.states, entries.count <= Limits.entries else {
            return "\(states) states × \(classCount) classes is over the limits"
        }
        guard configurations.count == 2 * states else {
            return "\(configurations.count) configuration words for \(states) states (two each)"
        }
        guard sequenceStarts.count >= 2, sequenceStarts.count - 1 <= Limits.outputSequences + 1,
              sequenceStarts[0] == 0, sequenceStarts[1] == 0
        else { return "output sequence 0 must be the empty one, and there are at most \(Limits.outputSequences) others" }
        for s in 1..<sequenceStarts.count where sequenceStarts[s] < sequenceStarts[s - 1] {
            return "output sequence \(s - 1) ends before it starts"
        }
        guard Int(sequenceStarts[sequenceStarts.count - 1]) == outputs.count else {
            return "the output sequences cover \(sequenceStarts[sequenceStarts.count - 1]) outputs, not the \(outputs.count) given"
        }
        let sequences = sequenceStarts.count - 1
        guard initialState >= 0, initialState < states else { return "initial state \(initialState) is not one of the \(states)" }
        guard initialOutputs >= 0, initialOutputs < sequences else { return "initial outputs \(initialOutputs) is not one of the \(sequences) sequences" }
        for (slot, entry) in entries.enumerated() {
            let next = Int(entry & 0xFFFF), sequence = Int(entry >> 16 & 0xFFF), status = UInt8(entry >> 28)
            guard next < states, sequence < sequences,
                  let code = StatechartStatus(rawValue: status), code != .rejected
            else { return "entry \(slot) (state \(slot / classCount), class \(slot % classCount)) is out of range" }
        }
        for leaf in leaves where Int(leaf) >= StatechartStateSet.capacity {
            return "leaf \(leaf) is not a state raw value (0..<\(StatechartStateSet.capacity))"
        }
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
            leaves: \(list(leaves.map { String($0) }, perLine: 16))
        )

        """
    }
}
