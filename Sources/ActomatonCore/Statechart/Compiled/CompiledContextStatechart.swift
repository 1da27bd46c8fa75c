/// A ``Statechart`` with a context compiled into a table over its configurations, whose context
/// stays a value that the chart's own functions read and update at run time.
///
/// ``CompiledStatechart`` enumerates every context the chart can reach, so a counter that grows
/// without bound never compiles, and the table grows with the data. This form keeps one row per
/// configuration (active states and history) and event class, and the context beside it, in
/// ``CompiledContextStatechartState``. Sending an event is still one lookup:
///
/// - a slot whose outcome no guard, assignment or computed output takes part in is an entry as
///   in ``CompiledStatechart``: the next row, the outputs, the status;
/// - any other slot is a small program, worked out when compiling by exploring every way the
///   guards can answer: it tests the guards the step meets, in the step's order, runs the
///   assignments and computed outputs in order between the fixed outputs, and ends in the next
///   row and the status. A guard whose answer changes nothing is left out.
///
/// ```swift
/// enum Counter: Int, StatechartStateID {
///     typealias Context = Int
///     case counting
/// }
/// enum Tally: Equatable { case add, report }
///
/// let chart = try Statechart<Counter, Tally, String>(context: 0, states: [
///     .atomic(.counting, transitions: [
///         .on(.add, actions: [.assign { $0 += 1 }]),
///         .on(.report, when: { $0.context >= 3 }, actions: [.emit { state, _ in "\(state.context)" }]),
///     ]),
/// ])
/// let counter = try chart.compiledEvaluatingContext(events: [.add, .report]) { $0 == .add ? 0 : 1 }
/// var state = counter.initialState
/// for _ in 0..<1_000 { counter.send(.add, to: &state) }
/// counter.send(.report, to: &state).outputs   // ["1000"]
/// counter.stateCount                          // 1
/// ```
///
/// ## What runs at run time
///
/// A guard is a closure, and the compiler cannot see which of its reads touch the context, so
/// in a chart with a context every guard a slot meets is part of its program, unless both of
/// its answers lead to the same result. A guard or computed output is given the active states
/// the step had there, so `isIn(_:)` answers as it would in the chart, and the context; not the
/// history, which this form keeps only as far as it can still change what happens (rows that
/// differ only in history that never shows are merged, as in ``CompiledStatechart``). Event predicates
/// (`.on(where:)`) are evaluated while compiling, as in ``CompiledStatechart``. Assignments and
/// computed outputs see the event sent (or the raised event being taken), as in the chart.
///
/// ## Limits
///
/// Besides ``CompiledStatechart``'s limits on states, classes, entries and outputs: at most
/// `pathLimit` ways through one slot (the guards' answers it tells apart), and
/// ``CompiledContextStatechart/programLimit`` words of programs in all. A chart whose states
/// make done events of the chart's type (``StatechartNode/doneEvent``) is refused: that event
/// is made from the state at run time, and which transitions take it could not be compiled.
public struct CompiledContextStatechart<StateID: StatechartStateID, Event: Sendable, Output> {
    /// The most words of programs a compiled chart may hold.
    public static var programLimit: Int { CompiledContextCode.wordLimit }

    /// The tables: entries (a plain entry, or a program's start), output sequences,
    /// configurations and leaves, as in ``CompiledStatechart``.
    @usableFromInline let tables: CompiledStatechartTables<Output>
    /// The programs, and the functions and values they name.
    @usableFromInline let program: CompiledContextProgram<StateID, Event, Output>
    @usableFromInline let classify: @Sendable (Event) -> Int

    /// The state the chart starts in: its initial configuration's row, and the context as the
    /// start's actions left it.
    public let initialState: CompiledContextStatechartState<StateID>
    /// What the chart's start emitted.
    public let initialOutputs: [Output]
    /// How the chart's start ended (``Statechart/initialStatus``).
    public let initialStatus: StatechartStatus

    init(
        tables: CompiledStatechartTables<Output>,
        program: CompiledContextProgram<StateID, Event, Output>,
        classify: @escaping @Sendable (Event) -> Int,
        initialState: CompiledContextStatechartState<StateID>,
        initialOutputs: [Output],
        initialStatus: StatechartStatus
    ) {
        self.tables = tables
        self.program = program
        self.classify = classify
        self.initialState = initialState
        self.initialOutputs = initialOutputs
        self.initialStatus = initialStatus
    }

