/// Where a ``SinkEffectManager`` puts each output: a value the caller drains after a run.
///
/// A sink is a value the machine owns, so handing it an output is a statically dispatched
/// call with no allocation; read it back from ``MealyMachine/effectManager``.
public protocol OutputSink<Output> {
    /// The reducer output it takes.
    associatedtype Output
    /// Takes one transition's output.
    mutating func receive(_ output: Output)
}

/// The effect manager that hands every output to a sink the caller drains: for machines that
/// run over a buffer in bulk (``MealyMachine/send(contentsOf:)``), such as a parser whose
/// outputs are ranges into the caller's bytes.
///
/// ```swift
/// struct Total: OutputSink { var sum = 0; mutating func receive(_ output: Int) { sum += output } }
/// var machine = MealyMachine(state: 0, reducer: reducer, effectManager: SinkEffectManager<Int, Total>(Total()))
/// machine.send(contentsOf: [1, 2, 3])
/// machine.effectManager.sink.sum
/// ```
public struct SinkEffectManager<Action, Sink: OutputSink>: EffectManager {
    /// The sink, with every output received so far.
    public var sink: Sink

    /// A manager that hands outputs to `sink`.
    @inlinable
    public init(_ sink: Sink) {
        self.sink = sink
    }

    /// Hands `output` to the sink; never feeds an action back.
    @inlinable
    public mutating func handle(_ output: Sink.Output) -> Action? {
        sink.receive(output)
        return nil
    }

    /// Nothing to return: the outputs are in the sink.
    @inlinable
    public mutating func finishSend() {}
}

extension SinkEffectManager: Sendable where Sink: Sendable {}

extension MealyMachine where Manager.SendResult == Void {
    /// Sends every action of `actions`, in order: the bulk form of ``send(_:)``, for running a
    /// machine over a buffer (with a ``SinkEffectManager`` or ``NoOpEffectManager``) without a
    /// call per element at the call site.
    @inlinable
    public mutating func send<Actions: Sequence>(contentsOf actions: Actions) where Actions.Element == Reducer.Action {
        for action in actions {
            send(action)
        }
    }
}
