@testable import ActomatonHost
import HostCommandLine
import Clocks
import CSQLite
import Foundation
import Synchronization
import Testing

@Suite("serve: a directory of plugins, reloaded with their state")
struct ServeTests {
    /// The lines name the version loaded: an operator who drops a new file in sees which one
    /// runs, and which ran before a reload.
    @Test func loadAndReloadLinesNameTheVersions() {
        #expect(PluginHost.Event.loaded(name: "counter", version: "1.0.0", path: "/p/counter.so").description
                == "loaded plugin counter 1.0.0 from /p/counter.so")
        #expect(PluginHost.Event.reloaded(name: "counter", from: "1.0.0", to: "1.1.0", path: "/p/counter.so").description
                == "reloaded plugin counter 1.1.0 from /p/counter.so (was 1.0.0), state carried over")
    }

    @Test func scanLoadsEveryPluginAndReportsBadFilesOnce() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try install(plugin("CounterPlugin"), at: directory + "/counter.so")
        try install(plugin("TicTacToePlugin"), at: directory + "/tictactoe.so")
        try "not a plugin".write(toFile: directory + "/broken.so", atomically: true, encoding: .utf8)
        let host = PluginHost(clock: TestClock())
        let events = await host.scan(directory: directory)
        #expect(events.map(\.description) == [
            "error: \(directory)/broken.so: not a shared library this host can load (it is not an ELF file)",
            "loaded plugin counter 1.0.0 from \(directory)/counter.so",
            "loaded plugin tictactoe 1.0.0 from \(directory)/tictactoe.so",
        ])
        #expect(await host.scan(directory: directory).isEmpty, "a bad file is reported once, until it changes")
        #expect(await host.names == ["counter", "tictactoe"])
        let missing = await host.scan(directory: directory + "/nope")
        #expect(missing.map(\.description) == ["error: \(directory)/nope: cannot read the plugin directory: no such directory"])
        // Regression: a file was said to be no directory at all.
        let file = await host.scan(directory: directory + "/counter.so")
        #expect(file.map(\.description) == ["error: \(directory)/counter.so: cannot read the plugin directory: not a directory"])
    }

    /// Regression: a file whose name is not UTF-8 was looked for under a mangled name — "no
    /// such file", again at every scan. It is skipped, and said so once, its bytes shown.
    @Test func aFileWhoseNameIsNotUTF8IsSkippedOnce() async throws {
        let directory = try temporaryDirectory()
        let counter = try Data(contentsOf: URL(fileURLWithPath: plugin("CounterPlugin")))
        let badPath = (Array(directory.utf8) + Array("/c".utf8) + [0xFF] + Array(".so".utf8) + [0]).map { CChar(bitPattern: $0) }
        let descriptor = open(badPath, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        try #require(descriptor >= 0)
        _ = counter.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        try counter.write(to: URL(fileURLWithPath: directory + "/counter.so"))
        let host = PluginHost(clock: TestClock())
        #expect(await host.scan(directory: directory).map(\.description) == [
            #"error: \#(directory)/c\xFF.so: skipped: its name is not valid UTF-8; rename it to load it"#,
            "loaded plugin counter 1.0.0 from \(directory)/counter.so",
        ])
        #expect(await host.scan(directory: directory).isEmpty, "said once")
    }

    /// What the end of the input means: the session waits until no effect is running or
    /// waiting, so an effect that re-arms itself keeps it waiting, and it returns when the
    /// effect stops (`rearm` re-arms itself twice, a second apart, on the test clock).
    @Test func theEndOfInputWaitsForEffectsThatReArm() async throws {
        let clock = TestClock()
        let (path, options) = fixture("fixture_hostile_entry")
        let host = PluginHost(clock: clock, loadOptions: options)
        let machine = try await host.load(path: path)
        let session = HostSession(host: host, defaultPlugin: machine.name, clock: clock, output: { _ in })
        try await session.handle("rearm", at: "line 1")
        let finished = Mutex(false)
        let end = Task {
            try? await session.finish()
            finished.withLock { $0 = true }
        }
        for value in 2...3 {
            #expect(!finished.withLock { $0 }, "an effect is still waiting")
            await clock.advanceWhenSleeping(by: .seconds(1))
            #expect(await eventually { await machine.describedState() == #"{"value":\#(value)}"# })
        }
        await end.value
        #expect(await machine.runningEffectCount == 0)
        #expect(try await machine.describe() == #"{"value":3}"#)
    }

    @Test func replacedPluginIsReloadedWithItsState() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/counter.so"
        try install(plugin("CounterPlugin"), at: path)
        let clock = TestClock()
        let recorder = Recorder()
        let host = PluginHost(clock: clock, observer: recorder.record, observesSends: true)
        _ = await host.scan(directory: directory)
        try await host.load(path: plugin("TicTacToePlugin"))
        let counter = try await host.machine(named: "counter")
        try await counter.send("add", [.int(41)])
        try await counter.send("start", [.int(1000)])
        let game = try await host.machine(named: "tictactoe")
        try await game.send("place", [.int(0), .int(0)])
        let oldPlugin = counter.plugin

        try install(plugin("CounterPlugin"), at: path) // a new file: a new inode
        #expect(await host.scan(directory: directory).map(\.description) == ["reloaded plugin counter 1.0.0 from \(path) (was 1.0.0), state carried over"])
        #expect(counter.plugin !== oldPlugin)
        #expect(await counter.describedState() == #"{"count":41}"#)
        // The timer started before the reload keeps running, on the new code.
        await clock.advanceWhenSleeping(by: .seconds(1))
        #expect(await eventually { await counter.describedState() == #"{"count":42}"# }, "\(recorder.lines)")
        try await counter.send("stop")
        try await counter.send("increment")
        #expect(await counter.describedState() == #"{"count":43}"#)
        #expect(await game.describedState() == #"{"board":["X..","...","..."],"next":"O","outcome":null}"#)
    }

    @Test func brokenReplacementKeepsTheRunningVersion() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/counter.so"
        try install(plugin("CounterPlugin"), at: path)
        let host = PluginHost()
        _ = await host.scan(directory: directory)
        let counter = try await host.machine(named: "counter")
        try await counter.send("add", [.int(5)])

        try "garbage".write(toFile: path + ".tmp", atomically: true, encoding: .utf8)
        _ = rename(path + ".tmp", path)
        #expect(await host.reloadChangedPlugins().map(\.description) == [
            "error: \(path): not a shared library this host can load (it is not an ELF file)",
        ])
        #expect(await host.reloadChangedPlugins().isEmpty)
        #expect(await counter.describedState() == #"{"count":5}"#)
        try await counter.send("increment")
        #expect(await counter.describedState() == #"{"count":6}"#)

        // Another plugin under the same file name is refused too.
        try install(plugin("LoginPlugin"), at: path)
        #expect(await host.reloadChangedPlugins().map(\.description) == [
            "error: \(path): invalid manifest: the new version is named 'login', not 'counter'",
        ])
        #expect(await counter.describedState() == #"{"count":6}"#)
    }
}

