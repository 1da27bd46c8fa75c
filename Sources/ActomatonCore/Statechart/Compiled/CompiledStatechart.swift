/// A ``Statechart`` compiled into a transition table: every state the chart can reach, and for
/// each one what every class of event does. Sending an event is one table lookup.
///
/// A chart interprets its definition at each event: it selects transitions, resolves
/// conflicts, exits and enters states. Its compiled form did all of that once, for every
/// reachable state and every event class, and keeps only the result: the next state, the
/// outputs in order, and the ``StatechartStatus``. It runs in about the time of a hand-written
/// `switch` (the `platformer` benchmark), allocates nothing, and its tables can be written out as
/// Swift source for a program that should not carry the chart at all
/// (``CompiledStatechartTables/swiftSource(named:outputType:accessLevel:output:)``).
///
/// ```swift
/// enum Light: Int, StatechartStateID { case on, bright, dim, off }
/// enum Switch: Equatable { case toggle, brighter, dimmer }
///
/// let chart = try Statechart<Light, Switch, String>(states: [
///     .compound(.on, onEntry: ["lamp on"], onExit: ["lamp off"],
///               transitions: [.on(.toggle, to: .off)], children: [
///         .atomic(.bright, transitions: [.on(.dimmer, to: .dim)]),
///         .atomic(.dim, transitions: [.on(.brighter, to: .bright)]),
///     ]),
///     .atomic(.off, transitions: [.on(.toggle, to: .on)]),
/// ])
/// let lamp = try chart.compiled(events: [.toggle, .brighter, .dimmer]) { event in
///     switch event {
///     case .toggle: 0
///     case .brighter: 1
///     case .dimmer: 2
///     }
/// }
/// var state = lamp.initialState             // on, bright
/// lamp.send(.dimmer, to: &state)            // on, dim
/// lamp.send(.toggle, to: &state).outputs    // ["lamp off"]
/// lamp.isIn(.off, state)                    // true
/// ```
///
/// ## Event classes
///
/// A table needs a small number of event kinds, so the chart is compiled with a classifier: a
/// function from an event to its class, `0, 1, 2, …`. Events of one class must take the same
/// transitions in every state; an enum's cases are the usual classes, and an event with a value
/// that guards test (a speed, a byte) gets one class per band the guards tell apart.
/// ``Statechart/compiled(events:stateLimit:classifiedBy:)`` explores the chart with the first
/// event of each class you list, and checks every other event you list against it in every
/// reachable state, so listing a few events per class catches a classifier that merges what
/// the chart tells apart.
///
/// ## What it keeps and what it drops
///
/// - A state (``CompiledStatechartState``) is an index into the table. Its active
///   configuration is kept exactly (``isIn(_:_:)``, ``activeLeaves(in:)``,
///   ``configuration(of:)``); history is kept only as far as it can still change what happens,
///   since states that differ only in history that can never show are merged.
/// - Compiling drops the trace (``StatechartTrace``): coverage and generated tests run on the
///   chart.
/// - Guards and event predicates are evaluated while compiling, so they must be pure, as
///   they must be for generated tests.
///
/// ## Limits
///
/// At most ``stateCapacity`` states (``Statechart/compiled(events:stateLimit:classifiedBy:)``
/// takes a lower `stateLimit`, 4,096 by default), ``classLimit`` classes, ``entryLimit`` table
/// entries, ``outputSequenceLimit`` distinct output sequences and ``outputLimit`` outputs in
/// them. A chart past a limit is refused with a ``StatechartCompileError``; it still runs
/// uncompiled.
public struct CompiledStatechart<StateID: StatechartStateID, Event: Sendable, Output> {
    /// The most states a compiled chart can have: a next state is 16 bits.
    public static var stateCapacity: Int { CompiledStatechartLimit.states }
    /// The most event classes a compiled chart can have.
    public static var classLimit: Int { CompiledStatechartLimit.classes }
    /// The most entries (states × classes) a table can have: 16 MiB of table.
    public static var entryLimit: Int { CompiledStatechartLimit.entries }
    /// The most distinct non-empty output sequences a table can have: a sequence is 12 bits.
    public static var outputSequenceLimit: Int { CompiledStatechartLimit.outputSequences }
    /// The most outputs the sequences can hold together.
    public static var outputLimit: Int { CompiledStatechartLimit.outputs }

    /// The tables it runs.
    public let tables: CompiledStatechartTables<Output>
    /// The event classifier.
    @usableFromInline let classify: @Sendable (Event) -> Int

    /// A compiled chart running `tables`, which ``CompiledStatechartTables/swiftSource(named:outputType:accessLevel:output:)``
    /// wrote, with the classifier the chart was compiled with.
    ///
    /// - Throws: ``StatechartCompileError/malformedTables(_:)`` when the tables are not
    ///   consistent (a next state, an output sequence or a status out of range).
    public init(
        tables: CompiledStatechartTables<Output>,
        classifiedBy classify: @escaping @Sendable (Event) -> Int
    ) throws(StatechartCompileError<StateID>) {
        if let problem = tables.problem { throw .malformedTables(problem) }
        self.tables = tables
        self.classify = classify
    }

