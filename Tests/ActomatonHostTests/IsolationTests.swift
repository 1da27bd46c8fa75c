@testable import ActomatonHost
import Clocks
import Foundation
import Testing

/// Plugins in supervised worker processes: a plugin that crashes, hangs, exits or breaks the
/// protocol takes nothing else with it, and comes back from its last good state.
@Suite("Isolation: plugins in worker processes")
struct IsolationTests {
    /// Worker options with deadlines generous enough for a loaded machine (a worker that must
    /// start, or answer, within 500 ms did not always); a test that expects a plugin to miss its
    /// deadline passes a short one.
    private func options(
        timeout: Duration = .seconds(20), loadTimeout: Duration = .seconds(20), maxRestarts: Int = 5, snapshotInterval: Int = 16
    ) -> WorkerOptions {
        // The restarts' window is an hour: a loaded `make test` took 136 s over three traps of
        // a .wasm plugin, past the default minute, and a worker's restart takes longer.
        WorkerOptions(executable: "\(pluginDirectory)/actomaton-host", actionTimeout: timeout, loadTimeout: loadTimeout,
                      snapshotInterval: snapshotInterval, maxRestarts: maxRestarts, restartWindow: .seconds(3600))
    }

    /// Every way the hostile fixture can fail outright, and how the host says it.
    static let failures: [(how: String, cause: String)] = [
        ("crash", "crashed (SIGSEGV)"),
        ("abort", "crashed (SIGABRT)"),
        ("overflow", "crashed (SIGSEGV)"),
        ("exit_zero", "exited with status 0"),
        ("exit_42", "exited with status 42"),
        ("spin", "did not answer within 500ms and was killed"),
    ]

    private func hostile(_ options: WorkerOptions, entry: String = "fixture_hostile_entry") throws -> PluginMachine {
        try PluginMachine(isolatedPluginAt: plugin("ActomatonHostTestFixtures"), loadOptions: .init(entrySymbol: entry),
                          workerOptions: options, log: { _ in })
    }

    /// A host with an isolated counter at 5 and an isolated hostile plugin at 7.
    private func host(_ options: WorkerOptions) async throws -> (PluginHost, PluginMachine, PluginMachine) {
        let host = PluginHost(log: { _ in }, isolation: .process(options))
        let counter = try await host.load(path: plugin("CounterPlugin"))
        try await counter.send("add", [.int(5)])
        let hostile = try hostile(options)
        try await hostile.send("set", [.int(7)])
        return (host, counter, hostile)
    }

    @Test(arguments: [
        ("crash", "crashed (SIGSEGV)"),
        ("abort", "crashed (SIGABRT)"),
        ("overflow", "crashed (SIGSEGV)"),
        ("exit_zero", "exited with status 0"),
        ("exit_42", "exited with status 42"),
        ("corrupt", "broke the worker protocol (a frame of 2147483647 bytes) and was killed"),
    ])
    func aFailingActionIsRefusedAndTheStateComesBack(action: String, cause: String) async throws {
        let (_, counter, hostile) = try await host(options())
        let error = await #expect(throws: PluginCallError.self) { try await hostile.send(action) }
        #expect(error?.description == "plugin hostile: '\(action)' failed: the plugin \(cause); restarted from its last state")
        #expect(try await hostile.describe() == #"{"value":7}"#, "the state before the failed action")
        try await hostile.send("set", [.int(8)])
        #expect(try await hostile.describe() == #"{"value":8}"#)
        #expect(try await counter.describe() == #"{"count":5}"#, "another plugin is untouched")
    }

    /// `actomaton-worker` runs plugins as `actomaton-host worker` does, without the command line
    /// and the service linked in; it refuses arguments it does not know with one line.
    @Test func theWorkerExecutableRunsIsolatedPlugins() async throws {
        var options = options()
        options.executable = "\(pluginDirectory)/actomaton-worker"
        let counter = try PluginMachine(isolatedPluginAt: plugin("CounterPlugin"), workerOptions: options, log: { _ in })
        try await counter.send("add", [.int(5)])
        #expect(try await counter.describe() == #"{"count":5}"#)
        #expect(await counter.workerProcessID != nil)

        let (status, text) = try await runChild(options.executable, ["worker", "--bogus", "1"])
        #expect(status == 2)
        #expect(text == "actomaton-worker: unexpected argument '--bogus' (a plugin worker, started by actomaton-host; not for users)\n")
    }

