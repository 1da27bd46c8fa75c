@testable import ActomatonHost
import Clocks
import CSQLite
import Foundation
import Testing

/// The journal (`--state`): a restarted host brings every machine back — state, and pending
/// delayed and repeating actions — and refuses a database it cannot trust.
@Suite("Journal: nothing acknowledged is lost")
struct JournalTests {
    private func databasePath() throws -> (String, String) {
        let directory = try temporaryDirectory()
        return (directory, directory + "/state.sqlite")
    }

    /// Runs SQL on the database behind the journal's back (to damage it on purpose).
    private func tamper(_ path: String, _ sql: String) {
        var handle: OpaquePointer?
        #expect(sqlite3_open(path, &handle) == SQLITE_OK)
        #expect(sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK, "\(String(cString: sqlite3_errmsg(handle)))")
        sqlite3_close(handle)
    }

    /// Journals `count` increments of the counter plugin in the file at `path`, and closes it.
    private func journalIncrements(_ count: Int, at path: String) async throws {
        let journal = try PluginJournal(path: path)
        let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
        for _ in 0..<count { try await counter.send("increment") }
        journal.close()
    }

    /// Journals `add 1`, `add 2`, … of the counter plugin, one per amount, in the file at
    /// `path`, and closes it.
    private func journalAdds(_ amounts: ClosedRange<Int64>, at path: String) async throws {
        let journal = try PluginJournal(path: path)
        let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
        for amount in amounts { try await counter.send("add", [.int(amount)]) }
        journal.close()
    }

    /// The first column of the first row `sql` returns in the file at `path`, as an integer.
    private func integer(_ path: String, _ sql: String) -> Int64? {
        var handle: OpaquePointer?
        #expect(sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close(handle) }
        var statement: OpaquePointer?
        #expect(sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, "\(String(cString: sqlite3_errmsg(handle)))")
        defer { sqlite3_finalize(statement) }
        return sqlite3_step(statement) == SQLITE_ROW ? sqlite3_column_int64(statement, 0) : nil
    }

