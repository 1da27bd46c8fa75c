@testable import ActomatonHost
import CSQLite
import Foundation
import Synchronization
import Testing

/// What the journal promises under attack: nothing acknowledged is lost or applied twice, one
/// host per database, a write-ahead log that stays small, files judged before they are written,
/// and a connection that is really closed when `close()` returns.
@Suite("Journal: promises kept under attack")
struct JournalPromiseTests {
    private func databasePath() throws -> (String, String) {
        let directory = try temporaryDirectory()
        return (directory, directory + "/state.sqlite")
    }

    private func size(of path: String) -> Int64? {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : nil
    }

    /// Regression: `close()` stopped the writer but left the connection (and its unfinalized
    /// statements) open until `deinit`; a write from another connection right after could get
    /// `SQLITE_BUSY`. Now the file is free when `close()` returns: another connection can take
    /// it exclusively at once (switching the journal mode needs that), every time — here on four
    /// files at once, while another thread starts child processes without pause (a child holds
    /// copies of the process's descriptors until it execs: the lock must not go with them), and
    /// a journal opened again at once is not refused.
    @Test func closeReleasesTheDatabaseAtOnce() async throws {
        let stop = Mutex(false)
        let spawner = Thread {
            while !stop.withLock({ $0 }) {
                let child = Process()
                child.executableURL = URL(fileURLWithPath: "/bin/true")
                try? child.run()
                child.waitUntilExit()
            }
        }
        spawner.start()
        defer { stop.withLock { $0 = true } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { try await self.closeAndTakeOver(rounds: 30) } }
            try await group.waitForAll()
        }
    }

    /// Regression (audit): of two `close()` calls at once, the second returned at once, while
    /// the first was still committing what was queued. A host stopped by a signal closed its
    /// journal on one thread while its command's end closed it on another, then exited: the
    /// actions acknowledged in the last batch window were lost (2,000 printed, 1,293 restored).
    /// Whichever call returns, the queue is committed and the file free.
    @Test func twoClosesAtOnceBothReturnOnceTheJournalIsClosed() async throws {
        for _ in 0..<5 {
            let (directory, path) = try databasePath()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let journal = try PluginJournal(path: path, options: JournalOptions(sync: .batch, batchWindow: .seconds(60)))
            let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
            for _ in 0..<500 { try await counter.send("add", [.int(1)]) }
            let seen = Mutex<[Int]>([])
            let threads = (0..<2).map { _ in
                Thread {
                    journal.close()
                    let count = (try? PluginJournal(readingAt: path).recovery(for: "counter").actions.count) ?? -1
                    seen.withLock { $0.append(count) }
                }
            }
            threads.forEach { $0.start() }
            #expect(await eventually { seen.withLock { $0.count } == 2 })
            #expect(seen.withLock { $0 } == [500, 500], "each close returned with every action committed")
        }
    }

    /// `closeReleasesTheDatabaseAtOnce` on a file of its own.
    private func closeAndTakeOver(rounds: Int) async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for round in 0..<rounds {
            let journal = try PluginJournal(path: path, options: JournalOptions(sync: .off, snapshotInterval: 3))
            let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
            for amount in 1...10 { try await counter.send("add", [.int(Int64(amount))]) }
            // A reader left mid-way must not keep the file either.
            _ = try journal.summaries()
            journal.close()
            var handle: OpaquePointer?
            #expect(sqlite3_open(path, &handle) == SQLITE_OK)
            sqlite3_busy_timeout(handle, 0)
            let switched = sqlite3_exec(handle, "PRAGMA journal_mode = DELETE; BEGIN IMMEDIATE; CREATE TABLE t\(round) (x); COMMIT; PRAGMA journal_mode = WAL", nil, nil, nil)
            #expect(switched == SQLITE_OK, "round \(round): \(String(cString: sqlite3_errmsg(handle)))")
            sqlite3_close(handle)
            #expect((size(of: path + "-wal") ?? 0) == 0, "the write-ahead log is checkpointed away at close")
            if switched != SQLITE_OK { break }
            // Opened again at once: the lock went with `close()`.
            try PluginJournal(path: path).close()
        }
    }

    /// Regression: two hosts on one `--state` both started, each acknowledging its own actions.
    @Test func aSecondJournalOnOneDatabaseIsRefused() throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try PluginJournal(path: path)
        #expect(throws: PluginJournalError(.inUse, at: path)) { try PluginJournal(path: path) }
        // By another name for the same file, too.
        #expect(throws: PluginJournalError(.inUse, at: directory + "/./state.sqlite")) { try PluginJournal(path: directory + "/./state.sqlite") }
        // Reading while a host runs is allowed.
        #expect(try PluginJournal(readingAt: path).summaries() == [])
        first.close()
        try PluginJournal(path: path).close()
    }

    /// Regression: once a plugin had two snapshots, a statement left on its row kept a read
    /// transaction open, no checkpoint could finish, and the write-ahead log grew by kilobytes
    /// per action (645 MB after 100,000). It now stays within its documented size.
    @Test func theWriteAheadLogStaysSmall() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let journal = try PluginJournal(path: path, options: JournalOptions(sync: .off, snapshotInterval: 50))
        let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
        var largest: Int64 = 0
        for amount in 1...6000 {
            try await counter.send("add", [.int(Int64(amount))])
            if amount % 500 == 0 { largest = max(largest, size(of: path + "-wal") ?? 0) }
        }
        let bound = Int64(SQLiteJournalStore.walSizeLimit) + Int64(SQLiteJournalStore.walCheckpointPages) * 4200
        #expect(largest <= bound, "the write-ahead log reached \(largest) bytes")
        #expect((size(of: path) ?? 0) < 256 << 10, "the database holds two snapshots and the actions after the older one")
        journal.close()
        #expect((size(of: path + "-wal") ?? 0) == 0)
        let reopened = try PluginJournal(path: path)
        defer { reopened.close() }
        let host = PluginHost(journal: reopened)
        #expect(try await host.load(path: plugin("CounterPlugin")).describe() == #"{"count":18003000}"#)
    }

    /// Regression: after a failed commit the host went on acknowledging (3,000 acknowledged,
    /// 1,400 of them missing from the journal). Now an action whose record is not durable is
    /// not acknowledged, nor is any after it, and the failure is reported once.
    @Test func aFailedCommitIsNeverAcknowledged() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let failures = Mutex<[PluginJournalError]>([])
        let acknowledged = Mutex<[PluginTransition]>([])
        var sum: Int64 = 0
        var sent = 0
        do {
            let journal = try PluginJournal(path: path, options: JournalOptions(sync: .always, maxDatabaseSize: 48 << 10)) { error in
                failures.withLock { $0.append(error) }
            }
            let host = PluginHost(observer: { transition in acknowledged.withLock { $0.append(transition) } }, observesSends: true,
                                  journal: journal)
            let counter = try await host.load(path: plugin("CounterPlugin"))
            var refused = 0
            for amount in 1...3000 {
                do {
                    try await counter.send("add", [.int(Int64(amount))])
                    #expect(refused == 0, "an action after a failed one was acknowledged")
                    sum += Int64(amount)
                    sent += 1
                } catch {
                    guard case .notAcknowledged = error.reason else { Issue.record("\(error)"); break }
                    refused += 1
                    if refused == 20 { break }
                }
            }
            #expect(refused == 20, "the database never filled up")
            #expect(failures.withLock { $0.count } == 1)
            #expect(journal.writeFailure != nil)
            var reported = 0
            for transition in acknowledged.withLock({ $0 }) where (try? await transition.acknowledgement.wait()) != nil { reported += 1 }
            #expect(sent > 0 && reported == sent, "every acknowledged action was reported as acknowledged, and no other")
            journal.close()
        }
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
        #expect(try await counter.describe() == #"{"count":\#(sum)}"#, "exactly the acknowledged actions are back")
    }

    /// Regression (audit): a state database deleted, or replaced by another file, while the
    /// host ran went on taking commits into a file nothing could open again — every action
    /// acknowledged, none there after a restart, and a second host could lock a new file at the
    /// same path. So did a deleted write-ahead log. The next commit fails instead, with one
    /// line saying what happened, and nothing after is acknowledged.
    @Test(arguments: ["delete", "replace", "delete the log"])
    func aDatabaseRemovedUnderTheHostStopsItsAcknowledgements(how: String) async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let failures = Mutex<[PluginJournalError]>([])
        let journal = try PluginJournal(path: path, options: JournalOptions(sync: .always)) { error in
            failures.withLock { $0.append(error) }
        }
        defer { journal.close() }
        let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
        try await counter.send("add", [.int(1)])
        switch how {
        case "delete":
            #expect(unlink(path) == 0)
        case "replace":
            let other = directory + "/other.sqlite"
            #expect(FileManager.default.createFile(atPath: other, contents: Data()))
            #expect(rename(other, path) == 0)
        default:
            #expect(unlink(path + "-wal") == 0)
        }
        let refused = await #expect(throws: PluginCallError.self) { try await counter.send("add", [.int(2)]) }
        guard case .notAcknowledged? = refused?.reason else { Issue.record("\(String(describing: refused))"); return }
        let expected = switch how {
        case "delete": "it was deleted while the host ran"
        case "replace": "another file was put in its place while the host ran"
        default: "its write-ahead log (\(path)-wal) was deleted or replaced while the host ran"
        }
        #expect(failures.withLock { $0.map(\.description) }.count == 1)
        let failure = journal.writeFailure?.description ?? ""
        #expect(failure.contains("the state database is no longer the file the host opened: \(expected)"), "\(failure)")
    }

    /// Under `batch`, an action is acknowledged before its commit only within the bounds:
    /// never more than `maxUnsyncedActions` acknowledged and not committed, and a commit
    /// follows within the window.
    @Test func batchKeepsItsBounds() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let journal = try PluginJournal(path: path, options: JournalOptions(sync: .batch, batchWindow: .seconds(3600), maxUnsyncedActions: 10))
        defer { journal.close() }
        let counter = try await PluginHost(journal: journal).load(path: plugin("CounterPlugin"))
        var submissions: [PluginSubmission] = []
        for _ in 1...200 {
            submissions.append(try await counter.submit(counter.plugin.action("increment", [])))
            #expect(journal.unsyncedAcknowledgedCount <= 10)
        }
        try await submissions.last!.acknowledged()
        journal.close()
        let short = try PluginJournal(path: path, options: JournalOptions(sync: .batch, batchWindow: .milliseconds(20)))
        defer { short.close() }
        let again = try await PluginHost(journal: short).load(path: plugin("CounterPlugin"))
        #expect(try await again.describe() == #"{"count":200}"#)
        try await again.send("increment")
        #expect(await eventually(within: 60) { short.unsyncedAcknowledgedCount == 0 }, "committed after its window")
    }

    /// Regression: a file added while `serve` ran could be loaded twice (a scan while a load
    /// still awaited its recovery), and its delayed actions fired twice.
    @Test func concurrentScansLoadAFileOnce() async throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let plugins = directory + "/plugins"
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        try install(plugin("CounterPlugin"), at: plugins + "/counter.so")
        do {
            let journal = try PluginJournal(path: path)
            let counter = try await PluginHost(journal: journal).load(path: plugins + "/counter.so")
            for amount in 1...50 { try await counter.send("add", [.int(Int64(amount))]) }
            journal.close()
        }
        for round in 0..<10 {
            let journal = try PluginJournal(path: path, options: JournalOptions(sync: .off))
            defer { journal.close() }
            let host = PluginHost(journal: journal)
            async let first = host.scan(directory: plugins)
            async let second = host.scan(directory: plugins)
            async let third = host.scan(directory: plugins)
            let events = await first + second + third
            let loads = events.filter { if case .loaded = $0 { true } else { false } }
            #expect(loads.count == 1, "round \(round): \(events)")
            #expect(!events.contains { if case .failed = $0 { true } else { false } }, "round \(round): \(events)")
            #expect(try await host.machine(named: "counter").describe() == #"{"count":1275}"#)
        }
    }

    /// Regression: state files were not judged like plugin files. A database (or its log) that
    /// another user could change, a link, or a log without its database is refused before
    /// anything is written.
    @Test func stateFilesAreJudgedBeforeTheyAreWritten() throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func refusal(_ path: String) -> String {
            do {
                try PluginJournal(path: path).close()
                return "accepted"
            } catch {
                return error.description
            }
        }
        // A link to an empty file: the file stays empty.
        let target = directory + "/target"
        _ = FileManager.default.createFile(atPath: target, contents: nil)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
        #expect(refusal(path).contains("it is a symbolic link"), "\(refusal(path))")
        #expect(size(of: target) == 0)
        try FileManager.default.removeItem(atPath: path)
        // A database others can write.
        try PluginJournal(path: path).close()
        chmod(path, 0o666)
        #expect(refusal(path).contains("can be written by every user (mode 666)"), "\(refusal(path))")
        chmod(path, 0o600)
        // Regression: a database under a second name (a hard link) was taken, and its log,
        // found by name, missed: acknowledged actions were not there.
        #expect(link(path, directory + "/second.sqlite") == 0)
        #expect(refusal(directory + "/second.sqlite").contains("it has 2 names (hard links)"), "\(refusal(directory + "/second.sqlite"))")
        #expect(refusal(path).contains("it has 2 names (hard links)"))
        #expect(unlink(directory + "/second.sqlite") == 0)
        #expect(refusal(path) == "accepted")
        // Another user's database.
        if geteuid() == 0 {
            chown(path, 4242, 4242)
            #expect(refusal(path).contains("belongs to another user (uid 4242)"), "\(refusal(path))")
            chown(path, 0, 0)
        }
        // A write-ahead log others can write, and one without its database.
        _ = FileManager.default.createFile(atPath: path + "-wal", contents: Data("x".utf8), attributes: [.posixPermissions: 0o620])
        #expect(refusal(path).contains("-wal: it can be written by its group (mode 620)"), "\(refusal(path))")
        try FileManager.default.removeItem(atPath: path)
        chmod(path + "-wal", 0o600)
        #expect(refusal(path).contains("is a write-ahead log without its database"), "\(refusal(path))")
        #expect(!FileManager.default.fileExists(atPath: path), "nothing was written")
        try FileManager.default.removeItem(atPath: path + "-wal")
        // A directory every user can write, without the sticky bit.
        let open = directory + "/open"
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: true)
        chmod(open, 0o777)
        #expect(refusal(open + "/state.sqlite").contains("the directory \(open) can be written by every user"), "\(refusal(open + "/state.sqlite"))")
        #expect(!FileManager.default.fileExists(atPath: open + "/state.sqlite"))
        #expect(refusal(path) == "accepted")
    }

    /// Regression: `actomaton-host journal` on an empty file wrote a schema into it.
    @Test func readingWritesNothing() throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        // Regression: it was "another application's SQLite file", which `run --state` then took as new.
        #expect(throws: PluginJournalError(.emptyFile, at: path)) { try PluginJournal(readingAt: path) }
        #expect(size(of: path) == 0)
        #expect(throws: PluginJournalError(.unreadable("no such file"), at: directory + "/none")) { try PluginJournal(readingAt: directory + "/none") }
        #expect(!FileManager.default.fileExists(atPath: directory + "/none"))
    }

    /// Regression: reading a database a host was killed in the middle of writing (a hot rollback
    /// journal beside it, as when it is killed while creating the file) said "attempt to write a
    /// readonly database".
    @Test func readingADatabaseLeftMidWriteSaysWhatHappened() throws {
        let (directory, path) = try databasePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let writer = try SQLiteDatabase(path: path, access: .readWrite(create: true))
        try writer.execute("PRAGMA cache_size = 1; BEGIN; PRAGMA application_id = \(SQLiteJournalStore.applicationID); CREATE TABLE filler (bytes BLOB)")
        for _ in 0..<64 { try writer.execute("INSERT INTO filler VALUES (zeroblob(4000))") }
        // Mid-transaction, with pages spilled to the file: a copy of the pair is what a kill leaves.
        let copy = directory + "/left.sqlite"
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        try FileManager.default.copyItem(atPath: path + "-journal", toPath: copy + "-journal")
        writer.close()
        #expect(throws: PluginJournalError(SQLiteJournalStore.leftMidWrite, at: copy)) { try PluginJournal(readingAt: copy) }
        // The host repairs it (the write rolled back, the file is empty) and creates its own.
        try PluginJournal(path: copy).close()
        #expect(try PluginJournal(readingAt: copy).summaries() == [])
    }
}