@Suite("serve: keyed instances, `plugin/key`")
struct KeyedInstanceTests {
    /// Each `plugin/key` is a machine of its own, started by its first action; the plugin's own
    /// machine is another. Keys follow the service's rule (at 128 bytes and one past), and the
    /// instances of a plugin stop at the limit (at it and one past).
    @Test func eachKeyIsAMachineOfItsOwnWithinTheLimits() async throws {
        let host = PluginHost(maxInstancesPerPlugin: 3)
        try await host.load(path: plugin("CounterPlugin"))
        let printed = Mutex<[String]>([])
        let session = HostSession(host: host, defaultPlugin: nil, clock: ContinuousClock(), output: { line in printed.withLock { $0.append(line) } })
        let longest = String(repeating: "k", count: InstanceKeyRule.maxLength)
        for (number, line) in ["counter/room-1 add 5", "counter/room.2.add 7", #"{"plugin": "counter/room-1", "action": "increment"}"#,
                               "counter add 1", "counter/\(longest) add 3"].enumerated() {
            try await session.handle(line, at: "x:\(number + 1)")
        }
        #expect(try await host.machine(at: "counter/room-1").describe() == #"{"count":6}"#)
        #expect(try await host.machine(at: "counter/room.2").describe() == #"{"count":7}"#, "the last dot ends the address")
        #expect(try await host.machine(at: "counter").describe() == #"{"count":1}"#)
        #expect(await host.addresses == ["counter", "counter/\(longest)", "counter/room-1", "counter/room.2"])
        try await session.handle(":state", at: "x:6")
        #expect(printed.withLock { $0 } == [#"counter: {"count":1}"#, #"counter/\#(longest): {"count":3}"#,
                                            #"counter/room-1: {"count":6}"#, #"counter/room.2: {"count":7}"#])

        let cases: [(String, String)] = [
            ("counter/\(longest)k add 1", "x:7: 'counter/\(longest)k' is not an instance of a plugin: an instance key is at most 128 bytes, got 129"),
            ("counter/ add 1", "x:7: 'counter/' is not an instance of a plugin: an instance key must not be empty"),
            ("counter/a%b add 1", "x:7: 'counter/a%b' is not an instance of a plugin: an instance key may hold only letters, digits and . _ : - (byte 2 is not one)"),
            ("nothing/a add 1", "x:7: no plugin named 'nothing' is loaded (loaded: counter)"),
            ("counter/room-4 add 1", "x:7: plugin counter already has 3 instances, its limit (--max-instances-per-plugin)"),
        ]
        for (line, message) in cases {
            let error = await #expect(throws: HostLineError.self) { try await session.handle(line, at: "x:7") }
            #expect(error?.description == message)
        }
        #expect(await host.addresses.count == 4, "nothing started by a refused line")
    }

