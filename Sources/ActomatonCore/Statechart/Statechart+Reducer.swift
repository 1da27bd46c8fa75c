/// Where a statechart's reducer collects the outputs of one event: an ``OutputSink`` that
/// starts empty.
///
/// `Array` is one (the default). For a hot path that must not allocate, use a type that keeps
/// only what it needs, such as a count or the last output.
public protocol StatechartOutputs: OutputSink {
    /// No outputs yet.
    init()
}

extension Array: StatechartOutputs {}

/// A ``Statechart`` as a statically dispatched reducer: each event returns a
/// ``StatechartReply`` with the outputs collected in `Outputs`.
///
/// Use ``Statechart/reducer`` for the closure form that composes with other reducers, and this
/// type on hot paths, where ``MealyMachine`` specialises and inlines it.
public struct StatechartReducer<StateID: StatechartStateID, Event: Sendable, Output, Outputs: StatechartOutputs>: MealyReducerProtocol
where Outputs.Output == Output {
    /// The chart it runs.
    public let chart: Statechart<StateID, Event, Output>

    /// A reducer running `chart`, collecting outputs in `Outputs`.
    @inlinable
    public init(_ chart: Statechart<StateID, Event, Output>, collecting _: Outputs.Type = Outputs.self) {
        self.chart = chart
    }

    /// Sends `event` to the chart.
    @inlinable
    public func reduce(_ event: Event, into state: inout StatechartState<StateID>, environment: Void) -> StatechartReply<Outputs> {
        var outputs = Outputs()
        var trace = StatechartNoTrace()
        let status = chart.send(event, to: &state, outputs: &outputs, trace: &trace)
        return StatechartReply(status: status, outputs: outputs)
    }
}

extension StatechartReducer: Sendable where Output: Sendable {}

/// The machine that runs a ``Statechart``: its ``StatechartReducer`` on a
/// ``ReplyEffectManager``, so `send` returns each event's ``StatechartReply``.
public typealias StatechartMachine<StateID: StatechartStateID, Event: Sendable, Output> = MealyMachine<
    StatechartReducer<StateID, Event, Output, [Output]>,
    ReplyEffectManager<Event, StatechartReply<[Output]>>
>

extension Statechart where Output: Sendable {
    /// The chart as a reducer whose output is each event's ``StatechartReply``: compose it,
    /// `map(output:)` it to effects, or run it on an `Actomaton`.
    ///
    /// Start its state at ``initialState``; ``initialOutputs`` holds what entering it emitted.
    public var reducer: MealyReducer<Event, StatechartState<StateID>, Void, StatechartReply<[Output]>> {
        MealyReducer(StatechartReducer(self, collecting: [Output].self))
    }

    /// A machine in `state` (``initialState`` by default) that runs this chart: its `send`
    /// returns each event's ``StatechartReply``.
    public func machine(state: StatechartState<StateID>? = nil) -> StatechartMachine<StateID, Event, Output> {
        MealyMachine(state: state ?? initialState, reducer: StatechartReducer(self), effectManager: ReplyEffectManager())
    }
}