    /// The number of rows: configurations with their history.
    @inlinable
    public var stateCount: Int { tables.stateCount }

    /// The number of event classes.
    @inlinable
    public var classCount: Int { tables.classCount }

    /// The number of slots (rows × classes) that run a program rather than a plain entry.
    public var programSlotCount: Int { tables.entries.count { $0 & CompiledContextCode.programFlag != 0 } }

    /// The number of words of all the programs.
    public var programSize: Int { program.words.count }

    /// Sends `event`: runs its slot, moving `state` to the next row and updating its context,
    /// and gives its outputs to `outputs`, in order. Allocates nothing of its own (the chart's
    /// functions may).
    @inlinable
    public func send<Sink: OutputSink>(
        _ event: Event,
        to state: inout CompiledContextStatechartState<StateID>,
        outputs: inout Sink
    ) -> StatechartStatus where Sink.Output == Output {
        guard let entry = tables.entry(row: state.row.index, eventClass: classify(event)) else { return .rejected }
        if entry & CompiledContextCode.programFlag != 0 {
            return run(from: Int(entry & ~CompiledContextCode.programFlag), event, &state, &outputs)
        }
        return tables.follow(entry, row: &state.row.row, outputs: &outputs)
    }

    /// Sends `event` and returns its status and outputs.
    @inlinable
    @discardableResult
    public func send(_ event: Event, to state: inout CompiledContextStatechartState<StateID>) -> StatechartReply<[Output]> {
        var outputs: [Output] = []
        let status = send(event, to: &state, outputs: &outputs)
        return StatechartReply(status: status, outputs: outputs)
    }

    /// Runs the program at `start`.
    @inlinable
    func run<Sink: OutputSink>(
        from start: Int,
        _ event: Event,
        _ state: inout CompiledContextStatechartState<StateID>,
        _ outputs: inout Sink
    ) -> StatechartStatus where Sink.Output == Output {
        typealias Program = CompiledContextCode
        let words = program.words
        var position = start
        while position < words.count {
            let word = words[position]
            let operand = Int(word & Program.operandMask)
            switch word >> Program.opcodeShift {
            case Program.test:
                let probe = StatechartState<StateID>(active: program.active(Int(words[position &+ 1])), context: state.context)
                let skip = Int(words[position &+ 2])
                position &+= 3
                if !program.guards[operand].holds(probe) { position &+= skip }
            case Program.assign:
                program.assigns[operand].update(&state.context, program.event(Int(words[position &+ 1]), sent: event))
                position &+= 2
            case Program.emit:
                tables.emit(sequence: operand, into: &outputs)
                position &+= 1
            case Program.compute:
                let probe = StatechartState<StateID>(active: program.active(Int(words[position &+ 1])), context: state.context)
                outputs.receive(program.computed[operand].make(probe, program.event(Int(words[position &+ 2]), sent: event)))
                position &+= 3
            default:
                state.row.row = operand & 0xFFFF
                return StatechartStatus(rawValue: UInt8(truncatingIfNeeded: operand >> 16)) ?? .rejected
            }
        }
        return .rejected
    }

    /// The active states of `state`'s row (empty for a row not of this table).
    @inlinable
    public func configuration(of state: CompiledContextStatechartState<StateID>) -> StatechartStateSet {
        tables.configuration(ofRow: state.row.index)
    }

    /// Whether `id` is active in `state` (`false` for a raw value outside `0..<128`).
    @inlinable
    public func isIn(_ id: StateID, _ state: CompiledContextStatechartState<StateID>) -> Bool {
        let raw = id.rawValue
        return raw >= 0 && raw < StatechartStateSet.capacity && configuration(of: state).contains(raw)
    }

    /// The active atomic and final states of `state`, in document order.
    public func activeLeaves(in state: CompiledContextStatechartState<StateID>) -> [StateID] {
        let active = configuration(of: state)
        return tables.leaves.compactMap { active.contains(Int($0)) ? StateID(rawValue: Int($0)) : nil }
    }

