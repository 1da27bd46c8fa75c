@testable import ActomatonHost
import ActomatonPluginContract
import Foundation
import Testing
@testable import ActomatonCluster

/// The journal's stores, each opened empty, for the conformance suite.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// An empty store of this kind that may write `names`, and what closes it.
    func open(owning names: [String]) async throws -> (store: any JournalStore, close: () -> Void) {
        switch self {
        case .sqlite:
            let directory = NSTemporaryDirectory() + "actomaton-store-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            let store = try SQLiteJournalStore(path: directory + "/state.db")
            return (store, {
                store.close(clean: true)
                try? FileManager.default.removeItem(atPath: directory)
            })
        case .postgres:
            let address = try await PostgresTestServer.start().makeDatabase()
            let host = try ClusterHost(address: address, advertise: "http://127.0.0.1:1")
            for name in names {
                guard case .owned = try host.claim(name) else { throw PostgresTestServerError("\(name) was not claimed") }
            }
            let store = PostgresJournalStore(host: host)
            return (store, {
                store.close(clean: true)
                host.stop()
            })
        }
    }
}

/// What every ``JournalStore`` must do alike: the SQLite file of one host and the PostgreSQL
/// database of a cluster run the same checks.
@Suite("Journal stores: one conformance suite for SQLite and PostgreSQL")
struct JournalStoreConformanceTests {
    static func action(_ name: String, _ action: String, _ arguments: [PluginValue] = [], message: String? = nil,
                       fired: (key: Int64, repeating: Bool)? = nil, timers: [JournaledTimer] = [], cancelled: [String] = [],
                       receipt: JournaledReceipt? = nil) -> JournalRecord {
        var made: (@Sendable () -> String)?
        if let message { made = { message } }
        return .action(plugin: name, version: "1.0", name: action, arguments: arguments, firedTimer: fired, timers: timers,
                       cancelledIDs: cancelled, receipt: receipt, message: made)
    }

    @Test(arguments: StoreKind.allCases)
    func actionsComeBackInOrderWithEveryKindOfArgument(_ kind: StoreKind) async throws {
        let (store, close) = try await kind.open(owning: ["counter/a", "counter/b"])
        defer { close() }
        let arguments: [PluginValue] = [.bool(true), .int(-5), .uint(.max), .float(2.5), .string("héllo, wörld: ' \" \\ \u{0}")]
        try store.commit([Self.action("counter/a", "add", arguments), Self.action("counter/b", "reset")])
        try store.commit([Self.action("counter/a", "increment")])
        let recovery = try store.recovery(for: "counter/a")
        #expect(recovery.actions.map(\.action) == ["add", "increment"])
        #expect(recovery.actions[0].arguments == arguments)
        #expect(recovery.actions[0].version == "1.0")
        #expect(recovery.actions[0].sequence < recovery.actions[1].sequence)
        #expect(recovery.transitionCount == 2)
        #expect(try store.transitionCount(of: "counter/a") == 2)
        #expect(try store.transitionCount(of: "counter/none") == 0)
        #expect(recovery.startsAtTheBeginning)
        #expect(recovery.snapshots.isEmpty && recovery.timers.isEmpty)
        #expect(try store.recovery(for: "counter/b").actions.map(\.action) == ["reset"])
        #expect(try store.recovery(for: "counter/none").isEmpty)
        #expect(try store.actions(of: "counter/a", after: recovery.actions[0].sequence).map(\.action) == ["increment"])
    }

    @Test(arguments: StoreKind.allCases)
    func aSnapshotKeepsTheOneBeforeItAndTheActionsAfterTheOlder(_ kind: StoreKind) async throws {
        let (store, close) = try await kind.open(owning: ["c/x"])
        defer { close() }
        try store.commit([Self.action("c/x", "one"), .snapshot(plugin: "c/x", version: "1.0", bytes: [1])])
        try store.commit([Self.action("c/x", "two"), .snapshot(plugin: "c/x", version: "1.0", bytes: [2])])
        var recovery = try store.recovery(for: "c/x")
        #expect(recovery.snapshots.map(\.bytes) == [[2], [1]])
        #expect(recovery.actions.isEmpty)
        #expect(try store.actions(of: "c/x", after: recovery.snapshots[1].sequence).map(\.action) == ["two"])
        #expect(!recovery.startsAtTheBeginning)
        try store.commit([Self.action("c/x", "three"), .snapshot(plugin: "c/x", version: "1.1", bytes: [3]), Self.action("c/x", "four")])
        recovery = try store.recovery(for: "c/x")
        #expect(recovery.snapshots.map(\.bytes) == [[3], [2]])
        #expect(recovery.snapshots[0].version == "1.1")
        #expect(recovery.actions.map(\.action) == ["four"])
        #expect(try store.actions(of: "c/x", after: 0).map(\.action) == ["three", "four"])
        #expect(recovery.transitionCount == 4)
    }

