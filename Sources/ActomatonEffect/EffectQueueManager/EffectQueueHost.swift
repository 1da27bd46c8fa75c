/// The actor an ``EffectQueueManager`` sends its effects' next actions to.
///
/// `Actomaton` and `TestMachine` are hosts. The manager holds its host weakly, so running
/// effects never keep it alive.
public protocol EffectQueueHost<Action>: Actor {
    /// The machine's action type.
    associatedtype Action: Sendable

    /// Sends `action`, produced by a running effect, through the machine, with the manager's
    /// ``EffectQueueManager/SendOptions/tracksFeedbacks`` set to `tracksFeedbacks`, and returns
    /// what the manager's ``EffectQueueManager/finishSend()`` returned. The manager never waits
    /// for it (with `tracksFeedbacks`, the effects joined the group the first send's task waits
    /// for), so a host sets ``EffectQueueManager/SendOptions/returnsTask`` to `false` and
    /// returns `nil`.
    ///
    /// Run the action at once, within this call, and send nothing else through the manager
    /// meanwhile: the manager puts the effects started during the call in the group of the
    /// effect that produced `action`.
    func send(effectAction action: Action, tracksFeedbacks: Bool) -> Task<Void, Error>?
}
