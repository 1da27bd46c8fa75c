/// The effect manager for synchronous feedback: the output is a list of actions, run in order,
/// depth-first, within the same `send`.
///
/// If `.a` outputs `[.b, .c]` and `.b` outputs `[.d]`, one `send(.a)` runs `.a, .b, .d, .c`.
/// A loop that never ends is cut off: an action deeper than ``maxDepth`` feedback levels, or
/// more than ``maxSteps`` transitions in one `send`, stops it, and `send` returns
/// ``FeedbackResult/depthLimitReached(steps:)`` or ``FeedbackResult/stepLimitReached(steps:)``
/// instead of hanging. Feedback is kept on an explicit stack, never the call stack, and that
/// stack's storage is reused from one `send` to the next.
public struct ActionEffectManager<Action>: EffectManager {
    /// How many levels of feedback one `send` may go: `0` allows none.
    public let maxDepth: Int
    /// How many transitions one `send` may run, the sent action included.
    public let maxSteps: Int

    /// Actions waiting to run, last one first, each with its feedback depth.
    @usableFromInline
    var pending: [(action: Action, depth: Int)] = []
    @usableFromInline
    var depth = 0
    @usableFromInline
    var steps = 1
    @usableFromInline
    var limit: FeedbackResult?

    /// Creates the manager with limits on feedback depth and on transitions per `send`.
    @inlinable
    public init(maxDepth: Int = 100, maxSteps: Int = 10_000) {
        precondition(maxDepth >= 0 && maxSteps >= 1, "ActionEffectManager needs maxDepth >= 0 and maxSteps >= 1")
        self.maxDepth = maxDepth
        self.maxSteps = maxSteps
    }

    /// Queues `output` to run next, in order, and returns the next action to run.
    @inlinable
    public mutating func handle(_ output: [Action]) -> Action? {
        if !output.isEmpty {
            if depth >= maxDepth {
                return stop(.depthLimitReached(steps: steps))
            }
            var index = output.endIndex
            while index > output.startIndex {
                output.formIndex(before: &index)
                pending.append((output[index], depth + 1))
            }
        }
        guard let next = pending.popLast() else { return nil }
        if steps >= maxSteps {
            return stop(.stepLimitReached(steps: steps))
        }
        steps += 1
        depth = next.depth
        return next.action
    }

    /// Returns what the `send` did and resets for the next one.
    @inlinable
    public mutating func finishSend() -> FeedbackResult {
        let result = limit ?? .completed(steps: steps)
        limit = nil
        depth = 0
        steps = 1
        return result
    }

    @inlinable
    mutating func stop(_ result: FeedbackResult) -> Action? {
        limit = result
        pending.removeAll(keepingCapacity: true)
        return nil
    }
}

extension ActionEffectManager: Sendable where Action: Sendable {}
