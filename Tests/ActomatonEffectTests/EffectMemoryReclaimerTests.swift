@testable import ActomatonEffect
import Synchronization
import Testing

/// The reclaimer hands memory back once a burst of effects is over, not during it, and not
/// after a trickle; its limits clamp.
@Suite struct EffectMemoryReclaimerTests {
    /// Counts the trims of a reclaimer of its own (not the process's).
    final class Trims: Sendable {
        let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }
    }

    func reclaimer(minimumBurst: Int = 100, trims: Trims) -> EffectMemoryReclaimer {
        EffectMemoryReclaimer(
            configuration: .init(minimumBurst: minimumBurst, settleDelay: .milliseconds(1)),
            trim: { trims.count.add(1, ordering: .relaxed) }
        )
    }

    @Test func aBurstThatEndsIsTrimmedTwice() async {
        let trims = Trims()
        let reclaimer = reclaimer(trims: trims)
        for _ in 0..<150 { reclaimer.effectBegan() }
        for _ in 0..<150 { reclaimer.effectEnded() }
        await waitUntil { trims.value == 2 }
        #expect(trims.value == 2)
        #expect(reclaimer.trimCount == 2)
        #expect(reclaimer.effectsInFlight == 0)
    }

    @Test func effectsStillInFlightHoldTheTrimBack() async {
        let trims = Trims()
        let reclaimer = reclaimer(trims: trims)
        for _ in 0..<150 { reclaimer.effectBegan() }
        // The first 100 arm it; 50 in flight is more than a sixteenth of the burst.
        for _ in 0..<100 { reclaimer.effectEnded() }
        // Armed: with 50 in flight (more than a sixteenth of the burst) it looks, and waits.
        #expect(reclaimer.effectsInFlight == 50)
        await waitUntil { reclaimer.lookCount >= 3 }
        #expect(reclaimer.lookCount >= 3)
        #expect(trims.value == 0)
        for _ in 0..<50 { reclaimer.effectEnded() }
        await waitUntil { trims.value >= 1 }
        #expect(trims.value >= 1)
    }

    @Test func aTrickleBelowTheMinimumBurstIsNeverTrimmed() async {
        let trims = Trims()
        let reclaimer = reclaimer(minimumBurst: 1_000, trims: trims)
        for _ in 0..<999 {
            reclaimer.effectBegan()
            reclaimer.effectEnded()
        }
        // Not armed: no thread was even started, so nothing can trim later.
        #expect(trims.value == 0)
        #expect(reclaimer.isArmed == false)
        // The 1,000th arms it (and it may already have trimmed and waited for the next burst).
        reclaimer.effectBegan()
        reclaimer.effectEnded()
        #expect(reclaimer.isArmed || reclaimer.trimCount > 0)
    }

    @Test func aDisabledReclaimerNeverArms() {
        let trims = Trims()
        let reclaimer = reclaimer(trims: trims)
        reclaimer.configuration.isEnabled = false
        for _ in 0..<1_000 { reclaimer.effectBegan() }
        for _ in 0..<1_000 { reclaimer.effectEnded() }
        #expect(reclaimer.isArmed == false)
        #expect(trims.value == 0)
    }

    /// An effect a shut-down runtime refuses gets no task, and is not left counted in flight.
    @Test func anEffectRefusedAfterShutDownIsNotLeftInFlight() {
        let reclaimer = EffectMemoryReclaimer(configuration: .init(isEnabled: false), trim: {})
        var manager = EffectQueueManager<Int>(
            clock: ManualClock(), randomSeed: 1, maxFeedbackDepth: 100, reclaimer: reclaimer, onFailure: { _ in }
        )
        manager.shutDown()
        _ = manager.handle(Effect<Int> { nil })
        #expect(manager.finishSend() == nil)
        #expect(reclaimer.effectsCreated == 1)
        #expect(reclaimer.effectsInFlight == 0)
    }

    @Test func theConfigurationIsClampedToItsLimits() {
        #expect(EffectMemoryReclaimer.Configuration(minimumBurst: 16).minimumBurst == 16)
        #expect(EffectMemoryReclaimer.Configuration(minimumBurst: 15).minimumBurst == 16)
        #expect(EffectMemoryReclaimer.Configuration(minimumBurst: 1_000_000_000).minimumBurst == 1_000_000_000)
        #expect(EffectMemoryReclaimer.Configuration(minimumBurst: 1_000_000_001).minimumBurst == 1_000_000_000)
        #expect(EffectMemoryReclaimer.Configuration(minimumBurst: .min).minimumBurst == 16)
        #expect(EffectMemoryReclaimer.Configuration(settleDelay: .milliseconds(1)).settleDelay == .milliseconds(1))
        #expect(EffectMemoryReclaimer.Configuration(settleDelay: .microseconds(999)).settleDelay == .milliseconds(1))
        #expect(EffectMemoryReclaimer.Configuration(settleDelay: .seconds(-5)).settleDelay == .milliseconds(1))
        #expect(EffectMemoryReclaimer.Configuration(settleDelay: .seconds(3600)).settleDelay == .seconds(3600))
        #expect(EffectMemoryReclaimer.Configuration(settleDelay: .seconds(3601)).settleDelay == .seconds(3600))
        #expect(EffectMemoryReclaimer.Configuration().minimumBurst == 10_000)
        #expect(EffectMemoryReclaimer.Configuration().settleDelay == .milliseconds(100))
    }

    /// Waits, yielding, until `condition` holds; gives up after a generous 60 s (the
    /// expectation after it then fails) rather than hang.
    func waitUntil(_ condition: () -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition(), ContinuousClock.now < deadline { await Task.yield() }
    }
}
