/// A ``CompiledContextStatechart`` as a statically dispatched reducer: each event returns a
/// ``StatechartReply`` with the outputs collected in `Outputs`.
public struct CompiledContextStatechartReducer<StateID: StatechartStateID, Event: Sendable, Output, Outputs: StatechartOutputs>:
    MealyReducerProtocol
where Outputs.Output == Output {
    /// The compiled chart it runs.
    public let chart: CompiledContextStatechart<StateID, Event, Output>

    /// A reducer running `chart`, collecting outputs in `Outputs`.
    @inlinable
    public init(_ chart: CompiledContextStatechart<StateID, Event, Output>, collecting _: Outputs.Type = Outputs.self) {
        self.chart = chart
    }

    /// Sends `event` to the compiled chart.
    @inlinable
    public func reduce(
        _ event: Event, into state: inout CompiledContextStatechartState<StateID>, environment: Void
    ) -> StatechartReply<Outputs> {
        var outputs = Outputs()
        let status = chart.send(event, to: &state, outputs: &outputs)
        return StatechartReply(status: status, outputs: outputs)
    }
}

extension CompiledContextStatechartReducer: Sendable where Output: Sendable {}

/// The machine that runs a ``CompiledContextStatechart``: its ``CompiledContextStatechartReducer``
/// on a ``ReplyEffectManager``, so `send` returns each event's ``StatechartReply``.
public typealias CompiledContextStatechartMachine<StateID: StatechartStateID, Event: Sendable, Output> = MealyMachine<
    CompiledContextStatechartReducer<StateID, Event, Output, [Output]>,
    ReplyEffectManager<Event, StatechartReply<[Output]>>
>

extension CompiledContextStatechart where Output: Sendable {
    /// The compiled chart as a reducer whose output is each event's ``StatechartReply``.
    ///
    /// Start its state at ``initialState``; ``initialOutputs`` holds what the start emitted.
    public var reducer: MealyReducer<Event, CompiledContextStatechartState<StateID>, Void, StatechartReply<[Output]>> {
        MealyReducer(CompiledContextStatechartReducer(self, collecting: [Output].self))
    }

    /// A machine in `state` (``initialState`` by default) that runs this compiled chart.
    public func machine(state: CompiledContextStatechartState<StateID>? = nil) -> CompiledContextStatechartMachine<StateID, Event, Output> {
        MealyMachine(state: state ?? initialState, reducer: CompiledContextStatechartReducer(self), effectManager: ReplyEffectManager())
    }
}