    /// Runs `lines` on the counter plugin with a journal in the file at `path`, waits until
    /// each is journaled, and closes it.
    private func journalLines(_ lines: [String], at path: String) async throws {
        let journal = try PluginJournal(path: path)
        let host = PluginHost(clock: TestClock(), journal: journal)
        try await host.load(path: plugin("CounterPlugin"))
        let session = HostSession(host: host, defaultPlugin: nil, clock: ContinuousClock(), output: { _ in })
        for line in lines { try await session.handle(line, at: "x") }
        try await session.waitUntilAcknowledged(at: "x")
        journal.close()
    }

    /// With a journal, an instance's records are kept under its address (as the network
    /// service keeps them), and a restarted host brings every instance back when its plugin
    /// loads: its state, its count of transitions, and its repeating action, armed again.
    @Test func instancesComeBackFromTheJournalWithTheirTimers() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/state.sqlite"
        try await journalLines(["counter/a add 40", "counter/a start 60000", "counter/b add 2", "counter/b increment"], at: path)
        #expect(try PluginJournal(readingAt: path).summaries().map(\.plugin) == ["counter/a", "counter/b"])
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let clock = TestClock()
        let host = PluginHost(clock: clock, journal: journal)
        try await host.load(path: plugin("CounterPlugin"))
        #expect(await host.addresses == ["counter", "counter/a", "counter/b"], "brought back when the plugin loaded")
        let a = try await host.machine(at: "counter/a")
        #expect(await a.describedState() == #"{"count":40}"#)
        #expect(await a.sequence == 2)
        #expect(await a.runningEffectCount == 1, "the ticker armed again")
        #expect(try await host.machine(at: "counter/b").describe() == #"{"count":3}"#)
        try await a.send("stop")
    }

    /// Regression (audit): a journaled instance that could not be brought back was reported as
    /// if a line had named it (`'counter/…' is not an instance of a plugin: …`), with no word
    /// of the journal it came from.
    @Test func anInstanceTheJournalCannotBringBackIsSaidToComeFromIt() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/state.sqlite"
        try await journalLines(["counter/a add 40", "counter/b add 2"], at: path)
        var handle: OpaquePointer?
        #expect(sqlite3_open(path, &handle) == SQLITE_OK)
        #expect(sqlite3_exec(handle, "UPDATE actions SET plugin = 'counter/b%' WHERE plugin = 'counter/b'", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(handle)
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let host = PluginHost(clock: TestClock(), journal: journal)
        try await host.load(path: plugin("CounterPlugin"))
        #expect(await host.takeJournalReports() == [
            "counter: an instance the journal holds records of is not brought back: 'counter/b%' is not an instance of a plugin: "
                + "an instance key may hold only letters, digits and . _ : - (byte 2 is not one)",
        ])
        #expect(await host.addresses == ["counter", "counter/a"])
    }

    /// A replaced plugin file reloads the plugin's machine and every instance of it, each with
    /// its state.
    @Test func aReplacedPluginReloadsEveryInstance() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/counter.so"
        try install(plugin("CounterPlugin"), at: path)
        let host = PluginHost()
        _ = await host.scan(directory: directory)
        let a = try await host.machine(at: "counter/a")
        let b = try await host.machine(at: "counter/b")
        try await a.send("add", [.int(5)])
        try await b.send("add", [.int(9)])
        let (oldA, oldB) = (a.plugin, b.plugin)

        try install(plugin("CounterPlugin"), at: path) // a new file: a new inode
        #expect(await host.scan(directory: directory).map(\.description) == ["reloaded plugin counter 1.0.0 from \(path) (was 1.0.0), state carried over"])
        #expect(a.plugin !== oldA && b.plugin !== oldB)
        #expect(await a.describedState() == #"{"count":5}"#)
        #expect(await b.describedState() == #"{"count":9}"#)
        #expect(try await host.machine(at: "counter/a") === a, "the same machine, reloaded")
    }
}

