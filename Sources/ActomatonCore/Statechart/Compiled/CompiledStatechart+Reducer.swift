/// A ``CompiledStatechart`` as a statically dispatched reducer: each event returns a
/// ``StatechartReply`` with the outputs collected in `Outputs`.
public struct CompiledStatechartReducer<StateID: StatechartStateID, Event: Sendable, Output, Outputs: StatechartOutputs>: MealyReducerProtocol
where Outputs.Output == Output {
    /// The compiled chart it runs.
    public let chart: CompiledStatechart<StateID, Event, Output>

    /// A reducer running `chart`, collecting outputs in `Outputs`.
    @inlinable
    public init(_ chart: CompiledStatechart<StateID, Event, Output>, collecting _: Outputs.Type = Outputs.self) {
        self.chart = chart
    }

    /// Sends `event` to the compiled chart.
    @inlinable
    public func reduce(_ event: Event, into state: inout CompiledStatechartState, environment: Void) -> StatechartReply<Outputs> {
        var outputs = Outputs()
        let status = chart.send(event, to: &state, outputs: &outputs)
        return StatechartReply(status: status, outputs: outputs)
    }
}

extension CompiledStatechartReducer: Sendable where Output: Sendable {}

/// The machine that runs a ``CompiledStatechart``: its ``CompiledStatechartReducer`` on a
/// ``ReplyEffectManager``, so `send` returns each event's ``StatechartReply``.
public typealias CompiledStatechartMachine<StateID: StatechartStateID, Event: Sendable, Output> = MealyMachine<
    CompiledStatechartReducer<StateID, Event, Output, [Output]>,
    ReplyEffectManager<Event, StatechartReply<[Output]>>
>

extension CompiledStatechart where Output: Sendable {
    /// The compiled chart as a reducer whose output is each event's ``StatechartReply``:
    /// compose it, `map(output:)` it to effects, or run it on an `Actomaton`.
    ///
    /// Start its state at ``initialState``; ``initialOutputs`` holds what entering it emitted.
    public var reducer: MealyReducer<Event, CompiledStatechartState, Void, StatechartReply<[Output]>> {
        MealyReducer(CompiledStatechartReducer(self, collecting: [Output].self))
    }

    /// A machine in `state` (``initialState`` by default) that runs this compiled chart.
    public func machine(state: CompiledStatechartState? = nil) -> CompiledStatechartMachine<StateID, Event, Output> {
        MealyMachine(state: state ?? initialState, reducer: CompiledStatechartReducer(self), effectManager: ReplyEffectManager())
    }
}
