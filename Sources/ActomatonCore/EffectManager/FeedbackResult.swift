/// What one ``MealyMachine/send(_:)`` on an ``ActionEffectManager`` did.
public enum FeedbackResult: Equatable, Hashable, Sendable {
    /// The action and every action fed back ran; `steps` counts the transitions, the sent action
    /// included.
    case completed(steps: Int)

    /// An action would have fed back deeper than ``ActionEffectManager/maxDepth``; it and every
    /// action still waiting were dropped. The state is the one after the last completed step.
    case depthLimitReached(steps: Int)

    /// ``ActionEffectManager/maxSteps`` transitions ran; the actions still waiting were dropped.
    /// The state is the one after the last completed step.
    case stepLimitReached(steps: Int)

    /// The number of transitions that ran.
    @inlinable
    public var steps: Int {
        switch self {
        case let .completed(steps), let .depthLimitReached(steps), let .stepLimitReached(steps):
            steps
        }
    }

    /// Whether every action fed back ran.
    @inlinable
    public var isCompleted: Bool {
        if case .completed = self { true } else { false }
    }
}
