import ActomatonCore
import Testing

private enum Step: Equatable, Sendable { case a, b, c, d, loop, fork }

/// Logs every action into the state and feeds back a fixed script.
private let script = MealyReducer<Step, [Step], Void, [Step]> { action, log, _ in
    log.append(action)
    switch action {
    case .a: return [.b, .c]
    case .b: return [.d]
    case .c, .d: return []
    case .loop: return [.loop]
    case .fork: return [.fork, .fork]
    }
}

@Suite("ActionEffectManager")
struct ActionEffectManagerTests {
    @Test func feedbackRunsInOrderDepthFirstWithinOneSend() {
        var machine = MealyMachine(state: [], reducer: script, effectManager: ActionEffectManager())
        let result = machine.send(.a)
        #expect(machine.state == [.a, .b, .d, .c])
        #expect(result == .completed(steps: 4))
        #expect(result.isCompleted)
    }

    @Test func actionWithoutFeedbackIsOneStep() {
        var machine = MealyMachine(state: [], reducer: script, effectManager: ActionEffectManager())
        #expect(machine.send(.c) == .completed(steps: 1))
        #expect(machine.state == [.c])
    }

    @Test func endlessLoopStopsAtTheDepthLimit() {
        var machine = MealyMachine(state: [], reducer: script, effectManager: ActionEffectManager(maxDepth: 5))
        let result = machine.send(.loop)
        // The sent action plus five levels of feedback ran; the sixth level was dropped.
        #expect(result == .depthLimitReached(steps: 6))
        #expect(machine.state == Array(repeating: .loop, count: 6))
    }

    @Test func deepLoopDoesNotUseTheCallStack() {
        var machine = MealyMachine(state: [], reducer: script,
                                   effectManager: ActionEffectManager(maxDepth: 200_000, maxSteps: 200_001))
        #expect(machine.send(.loop) == .depthLimitReached(steps: 200_001))
    }

    @Test func branchingLoopStopsAtTheStepLimit() {
        var machine = MealyMachine(state: [], reducer: script,
                                   effectManager: ActionEffectManager(maxDepth: 1_000, maxSteps: 50))
        #expect(machine.send(.fork) == .stepLimitReached(steps: 50))
        #expect(machine.state.count == 50)
    }

    @Test func zeroDepthAllowsNoFeedback() {
        var machine = MealyMachine(state: [], reducer: script, effectManager: ActionEffectManager(maxDepth: 0))
        #expect(machine.send(.a) == .depthLimitReached(steps: 1))
        #expect(machine.state == [.a])
        #expect(machine.send(.c) == .completed(steps: 1))
    }

    @Test func theNextSendStartsAfreshAfterALimit() {
        var machine = MealyMachine(state: [], reducer: script, effectManager: ActionEffectManager(maxDepth: 3))
        #expect(machine.send(.loop) == .depthLimitReached(steps: 4))
        machine.state = []
        #expect(machine.send(.a) == .completed(steps: 4))
        #expect(machine.state == [.a, .b, .d, .c])
    }
}

/// The same script, returning `Feedback` instead of arrays.
private let inlineScript = MealyReducer<Step, [Step], Void, Feedback<Step>> { action, log, _ in
    log.append(action)
    switch action {
    case .a: return .actions(.b, .c)
    case .b: return .action(.d)
    case .c, .d: return .none
    case .loop: return [.loop]
    case .fork: return Feedback([.b, .c, .d])
    }
}

@Suite("Feedback")
struct FeedbackTests {
    @Test func inlineFeedbackRunsInTheSameOrderAsArrays() {
        var machine = MealyMachine(state: [], reducer: inlineScript, effectManager: ActionEffectManager())
        #expect(machine.send(.a) == .completed(steps: 4))
        #expect(machine.state == [.a, .b, .d, .c])
        machine.state = []
        #expect(machine.send(.loop) == .depthLimitReached(steps: 101))
    }

    @Test func spillsToAnArrayPastTwoActions() {
        var machine = MealyMachine(state: [], reducer: inlineScript, effectManager: ActionEffectManager())
        #expect(machine.send(.fork) == .completed(steps: 5))
        #expect(machine.state == [.fork, .b, .d, .c, .d])
    }

    @Test func collectionAndCombine() {
        let one: Feedback<Step> = .action(.a)
        let two: Feedback<Step> = [.b, .c]
        #expect(Array(Feedback<Step>.none) == [])
        #expect(Array(one) == [.a])
        #expect(Array(two) == [.b, .c])
        #expect(Array(one + two) == [.a, .b, .c])
        #expect(Feedback.none + two == two)
        #expect(Feedback<Step>([.a, .b, .c, .d]).count == 4)
    }

    @Test func composesWithCombine() {
        let first = MealyReducer<Step, Int, Void, Feedback<Step>> { _, n, _ in n += 1; return .action(.c) }
        let second = MealyReducer<Step, Int, Void, Feedback<Step>> { _, n, _ in n *= 10; return .action(.d) }
        var n = 0
        #expect(Array(MealyReducer.combine(first, second).run(.a, &n, ())) == [.c, .d])
        #expect(n == 10)
    }
}
