@testable import ActomatonHost
import ComputeOffThePool
import Clocks
import Foundation
import Synchronization
import Testing

/// A plugin that misbehaves on command (`Tests/ActomatonHostTestFixtures/hostile.c`): each
/// misbehaviour gets one clear error, and the host — and every other machine — goes on.
@Suite("A hostile plugin: every misbehaviour is one error, never a crash")
struct HostilePluginTests {
    private func hostile(maxEffects: Int = PluginLimits.defaultMaxEffects, clock: some Clock<Duration> = ContinuousClock(),
                         recorder: Recorder? = nil) throws -> PluginMachine {
        let (path, options) = fixture("fixture_hostile_entry")
        return try PluginMachine(plugin: Plugin.load(path: path, options: options), clock: clock, describesState: true,
                                 observer: recorder?.record, observesSends: true, log: recorder?.log ?? { @Sendable _ in }, maxEffects: maxEffects)
    }

    /// The machine still works after the misbehaviour.
    private func expectUsable(_ machine: PluginMachine, _ value: Int = 7) async throws {
        try await machine.send("describe_mode", [.int(0)])
        try await machine.send("snapshot_mode", [.int(0)])
        try await machine.send("set", [.int(Int64(value))])
        #expect(try await machine.describe() == #"{"value":\#(value)}"#)
    }

    private func describeError(_ machine: PluginMachine) async -> String? {
        await #expect(throws: PluginCallError.self) { try await machine.describe() }?.description
    }

    private func snapshotError(_ machine: PluginMachine) async -> String? {
        await #expect(throws: PluginCallError.self) { try await machine.snapshot() }?.description
    }

    @Test func describeSizesPastTheContractAreErrors() async throws {
        let machine = try hostile()
        try await machine.send("set", [.int(3)])
        let cases: [(Int64, String)] = [
            (1, "plugin hostile: cannot describe the state: the plugin asked for 18446744073709551615 bytes, more than the limit of 16777216"),
            (2, "plugin hostile: cannot describe the state: the plugin asked for 258 bytes after being given the 257 it asked for"),
            (3, "plugin hostile: cannot describe the state: the plugin wrote past the end of the 256-byte buffer it was given"),
            (4, "plugin hostile: cannot describe the state: the plugin asked for 16777217 bytes, more than the limit of 16777216"),
        ]
        for (mode, message) in cases {
            try await machine.send("describe_mode", [.int(mode)])
            #expect(await describeError(machine) == message)
        }
        // At the limit: a 16 MiB description is read whole.
        try await machine.send("describe_mode", [.int(7)])
        #expect(try await machine.describe().utf8.count == PluginLimits.maxDescriptionBytes)
        try await expectUsable(machine)
    }

    @Test func snapshotSizesPastTheContractAreErrors() async throws {
        let machine = try hostile()
        let cases: [(Int64, String)] = [
            (1, "plugin hostile: cannot take a snapshot of the state: the plugin asked for 18446744073709551615 bytes, more than the limit of 67108864"),
            (2, "plugin hostile: cannot take a snapshot of the state: the plugin asked for 258 bytes after being given the 257 it asked for"),
            (3, "plugin hostile: cannot take a snapshot of the state: the plugin wrote past the end of the 256-byte buffer it was given"),
            (4, "plugin hostile: cannot take a snapshot of the state: the plugin asked for 67108865 bytes, more than the limit of 67108864"),
        ]
        for (mode, message) in cases {
            try await machine.send("snapshot_mode", [.int(mode)])
            #expect(await snapshotError(machine) == message)
        }
        try await machine.send("snapshot_mode", [.int(7)])
        #expect(try await machine.snapshot().count == PluginLimits.maxSnapshotBytes)
        try await expectUsable(machine)
    }