    /// The row at `index` with `context`, or `nil` when there is no such row: to restore a state
    /// saved as its row's index and its context.
    public func state(atIndex index: Int, context: StateID.Context) -> CompiledContextStatechartState<StateID>? {
        index >= 0 && index < stateCount ? CompiledContextStatechartState(row: CompiledStatechartState(index: index), context: context) : nil
    }
}

extension CompiledContextStatechart: Sendable where Output: Sendable {}

/// A state of a ``CompiledContextStatechart``: the row of its configuration, and its context.
public struct CompiledContextStatechartState<StateID: StatechartStateID>: Hashable, Sendable {
    /// The row of the configuration (active states and history) in the compiled chart's table.
    public var row: CompiledStatechartState
    /// The chart's extended state.
    public var context: StateID.Context

    /// A state at `row` with `context`.
    @inlinable
    public init(row: CompiledStatechartState, context: StateID.Context) {
        self.row = row
        self.context = context
    }
}

/// The layout of a ``CompiledContextStatechart``'s entries and programs (see
/// ``CompiledContextProgram``).
@usableFromInline
enum CompiledContextCode {
    /// Set in an entry that starts a program (the rest of the entry is its first word's index).
    @usableFromInline static var programFlag: UInt32 { 0x8000_0000 }
    @usableFromInline static var opcodeShift: UInt32 { 28 }
    @usableFromInline static var operandMask: UInt32 { 0x0FFF_FFFF }
    @usableFromInline static var test: UInt32 { 1 }
    @usableFromInline static var assign: UInt32 { 2 }
    @usableFromInline static var emit: UInt32 { 3 }
    @usableFromInline static var compute: UInt32 { 4 }
    @usableFromInline static var end: UInt32 { 5 }
    static var wordLimit: Int { 1 << 24 }

    /// The positions of the `end` words in `code`, a slot's program.
    static func ends(in code: [UInt32]) -> [Int] {
        var ends: [Int] = []
        var position = 0
        while position < code.count {
            switch code[position] >> opcodeShift {
            case test, compute: position += 3
            case assign: position += 2
            case emit: position += 1
            default:
                ends.append(position)
                position += 1
            }
        }
        return ends
    }
}

/// The programs of a ``CompiledContextStatechart``'s slots, and the functions and values they
/// name. A program is a run of words; each starts with an opcode (bits 28–31) and an operand:
///
/// - `test g`, configuration, skip: evaluates guard `g` on the configuration with the context;
///   when it does not hold, skips `skip` words (the branch taken when it holds);
/// - `assign a`, event: runs assignment `a` on the context;
/// - `emit s`: emits the fixed output sequence `s`;
/// - `compute c`, configuration, event: emits what function `c` computes;
/// - `end`: the next row (bits 0–15) and the status (bits 16–19).
///
/// An event operand is 0 for none, 1 for the event sent, and `2 + k` for `events[k]`, a raised
/// event.
@usableFromInline
struct CompiledContextProgram<StateID: StatechartStateID, Event: Sendable, Output> {
    /// An assignment, in a struct so the closure is not called through a thunk.
    @usableFromInline
    struct Assignment {
        @usableFromInline let update: @Sendable (inout StateID.Context, Event?) -> Void
    }

    /// A computed output.
    @usableFromInline
    struct Computation {
        @usableFromInline let make: @Sendable (StatechartState<StateID>, Event?) -> Output
    }

    @usableFromInline var words: [UInt32] = []
    @usableFromInline var guards: [StatechartTransition<StateID, Event, Output>.Condition] = []
    @usableFromInline var assigns: [Assignment] = []
    @usableFromInline var computed: [Computation] = []
    /// The raised events that assignments and computed outputs see.
    @usableFromInline var events: [Event] = []
    /// Two words per configuration a guard or computed output is asked about: its active
    /// states.
    @usableFromInline var configurations: [UInt64] = []

    @inlinable
    func active(_ configuration: Int) -> StatechartStateSet {
        StatechartStateSet(words: (configurations[configuration &* 2], configurations[configuration &* 2 &+ 1]))
    }

    @inlinable
    func event(_ operand: Int, sent: Event) -> Event? {
        switch operand {
        case 0: nil
        case 1: sent
        default: events[operand &- 2]
        }
    }
}

extension CompiledContextProgram: Sendable {}
extension CompiledContextProgram.Assignment: Sendable {}
extension CompiledContextProgram.Computation: Sendable {}
