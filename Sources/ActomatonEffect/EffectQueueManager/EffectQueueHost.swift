/// The actor an ``EffectQueueManager`` sends its effects' next actions to.
///
/// `Actomaton` and `TestMachine` are hosts. The manager holds its host weakly, so running
/// effects never keep it alive.
public protocol EffectQueueHost<Action>: Actor {
    /// The machine's action type.
    associatedtype Action: Sendable

    /// Sends `action`, produced by a running effect, through the machine, and returns the task
    /// of the effects it started (see `Actomaton.send(_:priority:tracksFeedbacks:)`).
    func send(effectAction action: Action, tracksFeedbacks: Bool) -> Task<Void, Error>?
}
