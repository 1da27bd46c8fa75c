@testable import ActomatonHost
import Clocks
import HostCommandLine
import Foundation
import ActomatonPluginContract
import Testing

@Suite("Plugins on Actomaton: actions through libffi, effects on the EffectQueueManager")
struct PluginMachineTests {
    @Test func inspectPrintsTheManifest() throws {
        let counter = try Plugin.load(path: plugin("CounterPlugin"))
        #expect(counter.manifest.text == """
            plugin counter 1.0.0 (ABI 2)
              A counter, written in plain C
            actions:
              increment()
              decrement()
              add(amount: int64)
              reset()
              add_later(amount: int64, seconds: double)
              start(interval_ms: uint32)
              stop()
            """)
        let login = try Plugin.load(path: plugin("LoginPlugin"))
        #expect(login.manifest.actions.map(\.description) == [
            "login(user: string)", "loginOK()", "logout()", "logoutOK()", "forceLogout()", "tick()",
        ])
    }

    @Test func everyParameterTypeCrossesLibffi() async throws {
        let (path, options) = fixture("fixture_probe_entry")
        let probe = try PluginMachine(plugin: Plugin.load(path: path, options: options), log: { _ in })
        // b + i8 + i16 + u8 + u16 + u64 % 1000 + f * 10 + d * 100 + strlen(s)
        try await probe.send("every_type", [.bool(true), .int(-3), .int(300), .int(200), .int(60000),
                                            .uint(UInt64.max), .float(1.5), .float(2.25), .string("héllo")])
        let expected = 1 - 3 + 300 + 200 + 60000 + Int(UInt64.max % 1000) + 15 + 225 + 6
        #expect(await probe.describedState() == #"{"value":\#(expected),"create_request_status":2}"#)
        // Regression: a decimal past a Float's range reached a `float` parameter as infinity.
        let arguments: [PluginValue] = [.bool(true), .int(0), .int(0), .int(0), .int(0), .uint(0)]
        let past = await #expect(throws: PluginCallError.self) {
            try await probe.send("every_type", arguments + [.float(1e300), .float(0), .string("")])
        }
        #expect(past?.description == "plugin probe: argument 7 (f) of 'every_type' is 1e+300, out of range for float (±3.4028235e+38)",
                "\(past?.description ?? "")")
        try await probe.send("every_type", arguments + [.float(Double(Float.greatestFiniteMagnitude)), .float(1e300), .string("")])
    }

    @Test func statesOfOnePluginAreIndependent() async throws {
        let counter = try Plugin.load(path: plugin("CounterPlugin"))
        let clock = TestClock()
        let first = try PluginMachine(plugin: counter, clock: clock)
        let second = try PluginMachine(plugin: counter, clock: clock)
        try await first.send("add", [.int(2)])
        try await second.send("start", [.int(1000)])
        for _ in 1...3 { await clock.advanceWhenSleeping(by: .seconds(1)) }
        #expect(await eventually { await second.describedState() == #"{"count":3}"# })
        #expect(await first.describedState() == #"{"count":2}"#, "host callbacks are bound per instance")
        try await second.send("stop")
    }

    @Test func delayedAction() async throws {
        let clock = TestClock()
        let recorder = Recorder()
        let counter = try PluginMachine(plugin: Plugin.load(path: plugin("CounterPlugin")), clock: clock,
                                        describesState: true, observer: recorder.record, observesSends: true)
        let effects = try await counter.send("add_later", [.int(4), .float(2)]).effects
        #expect(effects.map(\.description) == ["after 2s: add 4"])
        await clock.advanceWhenSleeping(by: .seconds(1))
        #expect(await counter.describedState() == #"{"count":0}"#)
        await clock.advanceWhenSleeping(by: .seconds(1))
        await counter.waitUntilIdle()
        #expect(await counter.describedState() == #"{"count":4}"#)
        #expect(recorder.lines == [
            #"counter: add_later 4 2.0 => {"count":0}; started after 2s: add 4"#,
            #"counter: add 4 (delayed) => {"count":4}"#,
        ])
    }

    @Test func repeatingActionAndCancellationByID() async throws {
        let clock = TestClock()
        let recorder = Recorder()
        let counter = try PluginMachine(plugin: Plugin.load(path: plugin("CounterPlugin")), clock: clock,
                                        describesState: true, observer: recorder.record, observesSends: true)
        try await counter.send("start", [.int(500)])
        #expect(await counter.runningEffectCount == 1)
        for expected in 1...3 {
            await clock.advanceWhenSleeping(by: .milliseconds(500))
            #expect(await eventually { await counter.describedState() == #"{"count":\#(expected)}"# })
        }
        // Starting again with the same ID replaces the running timer.
        try await counter.send("start", [.int(1000)])
        #expect(await eventually { await counter.runningEffectCount == 1 })
        try await counter.send("stop")
        #expect(await eventually { await counter.runningEffectCount == 0 })
        await clock.advance(by: .seconds(10))
        await counter.waitUntilIdle()
        #expect(await counter.describedState() == #"{"count":3}"#)
        #expect(recorder.lines.first == #"counter: start 500 => {"count":0}; started every 500ms: increment (id ticker)"#)
        #expect(recorder.lines.last == #"counter: stop => {"count":3}; cancelled ticker"#)
    }

    /// A machine with a repeating action is never idle: the wait ends when its task is
    /// cancelled. Regression (review): the wait for the effects' places in the budget ignored
    /// cancellation.
    @Test(.timeLimit(.minutes(10)))
    func waitingUntilIdleEndsWhenCancelled() async throws {
        let clock = TestClock()
        let counter = try PluginMachine(plugin: Plugin.load(path: plugin("CounterPlugin")), clock: clock, describesState: true)
        try await counter.send("start", [.int(500)])
        let waiting = Task { await counter.waitUntilIdle() }
        await clock.advanceWhenSleeping(by: .milliseconds(500))
        #expect(await eventually { await counter.describedState() == #"{"count":1}"# })
        waiting.cancel()
        await waiting.value
        #expect(await counter.runningEffectCount == 1)
        try await counter.send("stop")
        await counter.waitUntilIdle()
        #expect(await counter.runningEffectCount == 0)
    }

    /// The budget's wait for no place to be held ends when its task is cancelled, and a
    /// cancelled waiter is not woken later; the others still are.
    @Test(.timeLimit(.minutes(10)))
    func waitingForAnEmptyBudgetEndsWhenCancelled() async {
        let budget = EffectBudget(limit: 10)
        var token: EffectBudget.Token? = budget.token(bytes: 8)
        let cancelled = Task { await budget.waitUntilEmpty() }
        cancelled.cancel()
        await cancelled.value
        #expect(budget.count == 1)
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let waiting = Task {
            startedContinuation.yield()
            await budget.waitUntilEmpty()
            return budget.count
        }
        for await _ in started { break }
        #expect(token != nil)
        token = nil
        #expect(await waiting.value == 0)
        await budget.waitUntilEmpty()
    }

    /// Regression (review): the shared total was checked when an action asked for effects and
    /// taken only once they started, so machines running at once on other threads could all
    /// pass the check and overshoot it (up to 10,000 effects each). The check now takes the
    /// places; the effects' tokens take them over, and what no effect took goes back.
    @Test func theEffectTotalIsTakenWhenChecked() {
        let total = EffectBudget(limit: 3, byteLimit: 100)
        let (a, b) = (EffectBudget(limit: 10, total: total), EffectBudget(limit: 10, total: total))
        #expect(a.refusal(adding: 1, bytes: 10) == nil)
        #expect(a.refusal(adding: 2, bytes: 20) == nil, "the action's second request: one more place")
        #expect(total.count == 2 && total.bytes == 20)
        #expect(b.refusal(adding: 1, bytes: 10) == nil)
        #expect(b.refusal(adding: 2, bytes: 20) == .effectTotalReached(3), "before: nil, 4 effects past a total of 3")
        #expect(total.count == 3)
        var tokens = [a.token(bytes: 10), a.token(bytes: 10)]
        #expect(total.count == 3 && total.bytes == 30, "the tokens took over a's places")
        a.settle()
        b.settle()
        #expect(total.count == 2 && total.bytes == 20, "b's place, taken for an action that failed, is back")
        // A token made without a check (a timer the journal arms again) takes a new place.
        tokens.append(b.token(bytes: 5))
        #expect(total.count == 3 && total.bytes == 25)
        #expect(b.refusal(adding: 1, bytes: 75) == .effectTotalReached(3))
        tokens.removeAll()
        #expect(total.count == 0 && total.bytes == 0 && a.count == 0 && b.count == 0)
        // The bytes too, and a failed check takes nothing.
        #expect(a.refusal(adding: 1, bytes: 101) != nil)
        #expect(total.count == 0 && total.bytes == 0)
        // A replay is not checked, nor does it take places.
        b.beginReplay()
        #expect(b.refusal(adding: 11, bytes: 1000) == nil)
        b.endReplay()
        #expect(b.refusal(adding: 11, bytes: 1000) == .effectLimitReached(10), "checked again once it ends")
        #expect(total.count == 0 && total.bytes == 0)
    }

    /// The pace of timers' actions (`--max-timer-actions-per-second`): a second's worth at once,
    /// then one slot every `1 s / perSecond`, first come first served; an idle second gives
    /// the burst back, never more.
    @Test func timerActionsArePacedInBurstsOfASecondsWorth() {
        let pace = EffectActionPace(perSecond: 10)
        let start = ContinuousClock.now
        #expect((0..<10).map { _ in pace.delay(now: start) } == Array(repeating: .zero, count: 10), "at the limit: a burst of 10")
        #expect(pace.delay(now: start) == .milliseconds(100), "one past it waits for the next slot")
        #expect(pace.delay(now: start) == .milliseconds(200))
        #expect(pace.delay(now: start + .milliseconds(250)) == .milliseconds(50))
        let later = start + .seconds(10)
        #expect((0..<10).map { _ in pace.delay(now: later) } == Array(repeating: .zero, count: 10), "idle, the burst is back")
        #expect(pace.delay(now: later) == .milliseconds(100), "and no more")
        #expect(EffectActionPace(perSecond: 0).perSecond == 1)
    }

    /// Regression: a repeating action behind by many ticks (the machine busy, its actions
    /// paced) sent every tick it missed at once, a burst that kept the machine behind. It skips
    /// them: one tick now, the next an interval later.
    @Test func aRepeatingActionSkipsTheTicksItMissed() async throws {
        let clock = TestClock()
        let budget = EffectBudget(limit: 10)
        let sequence = TimerSequence(clock: clock, start: clock.now, interval: .seconds(1), element: 1, token: budget.token(bytes: 0), timer: nil,
                                     pace: nil)
        var ticks = sequence.makeAsyncIterator()
        await clock.advance(by: .seconds(10))
        #expect(try await ticks.next() == 1, "the tick due 9 s ago, now")
        let next = Task { [ticks] in
            var ticks = ticks
            _ = try await ticks.next()
            return clock.now
        }
        await clock.advance(by: .milliseconds(999))
        await clock.advance(by: .milliseconds(1))
        #expect(try await next.value == .init(offset: .seconds(11)), "the next, an interval later (before the fix: at once, 8 more behind)")
    }

    /// `close()` cancels every timer at once (the service's DELETE and passivation): nothing
    /// fires afterwards, and the effects of a later action never start.
    @Test func closeCancelsEveryEffect() async throws {
        let clock = TestClock()
        let recorder = Recorder()
        let counter = try PluginMachine(plugin: Plugin.load(path: plugin("CounterPlugin")), clock: clock,
                                        describesState: true, observer: recorder.record, observesSends: true)
        try await counter.send("start", [.int(500)])
        try await counter.send("add_later", [.int(4), .float(2)])
        await clock.advanceWhenSleeping(by: .milliseconds(500))
        #expect(await eventually { await counter.describedState() == #"{"count":1}"# })
        #expect(await counter.runningEffectCount == 2)
        await counter.close()
        #expect(await counter.runningEffectCount == 0)
        await clock.advance(by: .seconds(10))
        await counter.waitUntilIdle()
        #expect(await counter.describedState() == #"{"count":1}"#)
        let later = try await counter.send("add_later", [.int(1), .float(1)])
        #expect(later.effects.map(\.description) == ["after 1s: add 1"], "the action is performed")
        #expect(await counter.runningEffectCount == 0, "its effect never starts")
        await counter.close()
        await clock.advance(by: .seconds(10))
        await counter.waitUntilIdle()
        #expect(await counter.describedState() == #"{"count":1}"#)
        #expect(recorder.lines.count == 4, "start, add_later, one tick, the last add_later: \(recorder.lines)")
    }

    /// The example of the module's overview and of the *Running plugins* article.
    @Test func theArticlesExample() async throws {
        let host = PluginHost()
        let counter = try await host.load(path: plugin("CounterPlugin"))
        let transition = try await counter.send("add", [.int(5)])
        #expect(transition.sequence == 1)
    }

    /// `send` returns the transition: its number, the IDs its cancels found running (regression:
    /// `cancelled ticker` was printed when no effect had that ID), the state's description.
    @Test func sendReturnsTheTransitionWithItsNumberAndWhatItCancelled() async throws {
        let clock = TestClock()
        let counter = try PluginMachine(plugin: Plugin.load(path: plugin("CounterPlugin")), clock: clock, describesState: true)
        let started = try await counter.send("start", [.int(500)])
        #expect(started.sequence == 1 && started.origin == .input && started.cancelled.isEmpty)
        #expect(started.started.map(\.description) == ["every 500ms: increment (id ticker)"])
        #expect(try started.state?.get() == #"{"count":0}"#)
        let stopped = try await counter.send("stop")
        #expect(stopped.sequence == 2 && stopped.cancelled == ["ticker"] && stopped.started.isEmpty)
        #expect(await eventually { await counter.runningEffectCount == 0 })
        let again = try await counter.send("stop")
        #expect(again.sequence == 3)
        #expect(again.effects.map(\.description) == ["cancel: ticker"], "the plugin asked for it")
        #expect(again.cancelled.isEmpty, "but nothing had the ID")
        #expect(try await counter.send("add", [.int(Int64.max)]).sequence == 4)
        await #expect(throws: PluginCallError.self) { try await counter.send("add", [.int(1)]) }
        #expect(try await counter.send("add", [.int(-1)]).sequence == 5, "a failed action takes no number")
        #expect(HostSession.format(again) == #"counter: stop => {"count":0}"#)
    }

    @Test func nextActionIsFedBackWithinTheSameSend() async throws {
        let (path, options) = fixture("fixture_probe_entry")
        let recorder = Recorder()
        let probe = try PluginMachine(plugin: Plugin.load(path: path, options: options), observer: recorder.record, observesSends: true, log: { _ in })
        try await probe.send("chain", [.int(42)])
        #expect(await probe.describedState().hasPrefix(#"{"value":42"#))
        #expect(recorder.lines == ["probe: chain 42; started next: set 42", "probe: set 42 (next)"])
    }

    @Test func queuePolicies() async throws {
        let (path, options) = fixture("fixture_probe_entry")
        let clock = TestClock()
        let recorder = Recorder()
        let probe = try PluginMachine(plugin: Plugin.load(path: path, options: options), clock: clock, observer: recorder.record, observesSends: true, log: { _ in })
        // runOldest(1, discardNew): the second is dropped while the first runs.
        try await probe.send("queued", [.string(""), .int(3), .int(1), .int(100), .int(1)])
        try await probe.send("queued", [.string(""), .int(3), .int(1), .int(100), .int(2)])
        await clock.advanceWhenSleeping(by: .milliseconds(100))
        await probe.waitUntilIdle()
        #expect(await probe.describedState().hasPrefix(#"{"value":1,"#))
        // runNewest(1): the second cancels the first.
        try await probe.send("queued", [.string(""), .int(1), .int(1), .int(100), .int(3)])
        try await probe.send("queued", [.string(""), .int(1), .int(1), .int(100), .int(4)])
        await clock.advanceWhenSleeping(by: .milliseconds(100))
        await probe.waitUntilIdle()
        #expect(await probe.describedState().hasPrefix(#"{"value":4,"#))
        // runOldest(1, suspendNew): both run, one after the other (the second's delay counts
        // from when it was asked for, so it is due when the first completes).
        try await probe.send("queued", [.string(""), .int(2), .int(1), .int(100), .int(5)])
        try await probe.send("queued", [.string(""), .int(2), .int(1), .int(100), .int(6)])
        await clock.advanceWhenSleeping(by: .milliseconds(100))
        await probe.waitUntilIdle()
        #expect(await probe.describedState().hasPrefix(#"{"value":6,"#))
        #expect(recorder.lines.suffix(2) == ["probe: set 5 (delayed)", "probe: set 6 (delayed)"])
        // A bad policy is an invalid request.
        let error = await #expect(throws: PluginCallError.self) { try await probe.send("queued", [.string(""), .int(9), .int(1), .int(1), .int(7)]) }
        #expect(error?.description.contains("queue 'q' has unknown policy 9") == true)
    }

    @Test func loginLogoutWithTimers() async throws {
        let clock = TestClock()
        let login = try PluginMachine(plugin: Plugin.load(path: plugin("LoginPlugin")), clock: clock)
        #expect(await login.describedState() == #"{"phase":"loggedOut","seconds":0}"#)
        try await login.send("login", [.string("alice")])
        #expect(await login.describedState() == #"{"phase":"loggingIn","seconds":0,"user":"alice"}"#)
        await clock.advanceWhenSleeping(by: .seconds(1))
        #expect(await eventually { await login.describedState() == #"{"phase":"loggedIn","seconds":0,"user":"alice"}"# })
        for seconds in 1...2 {
            await clock.advanceWhenSleeping(by: .seconds(1))
            #expect(await eventually { await login.describedState() == #"{"phase":"loggedIn","seconds":\#(seconds),"user":"alice"}"# })
        }
        try await login.send("logout")
        #expect(await login.describedState() == #"{"phase":"loggingOut","seconds":2,"user":"alice"}"#)
        await clock.advanceWhenSleeping(by: .seconds(1))
        await login.waitUntilIdle()
        #expect(await login.describedState() == #"{"phase":"loggedOut","seconds":0}"#)
        #expect(await login.runningEffectCount == 0)
    }

    @Test func forceLogoutCancelsALoginInProgress() async throws {
        let clock = TestClock()
        let recorder = Recorder()
        let login = try PluginMachine(plugin: Plugin.load(path: plugin("LoginPlugin")), clock: clock, observer: recorder.record, observesSends: true)
        try await login.send("login", [.string("bob")])
        await clock.advanceWhenSleeping(by: .milliseconds(500))
        try await login.send("forceLogout")
        await clock.advanceWhenSleeping(by: .seconds(1))
        await login.waitUntilIdle()
        #expect(await login.describedState() == #"{"phase":"loggedOut","seconds":0}"#)
        #expect(!recorder.lines.contains { $0.hasPrefix("login: loginOK") }, "loginOK was cancelled by the shared effect ID")
        let refused = await #expect(throws: PluginCallError.self) { try await login.send("login", [.string("")]) }
        #expect(refused?.description == #"plugin login: 'login ""' failed: the user name must not be empty"#)
        let wrongPhase = await #expect(throws: PluginCallError.self) { try await login.send("logout") }
        #expect(wrongPhase?.description == "plugin login: 'logout' failed: cannot logout while loggedOut")
    }

    @Test func theObserverSeesEveryTransition() async throws {
        let clock = TestClock()
        let recorder = Recorder()
        let plugin = try Plugin.load(path: plugin("CounterPlugin"))
        let counter = try PluginMachine(plugin: plugin, clock: clock, describesState: true, observer: recorder.record, observesSends: true)
        try await counter.send("add", [.int(3)])
        _ = try? await counter.send("add", [.int(.max)])
        try await counter.send("add_later", [.int(1), .float(1)])
        await clock.advanceWhenSleeping(by: .seconds(1))
        await counter.waitUntilIdle()
        #expect(await counter.describedState() == #"{"count":4}"#)
        #expect(recorder.lines == [
            #"counter: add 3 => {"count":3}"#,
            "counter: add 9223372036854775807 => refused: 'add 9223372036854775807' failed: adding that amount would overflow the counter",
            #"counter: add_later 1 1.0 => {"count":3}; started after 1s: add 1"#,
            #"counter: add 1 (delayed) => {"count":4}"#,
        ])
    }

    @Test func csvPlugin() async throws {
        let csv = try PluginMachine(plugin: Plugin.load(path: plugin("CSVTokenizerPlugin")))
        try await csv.send("feed", [.string("name,quote\nalice,\"say \"\"hi\"\"\"\nbob")])
        try await csv.send("byte", [.int(Int64(UInt8(ascii: ",")))])
        try await csv.send("end")
        let description = await csv.describedState()
        #expect(description.contains(#""records":[["name","quote"],["alice","say \"hi\""],["bob",""]]"#))
        #expect(description.contains(#""errors":[]"#))
    }
}