@Suite("Input lines: named arguments")
struct NamedArgumentTests {
    @Test func namedArgumentsFollowTheParameters() async throws {
        let host = PluginHost()
        try await host.load(path: plugin("TicTacToePlugin"))
        let session = HostSession(host: host, defaultPlugin: "tictactoe", clock: ContinuousClock(), output: { _ in })
        try await session.handle(#"{"action": "place", "args": {"column": 2, "row": 0}}"#, at: "x:1")
        #expect(try await host.machine(named: "tictactoe").describe() == #"{"board":["..X","...","..."],"next":"O","outcome":null}"#)
        let error = await #expect(throws: HostLineError.self) { try await session.handle(#"{"action": "place", "args": {"row": 0}}"#, at: "x:2") }
        #expect(error?.description == #"x:2: 'place' needs argument "column": place(row: uint8, column: uint8)"#)
    }
}

@Suite("The transition printer: a send's transitions among the machine's own")
struct TransitionPrinterTests {
    private func transition(_ address: String, _ ordinal: UInt64, origin: PluginTransition.Origin = .input) -> PluginTransition {
        let action = PluginAction(name: "step\(ordinal)", arguments: [], index: 0, vocabulary: 0)
        return PluginTransition(plugin: "p", address: address, sequence: ordinal, action: action, origin: origin, outcome: .success([]),
                                cancelled: [], state: nil, acknowledgement: .immediate(action: action, plugin: "p"), ordinal: ordinal)
    }

    /// A send's transitions come back as its value, the machine's timer transitions through
    /// the observer: those made while the send was under way are held and merged by ordinal;
    /// another machine's print at once.
    @Test func heldTransitionsAreMergedInTheOrderTheMachineMadeThem() async throws {
        let printed = Mutex<[String]>([])
        let printer = TransitionPrinter { transition in printed.withLock { $0.append("\(transition.address) \(transition.action.name)") } }
        printer.enqueue(transition("m", 1, origin: .delayed(id: nil)))
        let submission = try await printer.printing(sendTo: "m") { () async throws(PluginCallError) in
            printer.enqueue(transition("m", 4, origin: .repeating(id: "t")))
            printer.enqueue(transition("other", 9, origin: .delayed(id: nil)))
            printer.enqueue(transition("m", 2, origin: .repeating(id: "t")))
            return PluginSubmission(transition: transition("m", 3), feedback: [transition("m", 5, origin: .next)])
        }
        #expect(submission.transition.ordinal == 3)
        await printer.flush()
        #expect(printed.withLock { $0 } == ["m step1", "other step9", "m step2", "m step3", "m step4", "m step5"])
    }

    /// A send that throws prints nothing of its own, and lets go of what it held.
    @Test func aFailedSendReleasesWhatItHeld() async throws {
        let printed = Mutex<[String]>([])
        let printer = TransitionPrinter { transition in printed.withLock { $0.append(transition.action.name) } }
        let refused = PluginCallError(.refused(action: "x", message: "no"), plugin: "p")
        await #expect(throws: PluginCallError.self) {
            try await printer.printing(sendTo: "m") { () async throws(PluginCallError) -> PluginSubmission in
                printer.enqueue(transition("m", 2, origin: .delayed(id: nil)))
                throw refused
            }
        }
        printer.enqueue(transition("m", 3, origin: .delayed(id: nil)))
        await printer.flush()
        #expect(printed.withLock { $0 } == ["step2", "step3"])
    }
}