    @Test func stateSurvivesARestart() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let journal = try PluginJournal(path: path)
            let host = PluginHost(journal: journal)
            let counter = try await host.load(path: plugin("CounterPlugin"))
            try await counter.send("add", [.int(5)])
            try await counter.send("increment")
            _ = try? await counter.send("add", [.int(.max)]) // refused: not journaled
            journal.close()
        }
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        #expect(try journal.journaledActions(of: "counter").map(\.text) == ["add 5", "increment"])
        let host = PluginHost(journal: journal)
        let counter = try await host.load(path: plugin("CounterPlugin"))
        #expect(await host.takeJournalReports() == [])
        #expect(try await counter.describe() == #"{"count":6}"#)
        try await counter.send("increment")
        #expect(try journal.journaledActions(of: "counter").map(\.text) == ["add 5", "increment", "increment"])
    }

    /// The journal works the same for plugins in worker processes.
    /// Many machines of one plugin in one journal, each under a name of its own (the service's
    /// `plugin/key`); `forget` drops one machine's records and leaves the others'.
    @Test func machinesJournaledUnderNamesOfTheirOwn() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let counter = try Plugin.load(path: plugin("CounterPlugin"))
        do {
            let journal = try PluginJournal(path: path)
            let a = try PluginMachine(plugin: counter, journal: journal, journalName: "counter/a")
            let b = try PluginMachine(plugin: counter, journal: journal, journalName: "counter/b")
            #expect(a.journalName == "counter/a")
            try await a.send("add", [.int(5)])
            try await b.send("add", [.int(7)])
            try await a.send("increment")
            try await journal.forget("counter/b")
            journal.close()
        }
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        #expect(try journal.summaries().map(\.plugin) == ["counter/a"])
        #expect(try journal.journaledActions(of: "counter/a").map(\.text) == ["add 5", "increment"])
        #expect(try journal.journaledActions(of: "counter").isEmpty)
        let a = try PluginMachine(plugin: counter, journal: journal, journalName: "counter/a")
        #expect(try await a.recover().isEmpty)
        #expect(await a.describedState() == #"{"count":6}"#)
        // Regression: it was 3, the journal's number of its last action, counted across names.
        #expect(await a.sequence == 2, "a's own count of transitions")
        let b = try PluginMachine(plugin: counter, journal: journal, journalName: "counter/b")
        #expect(try await b.recover().isEmpty)
        #expect(await b.describedState() == #"{"count":0}"#, "forgotten")
    }

    /// Each name's count of transitions comes back exactly, with names interleaved, after the
    /// journal pruned the actions before its snapshots, and from a format 1 file (which
    /// numbered them by the journal's last action) brought up to format 2.
    @Test func eachNamesCountOfTransitionsComesBack() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let counter = try Plugin.load(path: plugin("CounterPlugin"))
        do {
            let journal = try PluginJournal(path: path, options: JournalOptions(snapshotInterval: 3))
            let a = try PluginMachine(plugin: counter, journal: journal, journalName: "counter/a")
            let b = try PluginMachine(plugin: counter, journal: journal, journalName: "counter/b")
            for round in 0..<10 {
                try await a.send("increment")
                if round % 3 == 0 { try await b.send("increment") }
            }
            journal.close()
        }
        do {
            let journal = try PluginJournal(path: path)
            #expect(try journal.recovery(for: "counter/a").transitionCount == 10)
            #expect(try journal.recovery(for: "counter/b").transitionCount == 4)
            #expect(try journal.journaledActions(of: "counter/a").count < 10, "pruned")
            let a = try PluginMachine(plugin: counter, journal: journal, journalName: "counter/a")
            #expect(try await a.recover().isEmpty)
            #expect(await a.sequence == 10)
            try await a.send("increment")
            #expect(await a.sequence == 11)
            journal.close()
        }
        do {
            let journal = try PluginJournal(readingAt: path)
            #expect(try journal.recovery(for: "counter/a").transitionCount == 11)
            journal.close()
        }
        // Back to format 1, as an older host wrote it: no counts.
        tamper(path, "DROP TABLE transitions; PRAGMA user_version = 1")
        let lastOfB = try PluginJournal(readingAt: path).recovery(for: "counter/b").actions.last?.sequence ?? 0
        do {
            let journal = try PluginJournal(readingAt: path)
            #expect(try journal.recovery(for: "counter/b").transitionCount == nil, "read only: not upgraded")
            journal.close()
        }
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        #expect(try journal.recovery(for: "counter/b").transitionCount == lastOfB, "numbered on as format 1 numbered it")
        let b = try PluginMachine(plugin: counter, journal: journal, journalName: "counter/b")
        #expect(try await b.recover().isEmpty)
        try await b.send("increment")
        #expect(await b.sequence == UInt64(lastOfB) + 1)
    }

    /// A journal closed and opened again at once was refused ("another actomaton-host is using
    /// this state database") when a child process, forked by another thread at that moment,
    /// still held a copy of the lock's descriptor: closing the descriptor alone does not drop a
    /// `flock` another descriptor of the same open file shares. A copy made with `dup` stands in
    /// for the child's.
    @Test func aReleasedLockIsFreeWhileACopyOfItsDescriptorLives() throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try StateDatabaseFile.lockForWriting(path)
        let copy = dup(first.descriptor)
        defer { close(copy) }
        first.release()
        let second = try StateDatabaseFile.lockForWriting(path)
        second.release()
    }

    /// A commit writes one row per action (format 3): the count of transitions lives in the
    /// name's last action, and gets a row of its own only when actions are pruned. A format 2
    /// file, which wrote that row with every action, keeps its counts and is brought up to format 3.
    @Test func theCountOfTransitionsIsWrittenOnlyWhenActionsArePruned() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let counter = try Plugin.load(path: plugin("CounterPlugin"))
        do {
            let journal = try PluginJournal(path: path, options: JournalOptions(snapshotInterval: 5))
            let a = try PluginMachine(plugin: counter, journal: journal, journalName: "counter/a")
            for _ in 0..<4 { try await a.send("increment") }
            #expect(integer(path, "SELECT count(*) FROM transitions") == 0, "no row of its own before a prune")
            for _ in 0..<8 { try await a.send("increment") }
            journal.close()
        }
        // Snapshots after 5 and 10 actions: the second pruned the actions before the first.
        #expect(integer(path, "SELECT count FROM transitions WHERE plugin = 'counter/a'") == 10)
        #expect(integer(path, "SELECT min(ordinal) FROM actions WHERE plugin = 'counter/a'") == 6)
        #expect(integer(path, "PRAGMA user_version") == 3)
        // Format 2, as an older host wrote it: the count in its own row, kept with every action.
        tamper(path, "UPDATE transitions SET count = 12; PRAGMA user_version = 2")
        do {
            let journal = try PluginJournal(readingAt: path)
            #expect(try journal.recovery(for: "counter/a").transitionCount == 12)
            journal.close()
            #expect(integer(path, "PRAGMA user_version") == 2, "read only: not upgraded")
        }
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        #expect(integer(path, "PRAGMA user_version") == 3)
        let a = try PluginMachine(plugin: counter, journal: journal, journalName: "counter/a")
        #expect(try await a.recover().isEmpty)
        #expect(await a.sequence == 12)
        #expect(await a.describedState() == #"{"count":12}"#)
        try await a.send("increment")
        #expect(try journal.recovery(for: "counter/a").transitionCount == 13)
    }

    @Test func isolatedPluginsComeBackToo() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let options = WorkerOptions(executable: "\(pluginDirectory)/actomaton-host")
        do {
            let journal = try PluginJournal(path: path, options: JournalOptions(snapshotInterval: 4))
            let counter = try await PluginHost(isolation: .process(options), journal: journal).load(path: plugin("CounterPlugin"))
            for amount in 1...6 { try await counter.send("add", [.int(Int64(amount))]) }
            journal.close()
        }
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let counter = try await PluginHost(isolation: .process(options), journal: journal).load(path: plugin("CounterPlugin"))
        #expect(try await counter.describe() == #"{"count":21}"#)
    }

    /// Snapshots every N actions; the journal keeps two snapshots and the actions after the older.
    @Test func snapshotsPruneTheJournal() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let journal = try PluginJournal(path: path, options: JournalOptions(snapshotInterval: 3))
            let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
            for amount in 1...10 { try await counter.send("add", [.int(Int64(amount))]) }
            journal.close()
        }
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let summary = try #require(try journal.summaries().first)
        #expect(summary.plugin == "counter" && summary.lastSnapshot?.sequence == 9)
        #expect(try journal.journaledActions(of: "counter").map(\.sequence) == [7, 8, 9, 10], "the actions after the older snapshot (#6)")
        let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
        #expect(try await counter.describe() == #"{"count":55}"#)
    }

    /// A snapshot `restore` refuses falls back to the older one and a longer replay.
    @Test func aRefusedSnapshotFallsBackToAnOlderOne() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let journal = try PluginJournal(path: path, options: JournalOptions(snapshotInterval: 3))
            let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
            for amount in 1...7 { try await counter.send("add", [.int(Int64(amount))]) }
            journal.close()
        }
        tamper(path, "UPDATE snapshots SET state = x'7B7D7B' WHERE seq = 6")
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let host = PluginHost(journal: journal)
        let counter = try await host.load(path: plugin("CounterPlugin"))
        let reports = await host.takeJournalReports()
        #expect(reports.count == 1 && reports[0].hasPrefix("counter: the journal's snapshot after action #6 (version 1.0.0) was refused: "), "\(reports)")
        #expect(try await counter.describe() == #"{"count":28}"#)
    }

    /// Regression: a replay was checked against the effect limits as a live action is, though
    /// its effects are dropped (the journal re-arms the timers): with the host's total held by
    /// other machines (`--max-effects-total`), the login journaled and acknowledged "cannot be
    /// replayed", and came back logged out. A replay, and its count of effects, are not checked.
    @Test func aReplayIsNotRefusedForTheEffectTotal() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let login = try Plugin.load(path: plugin("LoginPlugin"))
        do {
            // Left running, as by a host that stops without closing its machines.
            let journal = try PluginJournal(path: path)
            let machine = try PluginMachine(plugin: login, clock: TestClock(), journal: journal)
            #expect(try await machine.recover().isEmpty)
            try await machine.send("login", [.string("alice")])
            journal.close()
        }
        // In the restarted host, another machine holds the whole total.
        let total = EffectBudget(limit: 1)
        let other = try PluginMachine(plugin: try Plugin.load(path: plugin("CounterPlugin")), clock: TestClock(), effectTotal: total)
        try await other.send("add_later", [.int(1), .float(3600)])
        #expect(total.count == 1)
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let again = try PluginMachine(plugin: login, clock: TestClock(), effectTotal: total, journal: journal)
        #expect(try await again.recover() == [])
        #expect(await again.describedState() == #"{"phase":"loggingIn","seconds":0,"user":"alice"}"#)
        let rearmed = await again.recoveredTimers.count
        #expect(rearmed == 1 && total.count == 2, "its timer armed again, counted past the total")
        await again.close()
        await other.close()
    }

    /// An action the plugin's vocabulary no longer has is reported, one line, and the rest replays.
    @Test func actionsThatNoLongerMatchAreReported() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await journalAdds(1...3, at: path)
        tamper(path, "UPDATE actions SET action = 'jump' WHERE seq = 2")
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let host = PluginHost(journal: journal)
        let counter = try await host.load(path: plugin("CounterPlugin"))
        #expect(await host.takeJournalReports() == [
            "counter: journaled action #2 'jump 2' (version 1.0.0) cannot be replayed: unknown action 'jump' for plugin 'counter' "
                + "(its actions: increment, decrement, add, reset, add_later, start, stop)",
        ])
        #expect(try await counter.describe() == #"{"count":4}"#)
    }

    /// Regression (audit): an action whose arguments are not the host's coding (`x'ff'`, an
    /// edited database) stopped the whole plugin from loading — "its state cannot be brought
    /// back", then "no plugin named 'counter'" — while an unknown action cost only itself. It
    /// is reported as one that cannot be replayed, and the rest replays.
    @Test func anActionWhoseArgumentsCannotBeReadIsReportedAndTheRestReplays() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await journalAdds(1...3, at: path)
        for blob in ["x'ff'", "x'0205'"] {
            tamper(path, "UPDATE actions SET args = \(blob) WHERE seq = 2")
            let journal = try PluginJournal(path: path)
            let host = PluginHost(journal: journal)
            let counter = try await host.load(path: plugin("CounterPlugin"))
            let reports = await host.takeJournalReports()
            #expect(reports == [
                "counter: journaled action #2 'add (arguments unreadable)' (version 1.0.0) cannot be replayed: \(JournaledAction.unreadableReason)",
            ], "\(blob): \(reports)")
            #expect(try await counter.describe() == #"{"count":4}"#, "\(blob)")
            #expect(try journal.journaledActions(of: "counter").map(\.text) == ["add 1", "add (arguments unreadable)", "add 3"], "\(blob)")
            journal.close()
            withExtendedLifetime(counter) {}
        }
    }

    /// Many actions that no longer match: the first three get a line each, one line counts
    /// the rest.
    @Test func manyActionsThatNoLongerMatchAreSummarised() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let journal = try PluginJournal(path: path)
            let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
            for amount in 1...50 { try await counter.send("add", [.int(Int64(amount))]) }
            journal.close()
        }
        tamper(path, "UPDATE actions SET action = 'jump'")
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let host = PluginHost(journal: journal)
        let counter = try await host.load(path: plugin("CounterPlugin"))
        let reports = await host.takeJournalReports()
        #expect(reports.count == 4, "\(reports)")
        for (index, report) in reports.prefix(3).enumerated() {
            #expect(report.hasPrefix("counter: journaled action #\(index + 1) 'jump \(index + 1)' (version 1.0.0) cannot be replayed: unknown action 'jump'"))
        }
        #expect(reports.last == "counter: 47 more journaled actions, up to #50, cannot be replayed either (50 of 50 in all); `actomaton-host journal` lists them")
        #expect(try await counter.describe() == #"{"count":0}"#)
    }

    /// A long journaled action is cut in its report line.
    @Test func reportLinesAreShort() {
        #expect("short".cut(utf8Bytes: PluginMachine.maxReportedBytes) == "short")
        let long = ("feed \"" + String(repeating: "é", count: 500) + "\"").cut(utf8Bytes: PluginMachine.maxReportedBytes)
        #expect(long.hasSuffix(" … (807 more bytes)"), "\(long.suffix(30))")
        #expect(long.utf8.count < 240)
    }

    /// Delayed and repeating actions pending at shutdown are armed again with the time they
    /// had left; one that came due while the host was down fires at once.
    ///
    /// The journal keeps due times on the wall clock, and the machines run on test clocks: the
    /// timers are minutes long so that the real seconds between the two hosts (tens of them on
    /// a loaded CI machine, which broke this test with 10-second timers) change nothing.
    @Test func pendingTimersSurviveARestart() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let journal = try PluginJournal(path: path)
            let counter = try await PluginHost(clock: TestClock(), journal: journal).load(path: plugin("CounterPlugin"))
            try await counter.send("add_later", [.int(100), .float(1800)])
            try await counter.send("add_later", [.int(1000), .float(3600)])
            try await counter.send("start", [.uint(600_000)])
            journal.close()
            withExtendedLifetime(counter) {}
        }
        // The one-hour one came due while the host was down.
        tamper(path, "UPDATE timers SET due = due - 7200000 WHERE args = x'02E803000000000000'")
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        #expect(try journal.recovery(for: "counter").timers.count == 3)
        let clock = TestClock()
        let counter = try await PluginHost(clock: clock, journal: journal).load(path: plugin("CounterPlugin"))
        await clock.advance(by: .zero)
        #expect(await eventually { (try? await counter.describe()) == #"{"count":1000}"# }, "the overdue one fired at once")
        await clock.advance(by: .seconds(600))
        #expect(await eventually { (try? await counter.describe()) == #"{"count":1001}"# }, "the ticker ticks")
        await clock.advance(by: .seconds(1200))
        #expect(await eventually { (try? await counter.describe()) == #"{"count":1103}"# }, "30 minutes: the delayed add and two more ticks")
        try await counter.send("stop")
        #expect(await eventually { (try? journal.recovery(for: "counter").timers.count) == 0 }, "fired and cancelled timers are forgotten")
    }

    /// Regression: a timer's interval or due time edited in the database was armed as it was.
    /// An interval of 0 fired without end and spun the host; one past what a plugin can ask
    /// for overflowed the next firing's record, which stopped the host (in a cluster, every
    /// host that adopted the instance in turn). Each is one line and dropped; the rest is armed.
    @Test func aJournaledTimerWithImpossibleTimingIsDroppedWithOneLine() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let limit = PluginMachine.maxTimerMilliseconds
        let cases: [(sql: String, why: String)] = [
            ("interval = 0", "its interval, 0 ms, is not from 1 to \(limit) ms"),
            ("interval = -1000", "its interval, -1000 ms, is not from 1 to \(limit) ms"),
            ("interval = \(limit + 1)", "its interval, \(limit + 1) ms, is not from 1 to \(limit) ms"),
            ("interval = 9223372036854775000", "its interval, 9223372036854775000 ms, is not from 1 to \(limit) ms"),
            ("due = -1", "its due time, -1 ms after 1970, is not from 0 to \(limit) ms from now"),
            ("due = 9223372036854775807", "its due time, 9223372036854775807 ms after 1970, is not from 0 to \(limit) ms from now"),
            // Regression (audit): unreadable arguments stopped the whole plugin from loading.
            ("args = x'ff'", JournaledAction.unreadableReason),
            // Regression (audit): a queue policy no host writes was dropped, and the timer armed without its queue.
            ("queue = 'q', policy = 99, max_count = 1", JournaledTimer.unreadableQueueReason),
            ("queue = 'q', policy = 1, max_count = -1", JournaledTimer.unreadableQueueReason),
            ("queue = 'q', policy = 1, max_count = 0", JournaledTimer.unreadableQueueReason),
        ]
        for (sql, why) in cases {
            try? FileManager.default.removeItem(atPath: path)
            do {
                let journal = try PluginJournal(path: path)
                let counter = try await PluginHost(clock: TestClock(), journal: journal).load(path: plugin("CounterPlugin"))
                try await counter.send("start", [.uint(600_000)])
                try await counter.send("add_later", [.int(5), .float(60)])
                journal.close()
                withExtendedLifetime(counter) {}
            }
            tamper(path, "UPDATE timers SET \(sql) WHERE interval IS NOT NULL")
            let journal = try PluginJournal(path: path)
            let host = PluginHost(clock: TestClock(), journal: journal)
            let counter = try await host.load(path: plugin("CounterPlugin"))
            #expect(await host.takeJournalReports() == ["counter: a journaled timer for 'increment' cannot be armed again: \(why)"], "\(sql)")
            #expect(await counter.recoveredTimers.count == 1, "\(sql): the delayed add is armed")
            #expect(await eventually { (try? journal.recovery(for: "counter").timers.count) == 1 }, "\(sql): the bad one is forgotten")
            journal.close()
            withExtendedLifetime(counter) {}
        }
        // At the limits: taken.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let timer = JournaledTimer(key: 1, plugin: "counter", action: "increment", arguments: [], due: now + limit, interval: limit, options: .init())
        #expect(PluginMachine.unusableTiming(of: timer, now: now) == nil)
        #expect(PluginMachine.unusableTiming(of: JournaledTimer(key: 1, plugin: "counter", action: "increment", arguments: [], due: 0, interval: 1,
                                                                options: .init()), now: now) == nil)
    }

    /// Regression: a count of transitions edited below zero was taken as 0 without a word, and
    /// the numbers clients had been given came again. It is one line.
    @Test func aNegativeCountOfTransitionsIsReported() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await journalIncrements(3, at: path)
        tamper(path, "INSERT OR REPLACE INTO transitions (plugin, count) VALUES ('counter', -5); UPDATE actions SET ordinal = -5")
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let host = PluginHost(journal: journal)
        let counter = try await host.load(path: plugin("CounterPlugin"))
        #expect(await host.takeJournalReports() == [
            "counter: the journal's count of its transitions is -5, which no host writes; its next transition is numbered 1, "
                + "and numbers a client was already given may come again",
        ])
        #expect(try await counter.describe() == #"{"count":3}"#)
    }

    /// Regression (audit, in a cluster's database; the state file had the same sum): a count
    /// of transitions edited to 2^63 − 1 made the next action's number overflow and crash the
    /// host. At the most a host writes it is read; one past, the plugin is refused with one line.
    @Test func aCountNoHostWritesIsRefusedWithOneLine() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await journalIncrements(3, at: path)
        let limit = JournalRecovery.maxTransitionCount
        tamper(path, "UPDATE actions SET ordinal = \(limit)")
        do {
            let journal = try PluginJournal(path: path)
            defer { journal.close() }
            #expect(try journal.recovery(for: "counter").transitionCount == limit)
        }
        tamper(path, "UPDATE actions SET ordinal = \(Int64.max)")
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let error = await #expect(throws: PluginLoadError.self) { try await PluginHost(journal: journal).load(path: plugin("CounterPlugin")) }
        #expect(error?.description.hasSuffix("the count of transitions of counter is \(Int64.max), past the most a host writes (\(limit))") == true)
        #expect(error?.description.contains("\n") == false)
    }

    @Test func aDatabaseThatCannotBeTrustedIsRefused() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Not SQLite at all.
        try Data("this is not a database, but it is not empty either: \(String(repeating: "x", count: 200))".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: PluginJournalError(.corrupt("it is not a SQLite database"), at: path)) { try PluginJournal(path: path) }
        // Another application's SQLite database.
        try FileManager.default.removeItem(atPath: path)
        tamper(path, "CREATE TABLE notes (text TEXT)")
        #expect(throws: PluginJournalError(.notAStateDatabase, at: path)) { try PluginJournal(path: path) }
        // A newer host's format.
        try FileManager.default.removeItem(atPath: path)
        try PluginJournal(path: path).close()
        tamper(path, "PRAGMA user_version = \(PluginJournal.formatVersion + 1)")
        #expect(throws: PluginJournalError(.newerFormat(found: PluginJournal.formatVersion + 1, supported: PluginJournal.formatVersion), at: path)) {
            try PluginJournal(path: path)
        }
        // Truncated: cut after its first page.
        try FileManager.default.removeItem(atPath: path)
        do {
            let journal = try PluginJournal(path: path, options: JournalOptions(snapshotInterval: 2))
            let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
            for amount in 1...200 { try await counter.send("add", [.int(Int64(amount))]) }
            journal.close()
        }
        tamper(path, "PRAGMA wal_checkpoint(TRUNCATE)")
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: 4096 + 100)
        try handle.close()
        let error = #expect(throws: PluginJournalError.self) { try PluginJournal(path: path) }
        #expect(error?.description.contains("the state database is corrupt") == true, "\(error?.description ?? "")")
    }

    /// Regression (review): a count of transitions no host writes, read from an edited file or
    /// database, reached a watcher as it was: -1 trapped the host that converted it. It is
    /// refused with one line, below 0 and past the most a host writes; at both ends it is read.
    @Test func aTransitionCountNoHostWritesIsRefused() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        try await journalIncrements(3, at: path)
        for (count, refused) in [(Int64(-1), true), (0, false), (JournalRecovery.maxTransitionCount, false), (JournalRecovery.maxTransitionCount + 1, true)] {
            tamper(path, "UPDATE actions SET ordinal = -1; INSERT OR REPLACE INTO transitions (plugin, count) VALUES ('counter', \(count))")
            let journal = try PluginJournal(path: path)
            defer { journal.close() }
            if refused {
                let error = #expect(throws: PluginJournalError.self) { try journal.transitionCount(of: "counter") }
                #expect(error?.description == "\(path): the state database holds a record this host cannot read: the count of transitions of counter is \(count), "
                        + "outside what a host writes (0 to \(JournalRecovery.maxTransitionCount))", "\(error?.description ?? "")")
            } else {
                #expect(try journal.transitionCount(of: "counter") == count)
            }
        }
    }

    /// A transition's message, read back for a watcher, is at most
    /// `JournaledReceipt.maxMessageBytes`: one past it (an edited row) is an error of the
    /// journal, with one line, not read whole and sent to every watcher; one at it is read.
    @Test func aMessagePastItsLimitIsNotRead() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        try await journalIncrements(3, at: path)
        let limit = JournaledReceipt.maxMessageBytes
        tamper(path, "UPDATE actions SET message = '{}'; UPDATE actions SET message = printf('%.*c', \(limit + 1), 'x') WHERE ordinal = 2")
        do {
            let journal = try PluginJournal(path: path)
            defer { journal.close() }
            #expect(try journal.journaledMessages(of: "counter", after: 2, limit: 10).map(\.message) == ["{}"])
            for read in [{ try journal.journaledMessages(of: "counter", after: 0, limit: 10).count },
                         { try journal.journaledMessages(of: "counter", after: 0, orJournaledAfter: 0, limit: 10).count }] {
                let error = #expect(throws: PluginJournalError.self) { _ = try read() }
                #expect(error?.description.hasSuffix("the message of transition 2 of counter is \(limit + 1) bytes, past the limit of \(limit)") == true,
                        "\(error?.description.prefix(300) ?? "")")
            }
        }
        tamper(path, "UPDATE actions SET message = printf('%.*c', \(limit), 'x') WHERE ordinal = 2")
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        #expect(try journal.journaledMessages(of: "counter", after: 0, limit: 10).map(\.message.utf8.count) == [2, limit, 2])
    }

    /// A recovery reads what an edited file holds only within what a host writes: rows were
    /// read whole, however many and however large. The newest
    /// `JournalRecovery.maxSnapshotsRead` snapshots, each at most `PluginLimits.maxSnapshotBytes`
    /// (one past it is an error of the journal, with one line); at most
    /// `JournalRecovery.maxTimers` timers (one more is an error); arguments of at most
    /// `JournaledAction.maxArgumentBytes` (past it, unreadable: reported, not read). Each at
    /// its limit is read.
    @Test func aRecoveryReadsAnEditedFileOnlyWithinItsLimits() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        try await journalIncrements(3, at: path)
        // Hundreds of MB and a million rows: read and written on a thread of their own, not the
        // concurrency pool's.
        func recovery() async throws -> Result<JournalRecovery, PluginJournalError> {
            try await offThePool {
                Result { () throws(PluginJournalError) -> JournalRecovery in
                    let journal = try PluginJournal(path: path)
                    defer { journal.close() }
                    return try journal.recovery(for: "counter")
                }
            }
        }
        func edit(_ sql: String) async throws {
            let failure = try await offThePool { () -> String? in
                var handle: OpaquePointer?
                defer { sqlite3_close(handle) }
                guard sqlite3_open(path, &handle) == SQLITE_OK, sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
                    return String(cString: sqlite3_errmsg(handle))
                }
                return nil
            }
            #expect(failure == nil, "\(failure ?? "")")
        }
        func refusal() async throws -> String {
            guard case let .failure(error) = try await recovery() else { return "read" }
            return error.description
        }
        // Arguments: a string filling them, at the limit and one past.
        for extra in [0, 1] {
            let length = JournaledAction.maxArgumentBytes - 5 + extra
            let lengthBytes = withUnsafeBytes(of: UInt32(length).littleEndian) { $0.map { String(format: "%02x", $0) }.joined() }
            try await edit("UPDATE actions SET args = CAST(x'05' || x'\(lengthBytes)' || printf('%.*c', \(length), 'x') AS BLOB) WHERE seq = 2")
            let action = try #require(try await recovery().get().actions.first { $0.sequence == 2 })
            #expect(action.unreadableArguments == (extra == 1))
            #expect(action.arguments.first.map { if case let .string(text) = $0 { text.utf8.count } else { -1 } } == (extra == 1 ? nil : length))
        }
        try await edit("UPDATE actions SET args = x''")
        // Snapshots: the newest few of ten; the newest at the limit, then one past.
        try await edit("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) "
                       + "INSERT INTO snapshots (plugin, seq, version, state) SELECT 'counter', i, '1', x'00' FROM n")
        #expect(try await recovery().get().snapshots.map(\.sequence) == Array((11 - Int64(JournalRecovery.maxSnapshotsRead))...10).reversed())
        try await edit("UPDATE snapshots SET state = zeroblob(\(PluginLimits.maxSnapshotBytes)) WHERE seq = 10")
        #expect(try await recovery().get().snapshots.first?.bytes.count == PluginLimits.maxSnapshotBytes)
        try await edit("UPDATE snapshots SET state = zeroblob(\(PluginLimits.maxSnapshotBytes + 1)) WHERE seq = 10")
        #expect(try await refusal() == "\(path): the state database holds a record this host cannot read: snapshot #10 of counter is "
                + "\(PluginLimits.maxSnapshotBytes + 1) bytes, more than the \(PluginLimits.maxSnapshotBytes) a plugin's snapshot may have")
        try await edit("DELETE FROM snapshots")
        // Timers: at the limit, then one more.
        try await edit("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(JournalRecovery.maxTimers)) "
                       + "INSERT INTO timers (key, plugin, action, args, due) SELECT i, 'counter', 'increment', x'', 0 FROM n")
        #expect(try await recovery().get().timers.count == JournalRecovery.maxTimers)
        try await edit("INSERT INTO timers (key, plugin, action, args, due) VALUES (\(JournalRecovery.maxTimers + 1), 'counter', 'increment', x'', 0)")
        #expect(try await refusal() == "\(path): the state database holds a record this host cannot read: counter has more than "
                + "\(JournalRecovery.maxTimers) pending timers, more than a host arms for one machine")
    }

    /// Regression: a timer key at the end of the integers (an edited file) made the next
    /// timer's key overflow, and trapped the host. The keys a journal gives are a range (a
    /// cluster host's, 2^32 per run, then the next host's): an action whose timers find none
    /// left fails with one line and is not journaled; an action without timers goes on.
    @Test func anActionWhoseTimersFindNoKeyLeftFailsWithOneLine() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        try await journalIncrements(1, at: path)
        tamper(path, "INSERT INTO timers (key, plugin, action, args, due) VALUES (9223372036854775807, 'other', 'increment', x'', 0)")
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
        let error = await #expect(throws: PluginCallError.self) { try await counter.send("start", [.int(3_600_000)]) }
        #expect(error?.description == "plugin counter: 'start 3600000' failed: the journal has no key left for a new timer (its keys for this host end "
                + "at 9223372036854775806): a cluster host takes new ones when it restarts; a state database whose timers reach the end was edited; "
                + "its effects were discarded, and its state may have changed", "\(error?.description ?? "")")
        try await counter.send("increment")
        #expect(try await counter.describe().contains("2"))
    }

    /// A cluster host's keys are a range of 2^32 per run; the last of them is given, and one
    /// past it fails.
    @Test func theLastTimerKeyOfTheRangeIsGivenAndOnePastItIsNot() async throws {
        final class NarrowKeys: ForwardingJournalStore, @unchecked Sendable {
            override func timerKeys() throws(PluginJournalError.Reason) -> Range<Int64> { 10..<12 }
        }
        let journal = try PluginJournal(store: NarrowKeys(base: SQLiteJournalStore(path: try temporaryDirectory() + "/state.sqlite")))
        defer { journal.close() }
        let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
        for _ in 0..<2 { try await counter.send("start", [.int(3_600_000)]) }
        let error = await #expect(throws: PluginCallError.self) { try await counter.send("start", [.int(3_600_000)]) }
        #expect(error?.description.contains("the journal has no key left for a new timer (its keys for this host end at 11)") == true,
                "\(error?.description ?? "")")
        // The second start's timer (11) is journaled with its action; the first's (10), which
        // it replaced (one ID), ends when its task does, not necessarily by now.
        let keys = try journal.recovery(for: "counter").timers.map(\.key)
        #expect(keys.contains(11) && Set(keys).isSubset(of: [10, 11]), "\(keys)")
        try await counter.send("stop")
    }

    @Test func messages() {
        #expect(PluginJournalError(.newerFormat(found: 2, supported: 1), at: "/s.db").description
            == "/s.db: the state database was written by a newer actomaton-host (format 2; this host reads format 1); refusing to use it")
        #expect(PluginJournalError(.corrupt("it is not a SQLite database"), at: "/s.db").description
            == "/s.db: the state database is corrupt (it is not a SQLite database); refusing to start over it — restore it from a backup, or move it away to start empty")
    }
}
