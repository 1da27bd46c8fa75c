@testable import ActomatonEffect
import Testing

/// Regression (review): a queued sequence with `tracksFeedbacks` kept the task of every action
/// it ever sent until it ended, so a repeating timer in a queue (as a plugin's, which the host
/// sends with `tracksFeedbacks`) held one more task each tick for its whole life. Only the
/// tasks still running are held.
@Suite("DeferredFeedbacks")
struct DeferredFeedbacksTests {
    @Test(.timeLimit(.minutes(5)))
    func tasksThatEndedAreNotHeld() async {
        let feedbacks = DeferredFeedbacks()
        for _ in 0..<1_000 { feedbacks.add(Task {}) }
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let running = Task<Void, Error> { for await _ in gate {} }
        feedbacks.add(running)
        // Waits on an event: each task is dropped as it ends, the last one once the gate opens.
        while feedbacks.runningCount > 1 { await Task.yield() }
        #expect(feedbacks.runningCount == 1)
        let waiting = Task { await feedbacks.waitForAll() }
        open.finish()
        await waiting.value
        #expect(feedbacks.runningCount == 0)
    }

    @Test(.timeLimit(.minutes(5)))
    func cancellingTheWaitCancelsTheTasks() async {
        let feedbacks = DeferredFeedbacks()
        let (never, _) = AsyncStream.makeStream(of: Void.self)
        let running = Task<Void, Error> {
            for await _ in never {}
            try Task.checkCancellation()
        }
        feedbacks.add(running)
        let waiting = Task { await feedbacks.waitForAll() }
        waiting.cancel()
        await waiting.value
        #expect(running.isCancelled)
        #expect(feedbacks.runningCount == 0)
    }

    @Test func waitingWithNothingAddedReturnsAtOnce() async {
        await DeferredFeedbacks().waitForAll()
    }
}
