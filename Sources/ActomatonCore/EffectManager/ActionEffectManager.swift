/// The effect manager for synchronous feedback: the output is a list of actions, run in order,
/// depth-first, within the same `send`.
///
/// If `.a` outputs `[.b, .c]` and `.b` outputs `[.d]`, one `send(.a)` runs `.a, .b, .d, .c`.
/// A loop that never ends is cut off: an action deeper than ``maxDepth`` feedback levels, or
/// more than ``maxSteps`` transitions in one `send`, stops it, and `send` returns
/// ``FeedbackResult/depthLimitReached(steps:)`` or ``FeedbackResult/stepLimitReached(steps:)``
/// instead of hanging. Feedback is kept on an explicit stack, never the call stack, and that
/// stack's storage is reused from one `send` to the next.
///
/// The output is any bidirectional collection of actions: `[Action]`, or ``Feedback`` where a
/// transition must not build an array (see its documentation).
public struct ActionEffectManager<Output: BidirectionalCollection>: EffectManager {
    /// The actions fed back.
    public typealias Action = Output.Element

    /// How many levels of feedback one `send` may go: `0` allows none.
    public let maxDepth: Int
    /// How many transitions one `send` may run, the sent action included.
    public let maxSteps: Int

    /// The stack of actions waiting to run, each with its feedback depth: `pending` then `top`.
    /// The top lives outside the array, so the common case (a transition feeding back one or two
    /// actions) never touches the array.
    @usableFromInline
    var pending: [(action: Action, depth: Int)] = []
    @usableFromInline
    var top: (action: Action, depth: Int)?
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
    @inlinable @inline(__always)
    public mutating func handle(_ output: Output) -> Action? {
        var index = output.endIndex
        guard index == output.startIndex else {
            if depth >= maxDepth { return stop(.depthLimitReached(steps: steps)) }
            if steps >= maxSteps { return stop(.stepLimitReached(steps: steps)) }
            // The first action runs next without a trip through the stack; the rest wait.
            output.formIndex(before: &index)
            while index != output.startIndex {
                push(output[index], depth: depth + 1)
                output.formIndex(before: &index)
            }
            steps += 1
            depth += 1
            return output[index]
        }
        guard let next = pop() else { return nil }
        if steps >= maxSteps { return stop(.stepLimitReached(steps: steps)) }
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
        top = nil
        pending.removeAll(keepingCapacity: true)
        return nil
    }

    @inlinable
    mutating func push(_ action: Action, depth: Int) {
        if let top { pending.append(top) }
        top = (action, depth)
    }

    @inlinable
    mutating func pop() -> (action: Action, depth: Int)? {
        guard let next = top else { return pending.popLast() }
        top = nil
        return next
    }
}

extension ActionEffectManager: Sendable where Output.Element: Sendable {}
