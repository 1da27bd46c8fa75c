/// Why a ``Statechart`` could not be compiled into a ``CompiledStatechart`` or a
/// ``CompiledContextStatechart``, or why tables given to
/// ``CompiledStatechart/init(tables:classifiedBy:)`` were refused.
public enum StatechartCompileError<StateID: StatechartStateID>: Error, Equatable {
    /// The list of events was empty: a compiled chart needs one event per class.
    case noEvents
    /// The classifier put the event at `event` (an index into the list) in a negative class.
    case negativeClass(event: Int, eventClass: Int)
    /// The classifier put an event in a class at or past ``CompiledStatechart/classLimit``.
    case tooManyClasses(eventClass: Int)
    /// No event of the list is in class `eventClass`, though a higher class has one: classes
    /// are `0, 1, 2, …` with no gap, so every class has an event to explore it with.
    case classWithoutEvent(eventClass: Int)
    /// The event at `event` behaves differently from `representative`, the first event of its
    /// class, in the state whose active states are `state`: the classifier put two events in one
    /// class that the chart tells apart.
    case classDisagrees(event: Int, representative: Int, state: [StateID])
    /// The chart reaches more than `limit` states (configurations with their history) with the
    /// events' classes.
    case stateLimitExceeded(limit: Int)
    /// The state limit is outside 1 through ``CompiledStatechart/stateCapacity``.
    case stateLimitOutOfRange(Int)
    /// The table (states × classes) would hold more than ``CompiledStatechart/entryLimit``
    /// entries.
    case tableTooLarge(states: Int, classes: Int)
    /// The chart emits more than ``CompiledStatechart/outputSequenceLimit`` distinct output
    /// sequences, or more than ``CompiledStatechart/outputLimit`` outputs in them together.
    case tooManyOutputs
    /// Tables given to ``CompiledStatechart/init(tables:classifiedBy:)`` are not consistent.
    case malformedTables(CompiledStatechartTableProblem)
    /// The path limit of ``Statechart/compiledEvaluatingContext(events:stateLimit:pathLimit:classifiedBy:)``
    /// is outside 1 through 65,536.
    case pathLimitOutOfRange(Int)
    /// An event, in the state whose active states are `state`, can go more than `limit` ways
    /// (the answers of the guards it meets): usually an eventless loop whose guard reads the
    /// context.
    case tooManyPaths(state: [StateID], limit: Int)
    /// The programs of a ``CompiledContextStatechart`` would pass
    /// ``CompiledContextStatechart/programLimit`` words.
    case programTooLarge
    /// A state of the chart makes a done event of the chart's type
    /// (``StatechartNode/doneEvent``): that event is made from the state at run time, so
    /// which transitions take it cannot be compiled with the context left to run time.
    case doneEventsMadeAtRunTime
}

extension StatechartCompileError: CustomStringConvertible {
    /// One line naming the problem.
    public var description: String {
        switch self {
        case .noEvents:
            "no events to compile the chart with: give at least one event of each class"
        case let .negativeClass(event, eventClass):
            "event #\(event) was classified as \(eventClass); classes are 0, 1, 2, …"
        case let .tooManyClasses(eventClass):
            "event class \(eventClass) is too high: a compiled chart has at most \(CompiledStatechartLimit.classes) classes"
        case let .classWithoutEvent(eventClass):
            "no event of class \(eventClass) was given, though a higher class has one: list an event of every class"
        case let .classDisagrees(event, representative, state):
            "event #\(event) and event #\(representative) are in one class but take different transitions in state \(Self.describe(state)): give them different classes"
        case let .stateLimitExceeded(limit):
            "the chart reaches more than \(limit) states with these event classes; raise stateLimit (up to \(CompiledStatechartLimit.states)) or run the chart uncompiled"
        case let .stateLimitOutOfRange(limit):
            "state limit \(limit) is outside 1...\(CompiledStatechartLimit.states)"
        case let .tableTooLarge(states, classes):
            "a table of \(states) states × \(classes) classes is over \(CompiledStatechartLimit.entries) entries; use fewer classes or run the chart uncompiled"
        case .tooManyOutputs:
            "the chart emits more than \(CompiledStatechartLimit.outputSequences) distinct output sequences or \(CompiledStatechartLimit.outputs) outputs in all"
        case let .malformedTables(problem):
            "the compiled chart's tables are malformed: \(problem)"
        case let .pathLimitOutOfRange(limit):
            "path limit \(limit) is outside 1...65536"
        case let .tooManyPaths(state, limit):
            "an event in state \(Self.describe(state)) can go more than \(limit) ways through the guards it meets (an eventless loop on the context?); raise pathLimit or run the chart uncompiled"
        case .programTooLarge:
            "the compiled chart's programs would pass \(CompiledContextCode.wordLimit) words; run the chart uncompiled"
        case .doneEventsMadeAtRunTime:
            "a state makes a done event of the chart's type, which is made from the state at run time: compile with `compiled(events:stateLimit:classifiedBy:)`, or run the chart uncompiled"
        }
    }

    static func describe(_ states: [StateID]) -> String {
        "{" + states.map { StatechartError<StateID>.name($0) }.joined(separator: ", ") + "}"
    }
}