    /// The state the chart starts in.
    @inlinable
    public var initialState: CompiledStatechartState { CompiledStatechartState(index: tables.initialState) }

    /// How the chart's start ended: ``StatechartStatus/transitioned`` when it settled, or the
    /// limit it stopped at (``Statechart/initialStatus``); ``initialState`` is where it stopped.
    public var initialStatus: StatechartStatus { tables.initialStatus }

    /// What entering ``initialState`` emitted.
    public var initialOutputs: [Output] {
        var outputs: [Output] = []
        emitInitialOutputs(into: &outputs)
        return outputs
    }

    /// Gives what entering ``initialState`` emitted to `outputs`, in order, without allocating:
    /// for a program that resets the chart into a fixed buffer.
    public func emitInitialOutputs<Sink: OutputSink>(into outputs: inout Sink) where Sink.Output == Output {
        tables.emit(sequence: tables.initialOutputs, into: &outputs)
    }

    /// The number of states in the table.
    @inlinable
    public var stateCount: Int { tables.stateCount }

    /// The number of event classes.
    @inlinable
    public var classCount: Int { tables.classCount }

    /// The state at `index` (`0..<stateCount`), or `nil` when there is none: to restore a state
    /// saved as its ``CompiledStatechartState/index``.
    @inlinable
    public func state(atIndex index: Int) -> CompiledStatechartState? {
        index >= 0 && index < stateCount ? CompiledStatechartState(index: index) : nil
    }

    /// Sends `event`: moves `state` to the next one and gives its outputs to `outputs`, in
    /// order. Allocates nothing.
    @inlinable
    public func send<Sink: OutputSink>(
        _ event: Event,
        to state: inout CompiledStatechartState,
        outputs: inout Sink
    ) -> StatechartStatus where Sink.Output == Output {
        send(eventClass: classify(event), to: &state, outputs: &outputs)
    }

    /// Sends an event of class `eventClass`, classified by the caller: for a program that gets
    /// events as numbers (a `.wasm` module's ABI, a byte stream).
    ///
    /// A class outside `0..<classCount`, or a state whose index is not a row of this table (one
    /// from a larger compiled chart), is answered with ``StatechartStatus/rejected``, and nothing
    /// changes.
    @inlinable
    public func send<Sink: OutputSink>(
        eventClass: Int,
        to state: inout CompiledStatechartState,
        outputs: inout Sink
    ) -> StatechartStatus where Sink.Output == Output {
        guard let entry = tables.entry(row: state.index, eventClass: eventClass) else { return .rejected }
        return tables.follow(entry, row: &state.row, outputs: &outputs)
    }

    /// Sends `event` and returns its status and outputs.
    @inlinable
    @discardableResult
    public func send(_ event: Event, to state: inout CompiledStatechartState) -> StatechartReply<[Output]> {
        var outputs: [Output] = []
        let status = send(event, to: &state, outputs: &outputs)
        return StatechartReply(status: status, outputs: outputs)
    }

    /// The active states of `state` (empty for an index that is not a row of this table).
    @inlinable
    public func configuration(of state: CompiledStatechartState) -> StatechartStateSet {
        tables.configuration(ofRow: state.index)
    }

    /// Whether `id` is active in `state` (`false` for a raw value outside `0..<128`).
    @inlinable
    public func isIn(_ id: StateID, _ state: CompiledStatechartState) -> Bool {
        let raw = id.rawValue
        return raw >= 0 && raw < StatechartStateSet.capacity && configuration(of: state).contains(raw)
    }

    /// The active atomic and final states of `state`, in document order.
    public func activeLeaves(in state: CompiledStatechartState) -> [StateID] {
        let active = configuration(of: state)
        return tables.leaves.compactMap { active.contains(Int($0)) ? StateID(rawValue: Int($0)) : nil }
    }
}

extension CompiledStatechart: Sendable where Output: Sendable {}

/// The limits of a compiled chart's tables, set by the widths of an entry's fields.
@usableFromInline
enum CompiledStatechartLimit {
    @usableFromInline static let states = 65_535
    static let classes = 1_024
    static let entries = 1 << 22
    static let outputSequences = 4_095
    static let outputs = 65_535
}

/// A state of a ``CompiledStatechart``: the index of its row in the table.
///
/// Ask the compiled chart what it means (``CompiledStatechart/isIn(_:_:)``,
/// ``CompiledStatechart/activeLeaves(in:)``); save ``index`` and restore it with
/// ``CompiledStatechart/state(atIndex:)``.
public struct CompiledStatechartState: Hashable, Sendable {
    /// The row of the state in its compiled chart's table.
    @inlinable
    public var index: Int { row }

    @usableFromInline var row: Int

    @usableFromInline
    init(index: Int) {
        self.row = index
    }
}