    /// Regression: each snapshot pruned every action before the one before it, so snapshots
    /// close together (each passivation writes one) left a few actions where a watcher
    /// resuming with `?after` was promised the journal's snapshot interval.
    @Test(arguments: StoreKind.allCases)
    func aSnapshotKeepsTheLastActionsItIsAskedTo(_ kind: StoreKind) async throws {
        let (store, close) = try await kind.open(owning: ["k/x"])
        defer { close() }
        for round in 1...10 {
            try store.commit([Self.action("k/x", "a\(round)"), .snapshot(plugin: "k/x", version: "1", bytes: [UInt8(round)], keepingActions: 4)])
        }
        // A snapshot after every action: the two newest snapshots, and the last 4 actions.
        let recovery = try store.recovery(for: "k/x")
        #expect(recovery.snapshots.map(\.bytes) == [[10], [9]])
        #expect(try store.actions(of: "k/x", after: 0).map(\.action) == ["a7", "a8", "a9", "a10"])
        #expect(!recovery.startsAtTheBeginning)
        #expect(recovery.transitionCount == 10)
        // Kept back to the older snapshot when that is further: nothing is pruned past it.
        try store.commit((11...20).map { Self.action("k/x", "a\($0)") } + [.snapshot(plugin: "k/x", version: "1", bytes: [20], keepingActions: 4)])
        #expect(try store.actions(of: "k/x", after: 0).map(\.action) == (11...20).map { "a\($0)" })
    }

    @Test(arguments: StoreKind.allCases)
    func timersAreKeptUntilTheyFireOrEnd(_ kind: StoreKind) async throws {
        let (store, close) = try await kind.open(owning: ["t/1"])
        defer { close() }
        let first = try store.timerKeys().lowerBound
        var queued = PluginEffectOptions()
        queued.id = "blink"
        queued.queue = .init(name: "lights", policy: .runNewest(maxCount: 2))
        let timers = [
            JournaledTimer(key: first, plugin: "t/1", action: "tick", arguments: [.int(1)], due: 1_000, interval: 250, options: queued),
            JournaledTimer(key: first + 1, plugin: "t/1", action: "ring", arguments: [], due: 2_000, interval: nil, options: .init()),
            JournaledTimer(key: first + 2, plugin: "t/1", action: "hum", arguments: [], due: 3_000, interval: nil, options: .init()),
        ]
        try store.commit([Self.action("t/1", "start", timers: timers)])
        #expect(try store.recovery(for: "t/1").timers == timers)
        // The repeating one fires (its due time moves on), the delayed one fires (gone).
        try store.commit([Self.action("t/1", "tick", fired: (first, true)), Self.action("t/1", "ring", fired: (first + 1, false))])
        var kept = try store.recovery(for: "t/1").timers
        #expect(kept.map(\.key) == [first, first + 2])
        #expect(kept[0].due == 1_250)
        // One ends without firing; the other is cancelled by its effect ID.
        try store.commit([.timerEnded(key: first + 2, plugin: "t/1"), Self.action("t/1", "stop", cancelled: ["blink"])])
        kept = try store.recovery(for: "t/1").timers
        #expect(kept.isEmpty)
        #expect(try store.summaries().first { $0.plugin == "t/1" }?.timerCount == 0)
    }

