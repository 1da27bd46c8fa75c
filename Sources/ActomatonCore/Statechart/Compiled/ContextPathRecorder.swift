// How compiling with the context at run time explores a slot: the step runs with a sink and an
// evaluation that record what it does, and the recorder answers its guards as told.

/// A row of a chart compiled with its context at run time: a configuration and its history.
struct ContextRowKey: Hashable {
    var active: StatechartStateSet
    var history: StatechartStateSet

    init<StateID>(_ state: StatechartState<StateID>) {
        active = state.active
        history = state.history
    }
}

/// One way through a slot: what the step did, in order, the status and the row it ended in.
struct ContextPath<Output> {
    var steps: [ContextPathStep<Output>]
    var status: StatechartStatus
    var target: ContextRowKey
}

/// What a step did on one way through a slot. Configurations and functions are numbers given
/// by the ``ContextPathRecorder``.
enum ContextPathStep<Output> {
    case output(Output)
    case test(Int, configuration: Int, answer: Bool)
    case assign(Int, event: Int)
    case compute(Int, configuration: Int, event: Int)

    var answer: Bool {
        if case let .test(_, _, answer) = self { answer } else { false }
    }
}

/// Values met while compiling, each numbered once, in the order first met, by the key that
/// names it in the chart.
struct NumberedValues<Key: Hashable, Value> {
    private(set) var values: [Value] = []
    private var numbers: [Key: Int] = [:]

    /// The number of the value named `key`; `value` is kept when the key is new.
    mutating func number(of key: Key, _ value: @autoclosure () -> Value) -> Int {
        if let known = numbers[key] { return known }
        numbers[key] = values.count
        values.append(value())
        return values.count - 1
    }
}

/// Records what a step does while a chart is compiled with its context at run time, answers its
/// guards as told, and numbers the functions, configurations and raised events it meets.
final class ContextPathRecorder<StateID: StatechartStateID, Event: Sendable & Equatable, Output> {
    /// Whether guards are evaluated while compiling rather than recorded: for a chart without
    /// a context, whose guards read only the configuration.
    let evaluatesGuards: Bool
    /// By transition condition, whether it is evaluated while compiling, as its transition says
    /// it reads only the configuration.
    let conditionsReadingOnlyTheConfiguration: [Bool]
    /// The answers to give, in order; a guard met after them is answered `true`.
    var answers: [Bool] = []
    /// The answers given on this way.
    var answered: [Bool] = []
    var steps: [ContextPathStep<Output>] = []

    /// By a transition condition's index, or -1 - a branch's serial.
    var guards = NumberedValues<Int, StatechartTransition<StateID, Event, Output>.Condition>()
    /// By the action's serial.
    var assignments = NumberedValues<Int32, CompiledContextProgram<StateID, Event, Output>.Assignment>()
    var computations = NumberedValues<Int32, CompiledContextProgram<StateID, Event, Output>.Computation>()
    /// The active states a guard or computed output is given at run time, with the context (not
    /// the history).
    var configurations = NumberedValues<StatechartStateSet, StatechartStateSet>()
    var events: [Event] = []

    init(evaluatesGuards: Bool, conditionsReadingOnlyTheConfiguration: [Bool]) {
        self.evaluatesGuards = evaluatesGuards
        self.conditionsReadingOnlyTheConfiguration = conditionsReadingOnlyTheConfiguration
    }

    func start(answering answers: [Bool]) {
        self.answers = answers
        answered = []
        steps = []
    }

    func answer() -> Bool {
        let answer = answered.count < answers.count ? answers[answered.count] : true
        answered.append(answer)
        return answer
    }

    func event(_ occurrence: Statechart<StateID, Event, Output>.Occurrence) -> Int {
        switch occurrence {
        case .event: return 1
        case let .raised(event):
            if let known = events.firstIndex(of: event) { return 2 + known }
            events.append(event)
            return 1 + events.count
        default: return 0
        }
    }

    func test(_ key: Int, _ condition: StatechartTransition<StateID, Event, Output>.Condition, _ state: StatechartState<StateID>) -> Bool {
        if evaluatesGuards || (key >= 0 && conditionsReadingOnlyTheConfiguration[key]) { return condition.holds(state) }
        let number = guards.number(of: key, condition)
        let answer = answer()
        steps.append(.test(number, configuration: configurations.number(of: state.active, state.active), answer: answer))
        return answer
    }
}

/// The sink a slot's ways are explored with: fixed outputs go to the recorder, in order with the
/// rest.
struct ContextPathSink<StateID: StatechartStateID, Event: Sendable & Equatable, Output>: OutputSink {
    let recorder: ContextPathRecorder<StateID, Event, Output>

    mutating func receive(_ output: Output) {
        recorder.steps.append(.output(output))
    }
}

/// The evaluation a slot's ways are explored with: guards answered by the recorder, assignments
/// and computed outputs recorded, not run.
struct ContextPathEvaluation<StateID: StatechartStateID, Event: Sendable & Equatable, Output>: StatechartEvaluation {
    let recorder: ContextPathRecorder<StateID, Event, Output>

    func holds(
        condition index: Int,
        _ condition: StatechartTransition<StateID, Event, Output>.Condition,
        in state: StatechartState<StateID>
    ) -> Bool {
        recorder.test(index, condition, state)
    }

    func holds(branch: StatechartAction<StateID, Event, Output>.Branch, in state: StatechartState<StateID>) -> Bool {
        guard let condition = branch.condition else { return true }
        return recorder.test(-1 - Int(branch.serial), .init(holds: condition), state)
    }

    func assign(
        _ action: StatechartAction<StateID, Event, Output>,
        _ update: (inout StateID.Context, Event?) -> Void,
        _ state: inout StatechartState<StateID>,
        _ occurrence: Statechart<StateID, Event, Output>.Occurrence
    ) {
        guard case let .assign(stored) = action.kind else { return }
        let number = recorder.assignments.number(of: action.serial, .init(update: stored))
        recorder.steps.append(.assign(number, event: recorder.event(occurrence)))
    }

    func emit<Sink: OutputSink>(
        _ action: StatechartAction<StateID, Event, Output>,
        _ make: (StatechartState<StateID>, Event?) -> Output,
        _ state: StatechartState<StateID>,
        _ occurrence: Statechart<StateID, Event, Output>.Occurrence,
        _ outputs: inout Sink
    ) where Sink.Output == Output {
        guard case let .computedOutput(stored) = action.kind else { return }
        let number = recorder.computations.number(of: action.serial, .init(make: stored))
        let configuration = recorder.configurations.number(of: state.active, state.active)
        recorder.steps.append(.compute(number, configuration: configuration, event: recorder.event(occurrence)))
    }
}