    @Test func aBadSnapshotFailsTheReloadAndKeepsTheRunningVersion() async throws {
        let machine = try hostile()
        try await machine.send("set", [.int(9)])
        try await machine.send("snapshot_mode", [.int(2)])
        let (path, options) = fixture("fixture_hostile_entry")
        let error = await #expect(throws: PluginLoadError.self) { try await machine.reload(with: Plugin.load(path: path, options: options)) }
        #expect(error?.description == "\(path): not reloaded, the running version goes on: cannot take a snapshot of the state: "
            + "the plugin asked for 258 bytes after being given the 257 it asked for")
        try await machine.send("snapshot_mode", [.int(0)])
        #expect(try await machine.describe() == #"{"value":9}"#)
    }

    @Test func controlCharactersAndBadUTF8AreEscapedWhenPrinted() async throws {
        let recorder = Recorder()
        let machine = try hostile(recorder: recorder)
        try await machine.send("describe_mode", [.int(5)])
        let description = try await machine.describe()
        #expect(description.hasPrefix(#"{"value":0}"#))
        #expect(TerminalText.escaping(description) == #"{"value":0}\nerror: forged line\u{1B}[2J\u{1B}]0;title\u{7}"#)
        try await machine.send("describe_mode", [.int(6)])
        #expect(try await machine.describe() == #"{"value":0,"bytes":"\xFF\xFE\xC3"}"#)

        let refusal = await #expect(throws: PluginCallError.self) { try await machine.send("fail_with_controls") }
        let line = TerminalText.escaping("error: \(refusal!)")
        #expect(line == #"error: plugin hostile: 'fail_with_controls' failed: no\nerror: forged line\u{1B}[31m red \xFF"#)
        #expect(!line.contains("\n") && !line.contains("\u{1B}"))

        try await machine.send("log_with_controls")
        #expect(recorder.lines.contains(#"log: line one"# + "\r\n" + "error: forged\u{1B}[0m"), "the log function gets the text; the printer escapes it")
        #expect(TerminalText.escaping("line one\r\nerror: forged\u{1B}[0m") == #"line one\r\nerror: forged\u{1B}[0m"#)
    }

    @Test func terminalTextEscapesEveryControl() {
        #expect(TerminalText.escaping("plain text, ünïcödé and emoji 🎉") == "plain text, ünïcödé and emoji 🎉")
        #expect(TerminalText.escaping("a\u{0}b\u{7F}c\u{85}d\u{9B}e") == #"a\u{0}b\u{7F}c\u{85}d\u{9B}e"#)
        #expect(TerminalText.escaping("abc\u{202E}fed\u{2066}") == #"abc\u{202E}fed\u{2066}"#)
        #expect(TerminalText.decoding([0x61, 0xC3, 0xA9, 0x80, 0x62, 0xE2, 0x82]) == #"aé\x80b\xE2\x82"#)
    }

    /// Invisible characters are shown by their codes: a name with one cannot pass for another.
    @Test(arguments: [0x2028, 0x2029, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0xFEFF, 0x00AD, 0x2060, 0x061C] as [UInt32])
    func terminalTextEscapesInvisibleCharacters(code: UInt32) {
        let scalar = Unicode.Scalar(code)!
        let hex = String(code, radix: 16, uppercase: true)
        #expect(TerminalText.escaping("incr\(scalar)ement") == "incr\\u{\(hex)}ement")
        #expect(TerminalText.escaping("\(scalar)") == "\\u{\(hex)}", "at the start of a line too")
    }

    /// The rule: every format character (Cf) and line or paragraph separator (Zl, Zp) is
    /// escaped, and nothing else outside the controls: letters, marks, symbols and spaces
    /// print as they are.
    @Test func terminalTextEscapesEveryFormatCharacterAndSeparator() {
        var escaped = 0
        var wrong: [String] = []
        for code in UInt32(0xA0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(code) else { continue }
            let category = scalar.properties.generalCategory
            let invisible = category == .format || category == .lineSeparator || category == .paragraphSeparator
            if TerminalText.needsEscape(scalar) != invisible { wrong.append("U+\(String(code, radix: 16, uppercase: true)) (\(category))") }
            if invisible { escaped += 1 }
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(20))")
        #expect(escaped > 150, "Unicode has more than 150 format characters; \(escaped) found")
        #expect(TerminalText.escaping("a\u{E0041}b\u{1D173}c\u{600}") == #"a\u{E0041}b\u{1D173}c\u{600}"#, "tags, musical formatting, Arabic number signs")
        #expect(TerminalText.escaping("café 👩‍💻 א") == "café 👩\\u{200D}💻 א", "a zero-width joiner is shown even inside an emoji")
    }

    @Test func aLongMessageIsCutWithANote() async throws {
        let machine = try hostile()
        let error = await #expect(throws: PluginCallError.self) { try await machine.send("fail_long") }
        #expect(error?.description == "plugin hostile: 'fail_long' failed: \(String(repeating: "m", count: 4096)) … (cut at 4096 bytes)")
    }

    @Test func everyNullIsRefused() async throws {
        let recorder = Recorder()
        let machine = try hostile(recorder: recorder)
        let error = await #expect(throws: PluginCallError.self) { try await machine.send("null_requests") }
        #expect(error?.description == "plugin hostile: 'null_requests' failed: the plugin made an invalid request: next_action: the action is NULL; "
            + "its effects were discarded, and its state may have changed")
        #expect(try await machine.describe() == #"{"value":6}"#, "all six NULL requests returned ACTOMATON_INVALID_REQUEST")
        #expect(recorder.lines.contains("log: (NULL)"))
        try await expectUsable(machine)
    }

    @Test func aChangedStateIsNotClaimedUnchanged() async throws {
        let machine = try hostile()
        let error = await #expect(throws: PluginCallError.self) { try await machine.send("change_then_invalid", [.int(1000)]) }
        #expect(error?.description.hasPrefix("plugin hostile: 'change_then_invalid 1000' failed: the plugin made an invalid request: "
            + "next_action: unknown action 'no_such_action' for plugin 'hostile' (its actions: set, describe_mode, ") == true)
        #expect(error?.description.hasSuffix("); its effects were discarded, and its state may have changed") == true)
        #expect(try await machine.describe() == #"{"value":1000}"#)
    }

    @Test func stringArgumentsWithNULOrPastTheLimitAreRefused() async throws {
        let login = try PluginMachine(plugin: Plugin.load(path: plugin("LoginPlugin")))
        let nul = await #expect(throws: PluginCallError.self) { try await login.send("login", [.string("bob\u{0}mallory")]) }
        #expect(nul?.description == "plugin login: argument 1 (user) of 'login' contains a NUL character, which a plugin cannot receive")
        let limit = PluginLimits.maxStringArgumentBytes
        let long = await #expect(throws: PluginCallError.self) { try await login.send("login", [.string(String(repeating: "a", count: limit + 1))]) }
        #expect(long?.description == "plugin login: argument 1 (user) of 'login' is longer than the limit of \(limit) bytes")
        try await login.send("login", [.string(String(repeating: "a", count: limit))])
        #expect(try await login.describe().contains(String(repeating: "a", count: 100)))
    }

    @Test func endlessNextActionChainsAreCutOffAndReported() async throws {
        let recorder = Recorder()
        let machine = try hostile(recorder: recorder)
        try await machine.send("loop")
        #expect(try await machine.describe() == #"{"value":65}"#, "the action and 64 levels of next actions ran")
        let errors = recorder.lines.filter { $0.contains("refused") }
        #expect(errors == ["hostile: loop (next) => refused: 'loop' not run: a chain of next actions went past 64 levels (a loop in the plugin?); the chain was cut off"])

        try await machine.send("set", [.int(0)])
        try await expectUsable(machine)
    }

    /// One action asking for more next actions than a chain may run (`burst` asks for 1,500)
    /// is refused whole, with one line, in this process and in a worker alike: none of them
    /// runs, and the async layer never sees the flood (it used to print a line of its own).
    @Test func tooManyNextActionsFailTheirActionWhole() async throws {
        let line = "plugin hostile: 'burst' failed: the plugin made an invalid request: next_action: one action may request at most 1000 "
            + "next actions, as many as a chain may run; its effects were discarded, and its state may have changed"
        let recorder = Recorder()
        let local = try hostile(recorder: recorder)
        let worker = try PluginMachine(isolatedPluginAt: fixture("fixture_hostile_entry").path,
                                       loadOptions: fixture("fixture_hostile_entry").options,
                                       workerOptions: WorkerOptions(executable: "\(pluginDirectory)/actomaton-host"))
        for machine in [local, worker] {
            try await machine.send("set", [.int(0)])
            let error = await #expect(throws: PluginCallError.self) { try await machine.send("burst") }
            #expect(error?.description == line)
            await machine.waitUntilIdle()
            #expect(try await machine.describe() == #"{"value":0}"#, "no bump ran")
        }
        #expect(!recorder.lines.contains { $0.contains("bump") }, "\(recorder.lines.suffix(3))")
    }

    @Test func effectFanOutStopsAtTheMachineLimit() async throws {
        let clock = TestClock()
        let recorder = Recorder()
        let machine = try hostile(maxEffects: 10, clock: clock, recorder: recorder)
        try await machine.send("spawn")
        #expect(machine.effectBudget.count == 2)
        let limitLine = "'spawn' failed: its delayed and repeating actions would take the machine past its limit of 10 effects running or waiting (--max-effects)"
        for _ in 0..<10 {
            await clock.advance(by: .milliseconds(1))
            for _ in 0..<200 { await Task.yield() }
            #expect(machine.effectBudget.count <= 10)
        }
        #expect(await eventually {
            await clock.advance(by: .milliseconds(1))
            return recorder.lines.contains { $0.contains(limitLine) }
        })
        #expect(machine.effectBudget.count <= 10)
        // The limit is per machine: another machine is not affected.
        let other = try hostile(maxEffects: 10, clock: clock)
        try await other.send("set", [.int(1)])
        #expect(other.effectBudget.count == 0)
    }

    @Test func effectsGiveTheirPlaceBackWhenTheyEnd() async throws {
        let clock = TestClock()
        let counter = try PluginMachine(plugin: Plugin.load(path: plugin("CounterPlugin")), clock: clock, maxEffects: 2)
        try await counter.send("add_later", [.int(1), .float(1)])
        try await counter.send("start", [.int(100)])
        #expect(counter.effectBudget.count == 2)
        let refused = await #expect(throws: PluginCallError.self) { try await counter.send("add_later", [.int(1), .float(1)]) }
        #expect(refused?.reason == .effectLimitReached(action: "add_later 1 1.0", limit: 2))
        await clock.advanceWhenSleeping(by: .seconds(1))
        #expect(await eventually { counter.effectBudget.count == 1 }, "the delayed action completed")
        try await counter.send("stop")
        #expect(await eventually { counter.effectBudget.count == 0 }, "the timer was cancelled")
        try await counter.send("add_later", [.int(1), .float(1)])
        #expect(counter.effectBudget.count == 1)
    }

    @Test func aHostTableCalledAfterDestroyRefusesEveryRequest() async throws {
        let (path, options) = fixture("fixture_hostile_entry")
        let loaded = try Plugin.load(path: path, options: options)
        var first: PluginInstance? = try PluginInstance(plugin: loaded, log: { _ in })
        #expect(try first!.perform(loaded.action("keep_host", [])).get() == [])
        first = nil // destroy
        let second = try PluginInstance(plugin: loaded, log: { _ in })
        #expect(try second.perform(loaded.action("call_kept_host", [])).get() == [])
        #expect(try second.describe() == #"{"value":4}"#, "four requests refused, fail and log ignored, no crash")
    }

    @Test func aPluginThreadCannotSlipRequestsIn() async throws {
        let machine = try hostile()
        try await machine.send("start_thread")
        for value in 0..<300 { try await machine.send("set", [.int(Int64(value))]) }
        // Reload meanwhile (the same library, whose globals hold the thread): the old state is
        // destroyed while the thread may still call its table.
        try await machine.reload(with: machine.plugin)
        try await machine.send("join_thread")
        #expect(try await machine.describe() == #"{"value":0}"#, "no request from the other thread was accepted")
    }

    /// A delayed action that re-arms itself with its own effect ID keeps going: starting the
    /// successor does not cancel it (the effect that sent it has ended).
    @Test func aTimerThatReArmsItselfKeepsFiring() async throws {
        let clock = TestClock()
        let machine = try hostile(clock: clock)
        try await machine.send("set", [.int(0)])
        try await machine.send("rearm")
        for expected in 2...3 {
            await clock.advance(by: .seconds(1))
            #expect(await eventually { await machine.describedState() == #"{"value":\#(expected)}"# }, "tick \(expected)")
        }
        await machine.waitUntilIdle()
        #expect(await machine.runningEffectCount == 0)
    }
}

