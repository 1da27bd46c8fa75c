/// The effect manager for pure state machines: the output is `Void` and nothing happens.
///
/// `send` compiles down to the reducer call alone.
public struct NoOpEffectManager<Action>: EffectManager, Sendable {
    /// Creates the manager.
    @inlinable
    public init() {}

    /// Does nothing; never feeds an action back.
    @inlinable
    public func handle(_ output: Void) -> Action? { nil }

    /// Returns nothing.
    @inlinable
    public func finishSend() {}
}
