@testable import ActomatonHost
import ActomatonPluginContract
import Testing

/// The machine's decisions alone, without a plugin: chain limits, numbering, snapshot cadence.
@Suite("PluginMachineStateMachine: the machine's decisions")
struct PluginMachineStateMachineTests {
    private let action = PluginAction(name: "step", arguments: [], index: 0, vocabulary: 0)

    @Test func aChainIsCutOnceAtItsDepthLimitAndTheRestDropped() {
        var decisions = PluginMachineStateMachine(snapshotInterval: nil)
        #expect(decisions.admit(origin: .input, depth: 0, action: action) == .perform)
        for depth in 1...PluginLimits.maxFeedbackDepth {
            #expect(decisions.admit(origin: .next, depth: depth, action: action) == .perform)
        }
        guard case .refuse(.feedbackLimitReached) = decisions.admit(origin: .next, depth: PluginLimits.maxFeedbackDepth + 1, action: action) else {
            Issue.record("the first action past the limit is refused with a reason")
            return
        }
        #expect(decisions.admit(origin: .next, depth: 1, action: action) == .drop, "the rest of the chain is dropped silently")
        #expect(decisions.admit(origin: .delayed(id: nil), depth: 0, action: action) == .perform, "a new chain starts afresh")
        #expect(decisions.admit(origin: .next, depth: 1, action: action) == .perform)
    }

    @Test func aChainIsCutAtItsStepLimit() {
        var decisions = PluginMachineStateMachine(snapshotInterval: nil)
        _ = decisions.admit(origin: .input, depth: 0, action: action)
        for _ in 1...PluginLimits.maxFeedbackSteps {
            #expect(decisions.admit(origin: .next, depth: 1, action: action) == .perform)
        }
        guard case .refuse = decisions.admit(origin: .next, depth: 1, action: action) else {
            Issue.record("one step past the limit is refused")
            return
        }
    }

    @Test func successfulTransitionsAreNumberedAndSnapshotsComeEveryInterval() {
        var decisions = PluginMachineStateMachine(snapshotInterval: 3)
        var steps: [PluginMachineStateMachine.Step] = []
        for succeeded in [true, false, true, true, true, true, true] {
            let step = decisions.performed(succeeded: succeeded)
            steps.append(step)
            if step.snapshot { decisions.snapshotJournaled() }
        }
        #expect(steps.map(\.sequence) == [1, 1, 2, 3, 4, 5, 6])
        #expect(steps.map(\.journal) == [true, false, true, true, true, true, true])
        #expect(steps.map(\.snapshot) == [false, false, false, true, false, false, true])
        decisions.recovered(replayed: 2, sequence: 40)
        #expect(decisions.performed(succeeded: true) == .init(sequence: 41, journal: true, snapshot: true))
    }

    @Test func withoutAJournalNothingIsJournaled() {
        var decisions = PluginMachineStateMachine(snapshotInterval: nil)
        #expect(decisions.performed(succeeded: true) == .init(sequence: 1, journal: false, snapshot: false))
    }

    @Test func aFailedSnapshotIsRetriedAfterTheNextAction() {
        var decisions = PluginMachineStateMachine(snapshotInterval: 2)
        _ = decisions.performed(succeeded: true)
        #expect(decisions.performed(succeeded: true).snapshot)
        decisions.snapshotFailed()
        #expect(decisions.performed(succeeded: true).snapshot)
    }
}