/// Regression: escaping and decoding took quadratic time (a scalar view copied at each append):
/// a plugin's 1 MiB description of bad bytes held the host for minutes; 16 MiB, for hours.
@Suite("Terminal text: linear in its input")
struct TerminalTextScaleTests {
    @Test func megabytesOfBadBytesAndControlsAreEscapedInLinearTime() async {
        await computeOffThePool {
            let started = ContinuousClock.now
            let bad = [UInt8](repeating: 0xFF, count: 4 << 20)
            let decoded = TerminalText.decoding(bad)
            #expect(decoded.utf8.count == 4 * bad.count)
            #expect(decoded.hasPrefix(#"\xFF\xFF"#))
            let controls = String(repeating: "\u{1B}\n", count: 1 << 20)
            let escaped = TerminalText.escaping(controls)
            #expect(escaped.utf8.count == (6 + 2) << 20)
            #expect(escaped.hasPrefix(#"\u{1B}\n"#))
            #expect(TerminalText.escaping("é\u{2028}x") == #"é\u{2028}x"#)
            // Linear: well under a second; quadratic, hours. The bound leaves room for any load.
            #expect(ContinuousClock.now - started < .seconds(60))
        }
    }
}

/// The library's own `error:` lines go where a server routes them (its logger), counted as before.
@Suite("Host error lines: routed to a sink")
struct HostErrorLinesRoutingTests {
    @Test func aSnapshotThatFailsAfterAnActionIsToldToTheSink() async throws {
        let directory = try temporaryDirectory()
        let journal = try PluginJournal(path: directory + "/state.sqlite", options: JournalOptions(snapshotInterval: 1))
        defer { journal.close() }
        let (path, options) = fixture("fixture_hostile_entry")
        let machine = try PluginMachine(plugin: Plugin.load(path: path, options: options), log: { @Sendable _ in }, journal: journal,
                                        journalName: "hostile/routed")
        let told = Mutex<[String]>([])
        let before = HostErrorLines.count
        HostErrorLines.route { line in told.withLock { $0.append(line) } }
        defer { HostErrorLines.route(to: nil) }
        try await machine.send("snapshot_mode", [.int(1)])
        // Other tests' lines may reach the sink meanwhile: this machine's is the one looked for.
        let lines = told.withLock { $0 }.filter { $0.contains("hostile/routed") }
        #expect(lines.count == 1)
        #expect(lines.first?.hasPrefix("error: plugin hostile/routed: the journal's snapshot after 'snapshot_mode 1' failed: ") == true,
                "\(lines)")
        #expect(HostErrorLines.count > before, "still counted")
    }
}