    @Test func anEndlessLoopMissesTheDeadlineAndIsKilled() async throws {
        let hostile = try hostile(options(timeout: .milliseconds(300)))
        try await hostile.send("set", [.int(3)])
        let error = await #expect(throws: PluginCallError.self) { try await hostile.send("spin") }
        #expect(error?.description == "plugin hostile: 'spin' failed: the plugin did not answer within 300ms and was killed; restarted from its last state")
        #expect(try await hostile.describe() == #"{"value":3}"#)
    }

    @Test func aWorkerKilledFromOutsideComesBack() async throws {
        let (_, counter, hostile) = try await host(options())
        let pid = try #require(await hostile.workerProcessID)
        #expect(kill(pid, SIGKILL) == 0)
        let error = await #expect(throws: PluginCallError.self) { try await hostile.send("set", [.int(9)]) }
        #expect(error?.description == "plugin hostile: 'set 9' failed: the plugin was killed (SIGKILL); restarted from its last state")
        #expect(try await hostile.describe() == #"{"value":7}"#)
        #expect(await hostile.workerProcessID != pid)
        #expect(try await counter.describe() == #"{"count":5}"#)
    }

    /// A line that a plugin's own thread logs between two actions is passed on at once, not
    /// with the next action: the machine's thread reads the worker while the machine is idle.
    @Test func aLineLoggedBetweenActionsIsPassedOnAtOnce() async throws {
        let recorder = Recorder()
        let hostile = try PluginMachine(isolatedPluginAt: plugin("ActomatonHostTestFixtures"), loadOptions: .init(entrySymbol: "fixture_hostile_entry"),
                                        workerOptions: options(), log: recorder.log)
        try await hostile.send("log_later")
        // The action is answered: its thread logs now, between two actions.
        #expect(kill(try #require(await hostile.workerProcessID), SIGUSR1) == 0)
        #expect(await eventually(within: 30) { recorder.lines == ["log: from a thread, after the action"] })
        try await hostile.send("set", [.int(3)])
        #expect(try await hostile.describe() == #"{"value":3}"#)
        #expect(recorder.lines.count == 1)
    }