    @Test(arguments: StoreKind.allCases)
    func receiptsAndMessagesComeBackInOrderWithinTheirLimits(_ kind: StoreKind) async throws {
        let (store, close) = try await kind.open(owning: ["r/1", "r/2"])
        defer { close() }
        let receipts = (1...4).map { JournaledReceipt(plugin: "r/1", key: "k\($0)", fingerprint: "f\($0)", answer: "{\"seq\":\($0)}",
                                                       expires: Int64(1_000 * $0)) }
        try store.commit(receipts.enumerated().map { Self.action("r/1", "add", [.int(Int64($0))], message: "m\($0 + 1)", receipt: $1) })
        try store.commit([Self.action("r/1", "quiet"), Self.action("r/1", "loud", message: "m6")])
        #expect(try store.receipts(keptAfter: 2_000, limit: 10, answerBytes: .max).map(\.key) == ["k4", "k3", "k2"])
        #expect(try store.receipts(keptAfter: 0, limit: 2, answerBytes: .max) == [receipts[3], receipts[2]])
        // The answers are read, latest first, while they add up to the bytes asked for (9 each):
        // the rest are left in the journal, their sizes given.
        let atTheLimit = try store.receipts(keptAfter: 0, limit: 10, answerBytes: 18)
        #expect(atTheLimit.map(\.answer) == [#"{"seq":4}"#, #"{"seq":3}"#, nil, nil])
        #expect(atTheLimit.map(\.answerBytes) == [9, 9, 9, 9])
        #expect(atTheLimit.map(\.key) == ["k4", "k3", "k2", "k1"])
        #expect(try store.receipts(keptAfter: 0, limit: 10, answerBytes: 17).map(\.answer) == [#"{"seq":4}"#, nil, nil, nil])
        #expect(try store.receipt(of: "r/1", key: "k2") == receipts[1])
        #expect(try store.receipt(of: "r/2", key: "k2") == nil)
        let messages = try store.messages(of: "r/1", after: 1, limit: 10)
        // It stops before the first action kept without a message.
        #expect(messages.map(\.ordinal) == [2, 3, 4])
        #expect(messages.map(\.message) == ["m2", "m3", "m4"])
        #expect(try store.messages(of: "r/1", after: 0, limit: 2).map(\.message) == ["m1", "m2"])
        #expect(try store.messages(of: "r/2", after: 0, limit: 2).isEmpty)
        // With where each was journaled: after m2's, m3 and m4 (numbered above 2), and none of a
        // later life; once r/1 is made again, its first action is numbered 1, journaled after m4.
        let positioned = try store.messages(of: "r/1", after: 2, orJournaledAfter: .max, limit: 10)
        #expect(positioned.map(\.ordinal) == [3, 4])
        let m4 = try #require(positioned.last?.position)
        #expect(positioned[0].position < m4)
        #expect(try store.messages(of: "r/1", after: 4, orJournaledAfter: m4, limit: 10).isEmpty)
        try store.commit([.forget(plugin: "r/1")])
        try store.commit([Self.action("r/1", "again", message: "m1 again")])
        let again = try store.messages(of: "r/1", after: 4, orJournaledAfter: m4, limit: 10)
        #expect(again.map(\.ordinal) == [1] && again.map(\.message) == ["m1 again"] && (again.first?.position ?? 0) > m4)
    }

    @Test(arguments: StoreKind.allCases)
    func aForgottenNameHoldsNothingAndCountsAgainFromOne(_ kind: StoreKind) async throws {
        let (store, close) = try await kind.open(owning: ["f/gone", "f/kept"])
        defer { close() }
        let key = try store.timerKeys().lowerBound
        let timer = JournaledTimer(key: key, plugin: "f/gone", action: "later", arguments: [], due: 10, interval: nil, options: .init())
        let receipt = JournaledReceipt(plugin: "f/gone", key: "k", fingerprint: "f", answer: "a", expires: .max)
        try store.commit([Self.action("f/gone", "one", timers: [timer], receipt: receipt), .snapshot(plugin: "f/gone", version: "1", bytes: [9]),
                          Self.action("f/kept", "stay")])
        try store.commit([.forget(plugin: "f/gone")])
        #expect(try store.recovery(for: "f/gone").isEmpty)
        #expect(try store.receipts(keptAfter: 0, limit: 10, answerBytes: .max).isEmpty)
        #expect(try store.summaries().map(\.plugin) == ["f/kept"])
        try store.commit([Self.action("f/gone", "again", message: "first again")])
        #expect(try store.messages(of: "f/gone", after: 0, limit: 10).map(\.ordinal) == [1])
        #expect(try store.recovery(for: "f/kept").actions.map(\.action) == ["stay"])
    }

    @Test(arguments: StoreKind.allCases)
    func summariesListEveryNameInByteOrder(_ kind: StoreKind) async throws {
        let names = ["b/2", "B/1", "a/1", "a/10", "a/2"]
        let (store, close) = try await kind.open(owning: names)
        defer { close() }
        try store.commit(names.map { Self.action($0, "go") } + [.snapshot(plugin: "a/1", version: "1", bytes: [1, 2, 3])])
        let summaries = try store.summaries()
        #expect(summaries.map(\.plugin) == names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        #expect(summaries.first { $0.plugin == "a/1" }?.lastSnapshot?.bytes == 3)
        #expect(summaries.allSatisfy { $0.actionCount == 1 })
    }

    @Test(arguments: StoreKind.allCases)
    func aJournalOverTheStoreAcknowledgesAndReadsBack(_ kind: StoreKind) async throws {
        let (store, close) = try await kind.open(owning: ["j/1"])
        defer { close() }
        let journal = try PluginJournal(store: store)
        let keys = [try journal.makeTimerKeys(2).get(), try journal.makeTimerKeys(1).get()]
        #expect(keys[1] == keys[0] + 2)
        var tickets: [UInt64] = []
        for index in 0..<50 { tickets.append(journal.append(Self.action("j/1", "add", [.int(Int64(index))]))) }
        try await journal.waitUntilAcknowledged(tickets.last!)
        #expect(tickets.allSatisfy { journal.acknowledgementState(of: $0) == .acknowledged })
        #expect(try journal.recovery(for: "j/1").actions.count == 50)
        #expect(try journal.recovery(for: "j/1").transitionCount == 50)
        journal.close()
    }
}
