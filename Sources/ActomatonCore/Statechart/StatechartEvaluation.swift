/// Where a step calls the chart's functions that read or update the context: conditions,
/// assignments and computed outputs.
///
/// A step runs with ``StatechartDirectEvaluation``, which calls them, and costs nothing once
/// specialized. Compiling a chart whose context is read at run time
/// (``Statechart/compiledEvaluatingContext(events:stateLimit:pathLimit:classifiedBy:)``) runs
/// the step with an evaluation that records each call instead and answers conditions as told,
/// to explore every way a slot can go.
@usableFromInline
protocol StatechartEvaluation<StateID, Event, Output> {
    associatedtype StateID: StatechartStateID
    associatedtype Event: Sendable
    associatedtype Output

    /// Whether the transition condition at `index` of the chart's conditions holds in `state`.
    mutating func holds(
        condition index: Int,
        _ condition: StatechartTransition<StateID, Event, Output>.Condition,
        in state: StatechartState<StateID>
    ) -> Bool

    /// Whether the condition of `branch` (which has one) holds in `state`.
    mutating func holds(branch: StatechartAction<StateID, Event, Output>.Branch, in state: StatechartState<StateID>) -> Bool

    /// Runs the assignment `action`, whose update is `update`, on `state`'s context.
    mutating func assign(
        _ action: StatechartAction<StateID, Event, Output>,
        _ update: (inout StateID.Context, Event?) -> Void,
        _ state: inout StatechartState<StateID>,
        _ occurrence: Statechart<StateID, Event, Output>.Occurrence
    )

    /// Gives the output that the computed-output `action` makes with `make` to `outputs`.
    mutating func emit<Sink: OutputSink>(
        _ action: StatechartAction<StateID, Event, Output>,
        _ make: (StatechartState<StateID>, Event?) -> Output,
        _ state: StatechartState<StateID>,
        _ occurrence: Statechart<StateID, Event, Output>.Occurrence,
        _ outputs: inout Sink
    ) where Sink.Output == Output
}

/// The evaluation a step runs with: it calls the chart's functions.
@usableFromInline
struct StatechartDirectEvaluation<StateID: StatechartStateID, Event: Sendable, Output>: StatechartEvaluation {
    @inlinable
    init() {}

    @inlinable
    @inline(__always)
    func holds(
        condition index: Int,
        _ condition: StatechartTransition<StateID, Event, Output>.Condition,
        in state: StatechartState<StateID>
    ) -> Bool {
        condition.holds(state)
    }

    @inlinable
    @inline(__always)
    func holds(branch: StatechartAction<StateID, Event, Output>.Branch, in state: StatechartState<StateID>) -> Bool {
        branch.condition?(state) ?? true
    }

    @inlinable
    @inline(__always)
    func assign(
        _ action: StatechartAction<StateID, Event, Output>,
        _ update: (inout StateID.Context, Event?) -> Void,
        _ state: inout StatechartState<StateID>,
        _ occurrence: Statechart<StateID, Event, Output>.Occurrence
    ) {
        update(&state.context, occurrence.event)
    }

    @inlinable
    @inline(__always)
    func emit<Sink: OutputSink>(
        _ action: StatechartAction<StateID, Event, Output>,
        _ make: (StatechartState<StateID>, Event?) -> Output,
        _ state: StatechartState<StateID>,
        _ occurrence: Statechart<StateID, Event, Output>.Occurrence,
        _ outputs: inout Sink
    ) where Sink.Output == Output {
        outputs.receive(make(state, occurrence.event))
    }
}