    /// Garbage that a plugin's thread writes to the worker's socket between two actions ends
    /// the worker as soon as it comes, and the next action says why.
    @Test func aWorkerThatBreaksTheProtocolBetweenActionsIsStoppedAtOnce() async throws {
        let hostile = try hostile(options())
        try await hostile.send("set", [.int(7)])
        let pid = try #require(await hostile.workerProcessID)
        try await hostile.send("corrupt_later")
        #expect(kill(pid, SIGUSR1) == 0)
        #expect(await eventually(within: 30) { kill(pid, 0) != 0 }, "the worker was stopped while the machine was idle")
        let error = await #expect(throws: PluginCallError.self) { try await hostile.send("set", [.int(8)]) }
        #expect(error?.description == "plugin hostile: 'set 8' failed: the plugin broke the worker protocol (a frame of 2147483647 bytes) "
            + "and was killed; restarted from its last state")
        // The replacement replays `corrupt_later`, whose thread waits for a signal that never comes.
        try await hostile.send("set", [.int(9)])
        #expect(try await hostile.describe() == #"{"value":9}"#)
    }

    @Test func statesAfterTheLastSnapshotAreReplayed() async throws {
        let hostile = try hostile(options(snapshotInterval: 4))
        for value in 1...10 { try await hostile.send("set", [.int(Int64(value))]) }
        _ = await #expect(throws: PluginCallError.self) { try await hostile.send("crash") }
        #expect(try await hostile.describe() == #"{"value":10}"#, "snapshot after 8, then 9 and 10 replayed")
    }

    @Test func aPluginThatKeepsFailingIsStopped() async throws {
        let (_, counter, hostile) = try await host(options(maxRestarts: 2))
        for _ in 0..<2 {
            _ = await #expect(throws: PluginCallError.self) { try await hostile.send("crash") }
        }
        let third = await #expect(throws: PluginCallError.self) { try await hostile.send("crash") }
        #expect(third?.description.hasPrefix("plugin hostile: 'crash' failed: the plugin crashed (SIGSEGV); stopped, it failed 3 times within") == true)
        let after = await #expect(throws: PluginCallError.self) { try await hostile.send("set", [.int(1)]) }
        #expect(after?.description.hasPrefix("plugin hostile: the plugin is stopped: it failed 3 times within") == true)
        try await counter.send("increment")
        #expect(try await counter.describe() == #"{"count":6}"#)
    }

    /// A failure in the entry point or in `create` is a load error for the file; nothing else is harmed.
    @Test(arguments: failures)
    func aFailureWhileLoadingIsALoadError(how: String, cause: String) async throws {
        let (host, counter, _) = try await host(options())
        // Only the plugin that spins is meant to miss its deadline.
        let loading = options(loadTimeout: how == "spin" ? .milliseconds(500) : .seconds(20))
        for step in ["entry", "create"] {
            let error = #expect(throws: PluginLoadError.self) { try hostile(loading, entry: "fixture_\(how)_in_\(step)_entry") }
            #expect(error?.description == "\(plugin("ActomatonHostTestFixtures")): the plugin's worker process \(cause) while loading it",
                    "\(how) in \(step)")
        }
        #expect(await host.names == ["counter"])
        #expect(try await counter.describe() == #"{"count":5}"#)
    }

    @Test func aCrashingReplacementKeepsTheRunningVersion() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/counter.so"
        try install(plugin("CounterPlugin"), at: path)
        let host = PluginHost(log: { _ in }, isolation: .process(options()))
        _ = await host.scan(directory: directory)
        let counter = try await host.machine(named: "counter")
        try await counter.send("add", [.int(5)])
        // The new file is not a plugin the worker can load: the running version goes on.
        try install(plugin("ActomatonHostTestFixtures"), at: path)
        let events = await host.scan(directory: directory)
        #expect(events.map(\.description) == ["error: \(path): no entry symbol `actomaton_plugin_entry`: this shared library is not an Actomaton plugin"])
        try await counter.send("increment")
        #expect(try await counter.describe() == #"{"count":6}"#)
        // A good replacement is reloaded, in a new worker, with the state.
        let before = await counter.workerProcessID
        try install(plugin("CounterPlugin"), at: path)
        #expect(await host.scan(directory: directory).map(\.description) == ["reloaded plugin counter 1.0.0 from \(path) (was 1.0.0), state carried over"])
        #expect(try await counter.describe() == #"{"count":6}"#)
        #expect(await counter.workerProcessID != before)
    }

    /// A failure in `snapshot` during a reload: the reload is refused, and the running
    /// version comes back from its last good state.
    @Test(arguments: zip(failures, 8...13))
    func aSnapshotFailureDuringAReloadKeepsTheRunningVersion(failure: (how: String, cause: String), mode: Int) async throws {
        let hostile = try hostile(options(timeout: failure.how == "spin" ? .milliseconds(500) : .seconds(20)))
        try await hostile.send("set", [.int(4)])
        try await hostile.send("snapshot_mode", [.uint(UInt64(mode))])
        let error = await #expect(throws: PluginLoadError.self) { try await hostile.reload(fromFile: plugin("ActomatonHostTestFixtures")) }
        #expect(error?.description.contains("not reloaded, the running version goes on: the snapshot failed: the plugin \(failure.cause); restarted from its last state") == true,
                "\(failure.how): \(error?.description ?? "no error")")
        #expect(try await hostile.describe().hasPrefix(#"{"value":4"#))
    }

    /// A machine whose transitions carry the state has it answered with each action: one round
    /// trip with the worker, not two (three with active nodes); the description is the state
    /// the action left, refused or not, and is had once.
    @Test(arguments: [("fixture_hostile_entry", false), ("fixture_diagram_entry", true)])
    func anActionAndTheStateItLeavesTakeOneRoundTrip(entry: String, namesActiveNodes: Bool) throws {
        let (path, loadOptions) = fixture(entry)
        let instance = try IsolatedInstance.start(path: path, loadOptions: loadOptions, options: options(), log: { _ in })
        #expect(instance.plugin.manifest.namesActiveNodes == namesActiveNodes)
        // Without: a round trip for each call.
        // Values past the diagram fixture's special cases: its active node is "value N".
        _ = try instance.perform(instance.plugin.action("set", [.int(20)])).get()
        #expect(try instance.describe().hasPrefix(#"{"value":20"#))
        _ = try instance.activeNodes()
        #expect(instance.roundTrips == (namesActiveNodes ? 3 : 2))

        instance.prefetchesDescriptions = true
        for value in 21...23 {
            _ = try instance.perform(instance.plugin.action("set", [.int(Int64(value))])).get()
            #expect(try instance.describe().hasPrefix(#"{"value":\#(value)"#))
            if namesActiveNodes { #expect(try instance.activeNodes() == ["value \(value)"]) }
        }
        #expect(instance.roundTrips == (namesActiveNodes ? 6 : 5))
        // Had once: asked again, the description is a round trip of its own.
        #expect(try instance.describe().hasPrefix(#"{"value":23"#))
        #expect(instance.roundTrips == (namesActiveNodes ? 7 : 6))
        guard !namesActiveNodes else { return }
        // A refused action that changed the state: the description is the state it left.
        #expect(throws: PluginCallError.Reason.self) { try instance.perform(instance.plugin.action("change_then_invalid", [.int(8)])).get() }
        #expect(try instance.describe() == #"{"value":8}"#)
        #expect(instance.roundTrips == 7)
    }

    /// A worker that fails while it describes the state an action left: the action stands (it
    /// was answered), and the description says how the worker failed and came back, from the
    /// state the action left; the next action is described again.
    @Test(arguments: zip(failures, 8...13))
    func aWorkerThatFailsDescribingTheStateKeepsTheAction(failure: (how: String, cause: String), mode: Int) async throws {
        let (path, loadOptions) = fixture("fixture_hostile_entry")
        let machine = try PluginMachine(isolatedPluginAt: path, loadOptions: loadOptions,
                                        workerOptions: options(timeout: failure.how == "spin" ? .milliseconds(500) : .seconds(20)),
                                        describesState: true, log: { _ in })
        try await machine.send("set", [.int(4)])
        let pid = try #require(await machine.workerProcessID)
        let transition = try await machine.send("describe_mode", [.uint(UInt64(mode))])
        guard case let .failure(error)? = transition.state else {
            Issue.record("\(failure.how): the state was described: \(String(describing: transition.state))")
            return
        }
        #expect(error.description == "plugin hostile: the description failed: the plugin \(failure.cause); restarted from its last state")
        #expect(await machine.workerProcessID != pid)
        // The replayed state describes the same way; set back, the state is the one before.
        let reset = try await machine.send("describe_mode", [.uint(0)])
        #expect(try reset.state?.get() == #"{"value":4}"#)
        #expect(try await machine.send("set", [.int(5)]).state?.get() == #"{"value":5}"#)
    }

    /// A worker that fails describing the state an action left is rebuilt at once, the action
    /// included, and the snapshot due after the action is taken from the rebuilt one: replays
    /// stay as short as the snapshot interval makes them (a review found the snapshot skipped,
    /// and each rebuild replaying more actions than the last).
    @Test func aWorkerThatFailsDescribingStillTakesItsSnapshots() throws {
        let (path, loadOptions) = fixture("fixture_hostile_entry")
        let instance = try IsolatedInstance.start(path: path, loadOptions: loadOptions,
                                                  options: options(maxRestarts: 100, snapshotInterval: 1), log: { _ in })
        instance.prefetchesDescriptions = true
        _ = try instance.perform(instance.plugin.action("set", [.int(4)])).get()
        #expect(try instance.describe() == #"{"value":4}"#)
        let pid = try #require(instance.workerProcessID)
        _ = try instance.perform(instance.plugin.action("describe_mode", [.uint(8)])).get()
        #expect(instance.workerProcessID != pid, "rebuilt at once")
        #expect(instance.actionsSinceSnapshot == 0, "the snapshot due after the action was taken")
        let error = #expect(throws: PluginCallError.Reason.self) { try instance.describe() }
        #expect(error?.description == "the description failed: the plugin crashed (SIGSEGV); restarted from its last state")
        for value in 5...8 {
            _ = try instance.perform(instance.plugin.action("set", [.int(Int64(value))])).get()
            #expect(instance.actionsSinceSnapshot == 0)
        }
        // The fixture's snapshot keeps the value alone: restored from one, it describes again.
        #expect(try instance.describe() == #"{"value":8}"#)
    }

    /// A journal replayed into a worker rebuilds the state without describing each one on the
    /// way: a state whose description fails does not fail the replay of the next action.
    @Test func aReplayDoesNotDescribeTheStatesOnTheWay() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (path, loadOptions) = fixture("fixture_hostile_entry")
        func machine(_ journal: PluginJournal) throws -> PluginMachine {
            try PluginMachine(isolatedPluginAt: path, loadOptions: loadOptions, workerOptions: options(), describesState: true,
                              log: { _ in }, journal: journal)
        }
        do {
            let journal = try PluginJournal(path: directory + "/state.sqlite")
            let first = try machine(journal)
            try await first.send("set", [.int(3)])
            _ = try await first.send("describe_mode", [.uint(9)]) // its description aborts the worker
            try await first.send("describe_mode", [.uint(0)])
            try await first.send("set", [.int(4)])
            journal.close()
        }
        let journal = try PluginJournal(path: directory + "/state.sqlite")
        defer { journal.close() }
        let second = try machine(journal)
        #expect(try await second.recover() == [])
        #expect(try await second.describe() == #"{"value":4}"#)
        #expect(try await second.send("set", [.int(5)]).state?.get() == #"{"value":5}"#)
    }

    @Test func effectsWorkThroughAWorker() async throws {
        let recorder = Recorder()
        let counter = try PluginMachine(isolatedPluginAt: plugin("CounterPlugin"), workerOptions: options(), observer: recorder.record, observesSends: true)
        try await counter.send("add_later", [.int(2), .float(0.001)])
        await counter.waitUntilIdle()
        #expect(try await counter.describe() == #"{"count":2}"#)
        #expect(recorder.lines.last == "counter: add 2 (delayed)")
    }

    @Test func noWorkerOutlivesTheHost() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try install(plugin("CounterPlugin"), at: directory + "/counter.so")
        try install(plugin("TicTacToePlugin"), at: directory + "/tictactoe.so")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "\(pluginDirectory)/actomaton-host")
        process.arguments = ["serve", "--plugins", directory]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        // Both plugins are loaded once two lines came out.
        var seen = ""
        while seen.split(separator: "\n").count < 2 {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            seen += String(decoding: data, as: UTF8.self)
        }
        // Children of every thread of the host (workers are started from the machines' threads).
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/task")
        let children = tasks.flatMap { task in
            ((try? String(contentsOfFile: "/proc/\(process.processIdentifier)/task/\(task)/children", encoding: .utf8)) ?? "")
                .split(separator: " ").compactMap { Int32($0) }
        }
        #expect(children.count == 2, "one worker per plugin: \(seen)")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        for child in children {
            #expect(await eventually { kill(child, 0) != 0 || isZombie(child) }, "worker \(child) ended with the host")
        }
        try? input.fileHandleForWriting.close()
    }

    /// Regression: a machine's pending timers were bounded by count only — 10,000 of them could
    /// each hold a 1 MiB string. What they carry is now bounded too
    /// (`PluginLimits.maxPendingEffectBytes`), alike in process and in a worker: at the limit
    /// taken, one byte past refused with one line, and a timer that fires gives its bytes back.
    @Test(arguments: [false, true]) func pendingTimersHaveAByteLimitInBothRuntimes(inWorker: Bool) async throws {
        let clock = TestClock()
        let (path, loadOptions) = fixture("fixture_hostile_entry")
        let machine = inWorker
            ? try PluginMachine(isolatedPluginAt: path, loadOptions: loadOptions, workerOptions: options(timeout: .seconds(60)), clock: clock, log: { _ in })
            : try PluginMachine(plugin: Plugin.load(path: path, options: loadOptions), clock: clock, log: { _ in })
        // Each `hoard 16 1048567` asks for 16 timers of "keep_text" (9 bytes) and a string:
        // 16 × 1,048,576 = 16 MiB; four of them, 64 MiB, the limit.
        #expect(PluginLimits.maxPendingEffectBytes == 64 << 20)
        let (count, size): (Int64, Int64) = (16, 1_048_567)
        for round in 0..<2 {
            for _ in 0..<4 { try await machine.send("hoard", [.int(count), .int(size)]) }
            #expect(machine.effectBudget.bytes == PluginLimits.maxPendingEffectBytes && machine.effectBudget.count == 64)
            let past = await #expect(throws: PluginCallError.self) { try await machine.send("hoard", [.int(1), .int(0)]) }
            #expect(past?.description == "plugin hostile: 'hoard 1 0' failed: the plugin made an invalid request: the machine's delayed and "
                    + "repeating actions may carry at most 67108864 bytes of names and strings at once, and these would take them to 67108873; "
                    + "its effects were discarded, and its state may have changed")
            #expect(machine.effectBudget.bytes == PluginLimits.maxPendingEffectBytes, "round \(round): the refused action holds nothing")
            // The hour passes: every timer fires, and its bytes are given back.
            await clock.advance(by: .seconds(3600))
            await machine.waitUntilIdle()
            #expect(machine.effectBudget.bytes == 0 && machine.effectBudget.count == 0, "round \(round)")
        }
        await machine.close()
    }
}

/// Whether `pid` is a process that ended but was not reaped (its parent died: init reaps it soon).
private func isZombie(_ pid: Int32) -> Bool {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
    return status.contains(") Z ")
}
