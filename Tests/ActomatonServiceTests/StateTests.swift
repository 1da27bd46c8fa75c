import Foundation
import ActomatonHost
@testable import ActomatonService
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// `--state` with `--listen`: one journal for every instance, each under `plugin/key`; a
/// second server on the same database brings every instance back.
@Suite struct StateTests {
    func journaledServer(_ journal: PluginJournal, time: TestTime = TestTime(), _ configure: (inout ServiceConfiguration) -> Void = { _ in }) throws -> ActomatonServer {
        var configuration = testConfiguration { _ in }
        configure(&configuration)
        return ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                               configuration: configuration, now: time.read,
                               journal: try ServiceJournal(journal, maxReceipts: configuration.maxIdempotencyKeys,
                                                           maxAnswerBytes: configuration.maxIdempotencyBytes))
    }

    /// Regression (audit): a first action the plugin refused (422) left an instance behind —
    /// listed, counted, journaled, watchable, and back after a restart — though it applied
    /// nothing. A refused first action leaves nothing; a refusal on an instance that made a
    /// transition changes nothing; an action sent at once after the refused one is applied.
    @Test func aRefusedFirstActionLeavesNoInstance() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        do {
            let journal = try PluginJournal(path: path)
            defer { journal.close() }
            let server = try journaledServer(journal)
            try await server.makeApplication().test(.router) { client in
                var statuses: [HTTPResponse.Status] = []
                statuses.append(try await client.post("ghost", #"{"action": "start", "args": [0]}"#).status)
                statuses.append(try await client.get("/v1/machines/counter/ghost").status)
                #expect(statuses == [.unprocessableContent, .notFound])
                #expect(try await client.get("/v1/machines/counter").text.contains(#""keys":[]"#))
                #expect(await server.registry.count == 0)

                #expect(try await client.post("kept", #"{"action": "increment"}"#).status == .ok)
                #expect(try await client.post("kept", #"{"action": "start", "args": [0]}"#).status == .unprocessableContent)
                #expect(try await client.get("/v1/machines/counter/kept").text.contains(#""seq":1"#))

                // A refused first action and a good one, sent together: the good one is applied.
                for round in 0..<20 {
                    async let refused = client.post("race\(round)", #"{"action": "start", "args": [0]}"#)
                    async let applied = client.post("race\(round)", #"{"action": "add", "args": [2]}"#)
                    let (first, second) = try await (refused, applied)
                    #expect(first.status == .unprocessableContent && second.status == .ok, "\(second.text)")
                    let read = try await client.get("/v1/machines/counter/race\(round)")
                    #expect(read.text.contains(#""seq":1,"state":{"count":2}"#), "\(read.text)")
                }
            }
        }
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let server = try journaledServer(journal)
        try await server.makeApplication().test(.router) { client in
            let status = try await client.get("/v1/machines/counter/ghost").status
            #expect(status == .notFound, "not back after a restart")
            let keys = try await client.get("/v1/machines/counter?limit=100").text
            #expect(keys.contains("kept") && !keys.contains("ghost"), "\(keys)")
        }
    }

    /// A server on a journal whose store can fence names and hold commits (``FencingStore``).
    func fencingServer() throws -> (FencingStore, PluginJournal, ActomatonServer) {
        let store = try FencingStore(SQLiteJournalStore(path: try temporaryDirectory() + "/state.sqlite"))
        let journal = try PluginJournal(store: store)
        return (store, journal, try journaledServer(journal))
    }

    @Test func aRestartedServiceBringsEveryInstanceBack() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let first = try PluginJournal(path: path)
        let original = try journaledServer(first)
        try await original.makeApplication().test(.router) { client in
            var statuses: [HTTPResponse.Status] = []
            statuses.append(try await client.post("a", #"{"action": "add", "args": [5]}"#).status)
            statuses.append(try await client.post("b", #"{"action": "add", "args": [40]}"#).status)
            statuses.append(try await client.post("a", #"{"action": "add", "args": [2]}"#).status)
            statuses.append(try await client.post("gone", #"{"action": "increment"}"#).status)
            statuses.append(try await client.execute(uri: "/v1/machines/counter/gone", method: .delete).status)
            #expect(statuses == [.ok, .ok, .ok, .ok, .ok])
        }
        first.close()

        let second = try PluginJournal(path: path)
        let restarted = try journaledServer(second)
        #expect(await restarted.registry.passivatedInstances == 2, "a and b, not the deleted one")
        try await restarted.makeApplication().test(.router) { client in
            #expect(try await client.get("/v1/machines/counter?limit=10").text.contains(#""keys":["a","b"]"#))
            let status = try await client.get("/v1/machines/counter/a").text
            #expect(status.contains(#""state":{"count":7}"#), "\(status)")
            let seq = try #require(Int(status.split(separator: #""seq":"#)[1].prefix { $0.isNumber }))
            // Regression: it was the journal's number of a's last action (3 here), counted across instances.
            #expect(seq == 2, "seq continues from the journal: a's count of transitions")
            let next = try await client.post("a", #"{"action": "add", "args": [1]}"#).text
            #expect(next.contains(#""seq":\#(seq + 1),"action":"add","state":{"count":8}"#), "\(next)")
            #expect(try await client.post("b", #"{"action": "add", "args": [2]}"#).text.contains(#""state":{"count":42}"#))
            #expect(try await client.get("/v1/machines/counter/gone").status == .notFound)
        }
        second.close()
    }

    /// Regression (audit): after a restart, an instance whose journal held a pending delayed
    /// or repeating action stayed passivated, its timers frozen, until a request came for it.
    /// The service brings such instances back as it starts; the others wait for a request.
    @Test func instancesWithPendingTimersAreBroughtBackAtStart() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let first = try PluginJournal(path: path)
        let original = try journaledServer(first)
        try await original.makeApplication().test(.router) { client in
            var statuses: [HTTPResponse.Status] = []
            statuses.append(try await client.post("ticking", #"{"action": "start", "args": [3600000]}"#).status)
            statuses.append(try await client.post("later", #"{"action": "add_later", "args": [2, 3600]}"#).status)
            statuses.append(try await client.post("quiet", #"{"action": "add", "args": [1]}"#).status)
            #expect(statuses == [.ok, .ok, .ok])
        }
        first.close()

        let second = try PluginJournal(path: path)
        defer { second.close() }
        let restarted = try journaledServer(second)
        #expect(await restarted.registry.passivatedInstances == 3)
        #expect(await restarted.resumeTimedInstances() == 2)
        let (ticking, later, quiet) = try (InstanceAddress(plugin: "counter", key: InstanceKey("ticking")),
                                           InstanceAddress(plugin: "counter", key: InstanceKey("later")),
                                           InstanceAddress(plugin: "counter", key: InstanceKey("quiet")))
        #expect(await !restarted.registry.isPassivated(ticking))
        #expect(await !restarted.registry.isPassivated(later))
        #expect(await restarted.registry.isPassivated(quiet), "no timer: it waits for its first request")
        let instance = try await restarted.registry.instance(at: ticking, creating: false)
        #expect(await instance.machine.status().effects == 1, "its repeating action runs again")
        #expect(await restarted.resumeTimedInstances() == 0, "once")
    }

    /// With `--state`, an idempotent request's answer is journaled with its action (one
    /// commit): a retry after a restart gets the first answer, byte for byte, and is not
    /// applied again. Refusals applied nothing and are not journaled; a deleted instance's
    /// answers are forgotten with it.
    @Test func anIdempotentRetryAfterARestartIsReplayedNotApplied() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let key: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "order-7"]
        let replayed = HTTPField.Name("Idempotent-Replayed")!
        let body = #"{"action": "add", "args": [10]}"#
        let answer = Mutex("")
        do {
            let journal = try PluginJournal(path: path)
            let server = try journaledServer(journal) { $0.idempotencyWindow = .seconds(3600) }
            try await server.makeApplication().test(.router) { client in
                #expect(try await client.post("i", #"{"action": "increment"}"#).status == .ok)
                let first = try await client.post("i", body, headers: key)
                #expect(first.status == .ok)
                answer.withLock { $0 = first.text }
                #expect(try await client.post("d", body, headers: key).status == .ok)
                #expect(try await client.execute(uri: "/v1/machines/counter/d", method: .delete).status == .ok)
                #expect(try await client.post("i", #"{"action": "fly"}"#, headers: [HTTPField.Name("Idempotency-Key")!: "bad"]).status == .badRequest)
            }
            journal.close()
        }
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let receipts = try journal.receipts(keptAfter: ServiceClock.wallMilliseconds(), limit: 10)
        #expect(receipts.map(\.plugin) == ["counter/i"], "the deleted instance's and the refusal's are not kept")
        #expect(try journal.receipts(keptAfter: ServiceClock.wallMilliseconds() + 3_601_000, limit: 10).isEmpty, "kept for the window")
        let server = try journaledServer(journal) { $0.idempotencyWindow = .seconds(3600) }
        let firstAnswer = answer.withLock { $0 }
        try await server.makeApplication().test(.router) { client in
            let retry = try await client.post("i", body, headers: key)
            #expect(retry.status == .ok)
            #expect(retry.headers[replayed] == "true")
            #expect(retry.text == firstAnswer)
            #expect(firstAnswer.contains(#""seq":2,"action":"add","state":{"count":11}"#), "\(firstAnswer)")
            #expect(try await client.get("/v1/machines/counter/i").text.contains(#""seq":2,"state":{"count":11}"#), "not applied again")
            let other = try await client.post("i", #"{"action": "add", "args": [11]}"#, headers: key)
            #expect(other.status == .unprocessableContent)
            #expect(try await client.post("d", body, headers: key).headers[replayed] == nil, "a new instance d")
        }
    }

    /// Regression (review): Swift compares strings by canonical equivalence, so a path spelling
    /// the plugin `Kcr` with a Kelvin sign (U+212A) found the plugin, its scope and its
    /// instance in memory, while the instance was journaled under the client's spelling: an
    /// action acknowledged that way was gone after a restart, and a DELETE so spelled forgot
    /// the other name's records. A plugin is named byte for byte: any other spelling is 404.
    @Test func aPluginNameSpelledWithAnEquivalentCharacterNamesNoPlugin() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let kelvin = try PluginType.load(path: "\(root)/.build/wasm/hostile/kelvin.wasm", isolation: .none, options: .init())
        #expect(kelvin.name == "Kcr")
        let path = try temporaryDirectory() + "/state.sqlite"
        func server(_ journal: PluginJournal) throws -> ActomatonServer {
            ActomatonServer(catalog: PluginCatalog([kelvin]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                            configuration: testConfiguration { _ in }, journal: try ServiceJournal(journal))
        }
        do {
            let journal = try PluginJournal(path: path)
            defer { journal.close() }
            try await server(journal).makeApplication().test(.router) { client in
                #expect(try await client.post("k", #"{"action": "bump"}"#, plugin: "Kcr").text.contains(#""seq":1,"#))
                for (method, uri) in [(HTTPRequest.Method.post, "/v1/machines/%E2%84%AAcr/k"), (.get, "/v1/machines/%E2%84%AAcr/k"),
                                      (.delete, "/v1/machines/%E2%84%AAcr/k"), (.get, "/v1/machines/%E2%84%AAcr"), (.get, "/v1/plugins/%E2%84%AAcr/diagram")] {
                    let response = try await client.execute(uri: uri, method: method, body: ByteBuffer(string: #"{"action": "bump"}"#))
                    #expect(response.status == .notFound && response.text.hasPrefix(#"{"error":"no plugin named '\#u{212A}cr' is loaded"#),
                            "\(method) \(uri): \(response.status) \(response.text)")
                }
                #expect(try await client.post("k", #"{"action": "bump"}"#, plugin: "Kcr").text.contains(#""seq":2,"#))
            }
        }
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        #expect(try journal.summaries().map(\.plugin) == ["Kcr/k"])
        try await server(journal).makeApplication().test(.router) { client async throws in
            #expect(try await client.get("/v1/machines/Kcr/k").text.contains(#""seq":2,"state":"n=2""#))
        }
    }

    /// With `--state`, the answers past `--max-idempotency-bytes` are kept only in the journal,
    /// and a retry is answered from it — also under `--sync batch`, where the answer is given
    /// before its commit (the retry waits for it; the commit is not held back here), and after a restart, which reads the answers into memory only up to
    /// the bytes. Each retry is replayed byte for byte and applies nothing.
    @Test func answersPastTheIdempotencyBytesAreReplayedFromTheJournal() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let replayed = HTTPField.Name("Idempotent-Replayed")!
        @Sendable func key(_ n: Int) -> HTTPFields { [HTTPField.Name("Idempotency-Key")!: "order-\(n)"] }
        let body = #"{"action": "add", "args": [10]}"#
        let answers = Mutex<[String]>([])
        // An answer is 103 bytes: two fit in 206, the limit, and the third does not.
        let bytes = 206
        do {
            let journal = try PluginJournal(path: path, options: JournalOptions(sync: .batch))
            let server = try journaledServer(journal) { $0.maxIdempotencyBytes = bytes }
            try await server.makeApplication().test(.router) { client in
                for n in 1...4 {
                    let first = try await client.post("k\(n)", body, headers: key(n))
                    #expect(first.status == .ok)
                    answers.withLock { $0.append(first.text) }
                }
                #expect(answers.withLock { $0[0].utf8.count } == 103, "\(answers.withLock { $0[0] })")
                #expect(server.idempotency.keptBytes == 206, "two answers in memory, two only in the journal")
                // Replayed from the journal, its commit perhaps not yet made: the retry waits for it.
                for n in [4, 1] {
                    let retry = try await client.post("k\(n)", body, headers: key(n))
                    #expect(retry.status == .ok && retry.headers[replayed] == "true")
                    #expect(retry.text == answers.withLock { $0[n - 1] })
                }
                #expect(try await client.get("/v1/machines/counter/k4").text.contains(#""seq":1,"state":{"count":10}"#), "not applied again")
                // Another request under the key is still refused, from the fingerprint kept.
                #expect(try await client.post("k4", #"{"action": "add", "args": [11]}"#, headers: key(4)).status == .unprocessableContent)
                // Deleted: its answer is gone from the journal, and a retry runs anew.
                #expect(try await client.execute(uri: "/v1/machines/counter/k3", method: .delete).status == .ok)
                let anew = try await client.post("k3", body, headers: key(3))
                #expect(anew.status == .ok && anew.headers[replayed] == nil)
                answers.withLock { $0[2] = anew.text }
            }
            journal.close()
        }
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let server = try journaledServer(journal) { $0.maxIdempotencyBytes = bytes }
        #expect(server.idempotency.keptBytes <= bytes, "read up to the bytes")
        try await server.makeApplication().test(.router) { client in
            for n in 1...4 {
                let retry = try await client.post("k\(n)", body, headers: key(n))
                #expect(retry.status == .ok && retry.headers[replayed] == "true", "k\(n)")
                #expect(retry.text == answers.withLock { $0[n - 1] }, "k\(n)")
                #expect(try await client.get("/v1/machines/counter/k\(n)").text.contains(#""seq":1,"state":{"count":10}"#), "k\(n)")
            }
        }
    }

    /// With `--state`, a watcher that reconnects to a restarted service with `?after=SEQ` gets
    /// the transitions it missed from the journal — the very messages it would have had live —
    /// then the new ones; where the journal was pruned, 410.
    @Test func aWatcherResumesFromTheJournalAfterARestart() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let live = Mutex<[String]>([])
        do {
            let journal = try PluginJournal(path: path, options: JournalOptions(snapshotInterval: 3))
            let server = try journaledServer(journal)
            try await server.makeApplication().test(.live) { client in
                #expect(try await client.post("w", #"{"action": "increment"}"#).status == .ok)
                let instance = try await server.registry.instance(at: InstanceAddress(plugin: "counter", key: try InstanceKey("w")), creating: false)
                try await client.ws("/v1/machines/counter/w/watch") { inbound, _, _ in
                    #expect(await eventually { instance.watcherCount == 1 })
                    for _ in 0..<4 { _ = try await instance.machine.send(try counterType.action("add", [.int(10)])) }
                    var messages = inbound.messages(maxSize: 1 << 16).makeAsyncIterator()
                    while live.withLock({ $0.count }) < 4, let message = try await messages.next() {
                        if case let .text(text) = message { live.withLock { $0.append(text) } }
                    }
                }
            }
            journal.close()
        }
        let journal = try PluginJournal(path: path, options: JournalOptions(snapshotInterval: 3))
        defer { journal.close() }
        let server = try journaledServer(journal)
        let resumed = Mutex<[String]>([])
        try await server.makeApplication().test(.live) { client in
            // Snapshots every 3 transitions: after the 6th, the journal keeps those after the 3rd.
            try await client.ws("/v1/machines/counter/w/watch?after=3") { inbound, _, _ in
                let instance = try await server.registry.instance(at: InstanceAddress(plugin: "counter", key: try InstanceKey("w")), creating: false)
                #expect(await eventually { instance.watcherCount == 1 })
                _ = try await instance.machine.send(try counterType.action("increment", []))
                var messages = inbound.messages(maxSize: 1 << 16).makeAsyncIterator()
                while resumed.withLock({ $0.count }) < 3, let message = try await messages.next() {
                    if case let .text(text) = message { resumed.withLock { $0.append(text) } }
                }
            }
            // Closed at once (no message before the close): the transitions after seq 2 are kept
            // neither in memory nor in the journal.
            let close = try await webSocketClose(port: try #require(client.port), "/v1/machines/counter/w/watch?after=2")
            #expect(close?.code == 1008 && close?.framesBefore == 0, "\(String(describing: close))")
            #expect(close?.reason.hasPrefix("the transitions of counter/w after seq 2 are no longer kept") == true)
            let instance = try await server.registry.instance(at: InstanceAddress(plugin: "counter", key: try InstanceKey("w")), creating: false)
            let journaled = try journal.journaledMessages(of: "counter/w", after: 2, limit: 100)
            #expect(journaled.map(\.ordinal) == [4, 5, 6])
            #expect {
                try instance.watchers.add(buffer: 1, after: 2, journaled: journaled)
            } throws: { error in
                (error as? ServiceError)?.description.hasPrefix("the transitions of counter/w after seq 2 are no longer kept (only those after seq 5 "
                                                                 + "in memory, and the journal keeps those since its older snapshot") == true
            }
            #expect(try instance.watchers.add(buffer: 1, after: 3, journaled: try journal.journaledMessages(of: "counter/w", after: 3, limit: 100))
                .endReason == nil, "after the 3rd: all kept")
        }
        let messages = resumed.withLock { $0 }
        #expect(messages.count == 3)
        #expect(Array(messages.prefix(2)) == Array(live.withLock { $0 }.suffix(2)), "the journal's messages are the live ones")
        #expect(messages.last?.contains(#""seq":6,"origin":"input","effect_id":null,"action":"increment","state":{"count":42}"#) == true, "\(messages)")
    }

    /// Regression (audit): with `--watch-history 0` a watcher resuming after the seq it saw last
    /// was closed 1008, "no longer kept", when a transition came between the journal's read and
    /// the watcher's joining (or, under `--sync batch`, was not committed yet): the journal held
    /// every one. Under both policies, a watcher that reconnects again and again while a sender
    /// keeps sending gets every seq once, in order, and no close.
    @Test(arguments: [JournalSyncPolicy.always, .batch])
    func aWatcherResumingWhileTransitionsComeIsBridgedByTheJournal(sync: JournalSyncPolicy) async throws {
        let journal = try PluginJournal(path: try temporaryDirectory() + "/state.sqlite", options: JournalOptions(sync: sync))
        defer { journal.close() }
        let total: UInt64 = 600
        let (seqs, closes) = try await withRunningServer(journal: try ServiceJournal(journal), { $0.watchHistory = 0 }) { server, port in
            let instance = try await server.registry.instance(at: InstanceAddress(plugin: "counter", key: try InstanceKey("b")), creating: true)
            _ = try await instance.machine.send(try counterType.action("increment", []))
            let sender = Task {
                for _ in 1..<total { _ = try await instance.machine.send(try counterType.action("increment", [])) }
            }
            let (seqs, closes) = try await overLoopback { () throws -> ([UInt64], [String]) in
                var seqs: [UInt64] = [], closes: [String] = []
                while (seqs.last ?? 0) < total, closes.isEmpty {
                    let connection = try LoopbackConnection(port: port)
                    _ = try connection.webSocketHandshake("/v1/machines/counter/b/watch?after=\(seqs.last ?? 0)", within: .answerDeadline)
                    for _ in 0..<3 where (seqs.last ?? 0) < total {
                        guard let frame = try connection.webSocketTextOrClose(within: .answerDeadline) else { break }
                        let text = String(decoding: frame.payload, as: UTF8.self)
                        guard frame.opcode == 1, let seq = UInt64(text.split(separator: #""seq":"#)[1].prefix { $0.isNumber }) else {
                            closes.append(text)
                            break
                        }
                        seqs.append(seq)
                    }
                }
                return (seqs, closes)
            }
            try await sender.value
            return (seqs, closes)
        }
        #expect(closes.isEmpty, "\(closes.prefix(1))")
        #expect(seqs == Array(1...total), "\(seqs.count) seqs")
    }

    /// Regression: a DELETE was answered 200 before the journal had forgotten the instance
    /// (the forgetting was only queued): a crash right after brought it back, and a refused
    /// commit went unnoticed. The answer now waits for the forgetting to be acknowledged, and a
    /// deletion the journal refuses is 503, the instance kept.
    @Test func aDeleteIsAnsweredOnceTheJournalForgotTheInstance() async throws {
        let (store, journal, server) = try fencingServer()
        defer { journal.close() }
        try await server.makeApplication().test(.router) { client in
            #expect(try await client.post("d", #"{"action": "add", "args": [4]}"#).status == .ok)
            // Refused by the journal: 503, and the instance is still there, from the journal.
            store.fenced.withLock { $0 = ["counter/d"] }
            let refused = try await client.execute(uri: "/v1/machines/counter/d", method: .delete)
            #expect(refused.status == .serviceUnavailable && refused.text.contains("was not journaled"), "\(refused.text)")
            store.fenced.withLock { $0 = [] }
            let kept = try await client.get("/v1/machines/counter/d")
            #expect(kept.status == .ok && kept.text.contains(#""state":{"count":4}"#), "\(kept.text)")
            // Taken: by the time the answer comes, the journal holds nothing of it.
            let deleted = try await client.execute(uri: "/v1/machines/counter/d", method: .delete)
            #expect(deleted.status == .ok)
            #expect(try journal.recovery(for: "counter/d").isEmpty)
            #expect(try await client.get("/v1/machines/counter/d").status == .notFound)
        }
    }

    /// Regression: a request that came while a DELETE waited for the journal made a second
    /// machine at once. In a cluster, whose reads do not wait for the writer, that machine went
    /// on with the deleted state, beside the first, and the forgetting then wiped its records
    /// (here, SQLite's read waits for the commit, so the request waiting is what is checked).
    /// It now waits for the deletion and starts a new instance.
    @Test func aRequestDuringADeleteStartsANewInstance() async throws {
        let (store, journal, server) = try fencingServer()
        defer { journal.close() }
        try await server.makeApplication().test(.router) { client in
            for _ in 0..<3 { #expect(try await client.post("r", #"{"action": "add", "args": [4]}"#).status == .ok) }
            store.holdsCommits.withLock { $0 = true }
            async let deleted = client.execute(uri: "/v1/machines/counter/r", method: .delete)
            #expect(await eventually(within: 120) { store.commitHeld.withLock { $0 } }, "the forgetting is being committed")
            async let sent = client.post("r", #"{"action": "add", "args": [1]}"#)
            // Behind the deletion, in the order they came (3 adds, the DELETE, this one).
            #expect(await eventually(within: 120) { server.arrivals.entered == 5 }, "the request waits for the deletion")
            store.holdsCommits.withLock { $0 = false }
            store.releaseCommits.signal()
            #expect(try await deleted.status == .ok)
            let answer = try await sent
            #expect(answer.status == .ok && answer.text.contains(#""seq":1,"#) && answer.text.contains(#""state":{"count":1}"#), "\(answer.text)")
            let status = try await client.get("/v1/machines/counter/r")
            #expect(status.text.contains(#""seq":1,"state":{"count":1}"#), "\(status.text)")
        }
        #expect(try journal.recovery(for: "counter/r").actions.count == 1)
    }

    /// Regression: a host at `--max-instances` claimed an instance it then refused (429), and
    /// kept the claim: every host of the cluster answered 429 for it. A claim this host cannot
    /// serve is given up.
    @Test func aClaimThisHostCannotServeIsGivenUp() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let placement = SlowReleasePlacement()
        var configuration = testConfiguration { _ in }
        configuration.maxInstances = 1
        let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     configuration: configuration, journal: try ServiceJournal(journal, placement: placement))
        try await server.makeApplication().test(.router) { client in
            // A pending timer: not idle, so not passivated to make room.
            #expect(try await client.post("busy", #"{"action": "start", "args": [60000]}"#).status == .ok)
            let refused = try await client.post("other", #"{"action": "increment"}"#)
            #expect(refused.status == .tooManyRequests, "\(refused.text)")
            #expect(placement.released.withLock { $0 } == ["counter/other"])
            #expect(try await client.post("busy", #"{"action": "stop"}"#).status == .ok)
        }
    }

    /// Regression: in a cluster, a GET or DELETE of a key nobody made claimed it, and each claim
    /// wrote a row that stayed: reads of made-up keys grew the shared database without end. A
    /// request that makes nothing asks the placement first, and claims nothing.
    @Test func aReadOfAKeyNobodyMadeClaimsNothing() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let placement = KnowsNothingPlacement()
        let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     journal: try ServiceJournal(journal, placement: placement))
        try await server.makeApplication().test(.router) { client in
            let read = try await client.get("/v1/machines/counter/ghost")
            #expect(read.status == .notFound)
            let deleted = try await client.execute(uri: "/v1/machines/counter/ghost", method: .delete)
            #expect(deleted.status == .notFound)
            #expect(placement.claims.withLock { $0 } == 0)
            #expect(try await client.post("made", #"{"action": "increment"}"#).status == .ok)
            #expect(placement.claims.withLock { $0 } == 1)
        }
    }

    /// A watcher was told each transition as it was made, before its commit: in a cluster, a
    /// host that had lost its instance showed its watchers transitions the journal then refused
    /// (and numbered them the same as the new owner's). It is told only durable ones now.
    @Test func aWatcherIsNeverToldATransitionTheJournalRefused() async throws {
        let (store, journal, server) = try fencingServer()
        defer { journal.close() }
        let messages = Mutex<[String]>([])
        try await server.makeApplication().test(.live) { client in
            #expect(try await client.post("f", #"{"action": "increment"}"#).status == .ok)
            let instance = try await server.registry.instance(at: InstanceAddress(plugin: "counter", key: try InstanceKey("f")), creating: false)
            try await client.ws("/v1/machines/counter/f/watch") { inbound, _, _ in
                #expect(await eventually { instance.watcherCount == 1 })
                store.fenced.withLock { $0 = ["counter/f"] }
                await #expect(throws: PluginCallError.self) { _ = try await instance.machine.send(try counterType.action("increment", [])) }
                store.fenced.withLock { $0 = [] }
                _ = try await instance.machine.send(try counterType.action("add", [.int(10)]))
                var received = inbound.messages(maxSize: 1 << 16).makeAsyncIterator()
                if let message = try await received.next(), case let .text(text) = message { messages.withLock { $0.append(text) } }
            }
        }
        let first = messages.withLock { $0.first } ?? ""
        #expect(first.contains(#""action":"add""#), "the refused increment was not told: \(first)")
    }

    /// With a journal, the listener is told each transition once durable, by the request that
    /// waited for it or, for a timer's, by a task that waits for its commit: with a 1 ms ticker
    /// firing between 200 requests, it is told every transition once, in order, and a request
    /// returns only once its own was told; a delayed action's transition, the last of all, is
    /// told too.
    @Test func durableTransitionsAreToldOnceInOrderWithTimersBetweenRequests() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let told = Mutex<[UInt64]>([])
        let machine = try InstanceMachine(type: counterType, journal: journal, journalName: "counter/t") { transition in
            told.withLock { $0.append(transition.seq) }
        }
        try await machine.start()
        _ = try await machine.send(try counterType.action("start", [.uint(1)]))
        #expect(await eventually { told.withLock { $0.count >= 3 } }, "ticks are told with no request to tell them")
        var lastSent: UInt64 = 0
        for _ in 0..<200 {
            let transition = try #require(try await machine.send(try counterType.action("add", [.int(1)])))
            #expect(transition.seq > lastSent)
            lastSent = transition.seq
            #expect(told.withLock { $0.contains(transition.seq) }, "told before its request returned")
        }
        _ = try await machine.send(try counterType.action("stop", []))
        // The last transition of all is a delayed action's: no later one tells it on the way.
        let later = try #require(try await machine.send(try counterType.action("add_later", [.int(1), .float(0.001)])))
        #expect(await eventually { told.withLock { $0.last == later.seq + 1 } })
        let seqs = told.withLock { $0 }
        #expect(seqs == Array(1...later.seq + 1), "each once, in order")
        // Every transition but the requests' (start, 200 adds, stop, add_later and its action)
        // is a tick's; the journal's recovery cannot count them, as a snapshot prunes it.
        #expect(seqs.count - 204 >= 2, "the ticks before the first request are told too")
        #expect(try journal.transitionCount(of: "counter/t") == Int64(later.seq + 1))
        await machine.close()
    }

    /// Regression (audit, a cluster under load): a closed instance (deleted, or owned by
    /// another host now) still applied the actions waiting for their turn, and journaled them
    /// after the deletion's forgetting, under the same name: the instance made again at the
    /// address began with the deleted one's last action and state. Closing waits for the
    /// action that has its turn; the ones waiting after it are turned away (`nil`, nothing
    /// applied), so nothing more is journaled once `close()` returns.
    @Test func aClosedInstanceAppliesNothingMore() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let machine = try InstanceMachine(type: counterType, journal: journal, journalName: "counter/c") { _ in }
        try await machine.start()
        let add = try counterType.action("add", [.int(1)])
        let outcomes = try await withThrowingTaskGroup(of: Bool?.self) { group in
            for _ in 0..<64 {
                group.addTask { try await machine.send(add).map { _ in true } }
            }
            // Some have their turn or wait for it, some are not sent yet.
            for _ in 0..<8 { await Task.yield() }
            await machine.close()
            try await journal.waitUntilCommitted()
            let countAtClose = try journal.transitionCount(of: "counter/c")
            var outcomes: [Bool?] = []
            for try await outcome in group { outcomes.append(outcome) }
            try await journal.waitUntilCommitted()
            #expect(try journal.transitionCount(of: "counter/c") == countAtClose, "nothing journaled after the close")
            return (applied: outcomes.count { $0 == true }, countAtClose: countAtClose, all: outcomes.count)
        }
        #expect(outcomes.all == 64)
        #expect(Int64(outcomes.applied) == outcomes.countAtClose, "each applied action answered, none after")
        #expect(try await machine.send(add) == nil, "a send after the close is turned away")
    }

    /// Regression (audit, a cluster under load): a host gave a passivated instance up before
    /// the passivation's snapshot was committed. The snapshot's commit, made after the release,
    /// was fenced, and the fencing dropped the instance the host had claimed again meanwhile for
    /// its next request (503 "another host owns it now"; a fencing counted on a host never
    /// paused). The instance is given up once the snapshot is committed.
    @Test func aPassivatedClusterInstanceIsGivenUpOnceItsSnapshotIsCommitted() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let store = try FencingStore(SQLiteJournalStore(path: path))
        let journal = try PluginJournal(store: store)
        defer { journal.close() }
        let placement = SlowReleasePlacement()
        let time = TestTime()
        let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     configuration: testConfiguration { _ in }, now: time.read, journal: try ServiceJournal(journal, placement: placement))
        let address = InstanceAddress(plugin: "counter", key: try InstanceKey("g"))
        _ = try await server.registry.instance(at: address, creating: true).machine.send(try counterType.action("increment", []))
        time.advance(by: InstanceRegistry.minimumIdleToShed)
        store.holdsCommits.withLock { $0 = true }
        let shed = Task { await server.registry.shed(1) }
        #expect(await eventually { store.commitHeld.withLock { $0 } }, "the snapshot's commit is under way")
        #expect(placement.released.withLock { $0 }.isEmpty, "not given up before the snapshot is committed")
        store.holdsCommits.withLock { $0 = false }
        store.releaseCommits.signal()
        #expect(await shed.value == 1)
        #expect(placement.released.withLock { $0 } == ["counter/g"])
        #expect(try journal.recovery(for: "counter/g").snapshots.count == 1, "the snapshot was committed, not fenced")
    }

    /// Regression (audit, a cluster with its database stopped): `/readyz` said ready on every
    /// host, and a load balancer kept sending requests that could only wait, or be 503. A host
    /// whose lease could not be renewed says it is unavailable, and why, until it is renewed.
    @Test func readinessFollowsTheClustersLease() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let placement = UnavailablePlacement()
        let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     configuration: testConfiguration { _ in }, journal: try ServiceJournal(journal, placement: placement))
        try await server.makeApplication().test(.router) { client in
            #expect(try await client.get("/readyz").text == #"{"status":"ready"}"#)
            placement.why.withLock { $0 = "this host could not renew its lease in the shared database: connection refused" }
            let unavailable = try await client.get("/readyz")
            #expect(unavailable.status == .serviceUnavailable)
            #expect(unavailable.text == #"{"status":"unavailable","reason":"this host could not renew its lease in the shared database: connection refused"}"#)
            #expect(try await client.get("/healthz").status == .ok, "alive all the same")
            // Actions and deletions are refused at once, nothing applied: their commits would
            // have waited up to 30 s, then stopped the host with them unanswered.
            let refused = try await client.post("r", #"{"action": "increment"}"#)
            #expect(refused.status == .serviceUnavailable)
            #expect(refused.text == #"{"error":"this host could not renew its lease in the shared database: connection refused; "#
                    + #"nothing was applied: retry, or send it to another host"}"#, "\(refused.text)")
            #expect(try await client.execute(uri: "/v1/machines/counter/r", method: .delete).status == .serviceUnavailable)
            placement.why.withLock { $0 = nil }
            #expect(try await client.get("/readyz").status == .ok)
            #expect(try await client.post("r", #"{"action": "increment"}"#).text.contains(#""seq":1,"action":"increment","state":{"count":1}"#))
        }
    }

    /// A request that found its instance being passivated waited for the passivation's task,
    /// then looked again, in a loop on the registry's actor: awaiting a finished task does not
    /// give the actor up, so the passivation never got to change the slot, and the host spun
    /// until killed (it did not stop on SIGTERM).
    ///
    /// The passivation is held where a cluster host's waits: for its snapshot's commit, before
    /// the instance is given up (an idle sweep passes over an instance whose action is running).
    @Test func aRequestWaitingOnAPassivationDoesNotKeepItFromFinishing() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let store = try FencingStore(SQLiteJournalStore(path: path))
        let journal = try PluginJournal(store: store)
        defer { journal.close() }
        let time = TestTime()
        let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     configuration: testConfiguration { $0.idleTimeout = .seconds(10) }, now: time.read,
                                     journal: try ServiceJournal(journal, placement: SlowReleasePlacement()))
        let address = InstanceAddress(plugin: "counter", key: try InstanceKey("p"))
        for round in 1...20 {
            let sent = try await server.registry.instance(at: address, creating: true).machine.send(try counterType.action("increment", []))
            #expect(sent?.seq == UInt64(round))
            store.holdsCommits.withLock { $0 = true }
            time.advance(by: .seconds(11))
            let passivation = Task { await server.registry.passivateIdle() }
            #expect(await eventually { store.commitHeld.withLock { $0 } }, "round \(round): the snapshot's commit is under way")
            #expect(await server.registry.isPassivating(address))
            let request = Task { try await server.registry.instance(at: address, creating: false) }
            await Task.yield()
            store.holdsCommits.withLock { $0 = false }
            store.commitHeld.withLock { $0 = false }
            store.releaseCommits.signal()
            #expect(await passivation.value == 1, "round \(round)")
            #expect(await (try request.value).machine.status().seq == UInt64(round))
        }
    }

    /// Regression: the idle sweep waited for the turn of an instance whose action had run past
    /// the idle timeout, and passivated no other instance meanwhile (for good, behind a `.wasm`
    /// loop under `--fuel off`). A busy instance is not idle: the sweep passes over it.
    @Test func anInstanceBusyPastTheIdleTimeoutDoesNotHoldTheSweep() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let store = try FencingStore(SQLiteJournalStore(path: path))
        let journal = try PluginJournal(store: store)
        defer { journal.close() }
        let time = TestTime()
        let server = try journaledServer(journal, time: time) { $0.idleTimeout = .seconds(10) }
        let (busy, idle) = (InstanceAddress(plugin: "counter", key: try InstanceKey("busy")), InstanceAddress(plugin: "counter", key: try InstanceKey("idle")))
        for address in [busy, idle] {
            _ = try await server.registry.instance(at: address, creating: true).machine.send(try counterType.action("increment", []))
        }
        // An action of `busy` holds its turn: its commit is held back, past the idle timeout.
        let machine = try await server.registry.instance(at: busy, creating: false).machine
        time.advance(by: .seconds(1))
        store.holdsCommits.withLock { $0 = true }
        let send = Task { try await machine.send(try counterType.action("increment", [])) }
        #expect(await eventually { store.commitHeld.withLock { $0 } })
        time.advance(by: .seconds(11))
        let swept = Mutex<Int?>(nil)
        let sweep = Task { swept.withLock { $0 = nil }; let count = await server.registry.passivateIdle(); swept.withLock { $0 = count } }
        let sweptWhileBusy = await eventually(within: 20) { swept.withLock { $0 } != nil }
        #expect(sweptWhileBusy, "the sweep waited for the busy instance's action")
        #expect(swept.withLock { $0 } == 1)
        #expect(await server.registry.isPassivated(idle))
        #expect(!(await server.registry.isPassivated(busy)))
        store.holdsCommits.withLock { $0 = false }
        store.commitHeld.withLock { $0 = false }
        store.releaseCommits.signal()
        #expect(try await send.value?.seq == 2)
        await sweep.value
        // Idle once its action is answered: the next sweep passivates it.
        time.advance(by: .seconds(11))
        #expect(await server.registry.passivateIdle() == 1)
        #expect(await server.registry.isPassivated(busy))
    }

    /// In a cluster, a request for an instance being given up (passivated, or shed) claimed it
    /// while the release was under way: the claim found this host still the owner, then the
    /// release took the ownership away and the new machine's commits were fenced (500s under
    /// load). The claim waits for the release now.
    @Test func aClusterInstanceIsClaimedAgainOnlyOnceGivenUp() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let placement = SlowReleasePlacement()
        let time = TestTime()
        let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     configuration: testConfiguration { _ in }, now: time.read, journal: try ServiceJournal(journal, placement: placement))
        let address = InstanceAddress(plugin: "counter", key: try InstanceKey("given"))
        _ = try await server.registry.instance(at: address, creating: true).machine.send(try counterType.action("increment", []))
        // Shed only once unused for a while.
        time.advance(by: InstanceRegistry.minimumIdleToShed)
        placement.holdsReleases.withLock { $0 = true }
        let shed = Task { await server.registry.shed(1) }
        #expect(await eventually { placement.releasing.withLock { $0 } })
        let request = Task { try await server.registry.instance(at: address, creating: false) }
        #expect(await eventually { await server.registry.waitingForRelease == 1 })
        #expect(placement.claimsDuringARelease.withLock { $0 } == 0)
        placement.holdsReleases.withLock { $0 = false }
        placement.releaseGate.signal()
        #expect(await shed.value == 1)
        let instance = try await request.value
        #expect(await instance.machine.status().seq == 1)
        #expect(placement.claimsDuringARelease.withLock { $0 } == 0)
        #expect(placement.claims.withLock { $0 } == 2)
    }

    /// With `--state`, `/metrics` times the journal's commits and counts their records.
    @Test func journalCommitsAreTimed() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let server = try journaledServer(journal)
        try await server.makeApplication().test(.router) { client in
            for _ in 0..<3 { #expect(try await client.post("m", #"{"action": "increment"}"#).status == .ok) }
            let metrics = try await client.get("/metrics").text
            let commits = metrics.split(separator: "\n").first { $0.hasPrefix("actomaton_journal_commit_duration_seconds_count") }
            #expect((commits?.split(separator: " ").last).flatMap { Int($0) } ?? 0 >= 1, "\(metrics)")
            #expect(metrics.contains("actomaton_journal_records_total 3"), "under --sync always each answer waited for its commit")
        }
    }

    @Test func aPassivatedJournaledInstanceComesBackFromTheJournal() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let journal = try PluginJournal(path: path)
        let time = TestTime()
        let service = try journaledServer(journal, time: time)
        try await service.makeApplication().test(.router) { client in
            let first = try await client.post("p", #"{"action": "add", "args": [3]}"#)
            #expect(first.status == .ok)
            time.advance(by: .seconds(300))
            #expect(await service.registry.passivateIdle() == 1)
            // The journal keeps its state: memory keeps neither its snapshot nor its description.
            #expect(service.registry.passivatedBytes.used == 0)
            #expect(try await client.post("p", #"{"action": "add", "args": [4]}"#).text.contains(#""seq":2,"action":"add","state":{"count":7}"#))
        }
        // The passivation journaled its snapshot (committed before the later action): the
        // instance comes back from it and the one action after it, not from a replay of all.
        let recovery = try journal.recovery(for: "counter/p")
        #expect(recovery.snapshots.count == 1, "the passivation's snapshot")
        #expect(recovery.actions.map(\.text) == ["add 4"])
        journal.close()
    }
}

/// A store that refuses the names in `fenced` as a cluster's store refuses names another host
/// took over, and writes the rest to `base`.
final class FencingStore: ForwardingJournalStore, @unchecked Sendable {
    let fenced = Mutex<Set<String>>([])
    /// While set, a commit waits for `releaseCommits` (on the journal's writer thread).
    let holdsCommits = Mutex(false)
    let commitHeld = Mutex(false)
    let releaseCommits = DispatchSemaphore(value: 0)

    init(_ base: SQLiteJournalStore) {
        super.init(base: base)
    }

    override func commit(_ records: [JournalRecord]) throws {
        if holdsCommits.withLock({ $0 }) {
            commitHeld.withLock { $0 = true }
            releaseCommits.wait()
        }
        let refused = fenced.withLock { fenced in Set(records.compactMap(\.name)).intersection(fenced) }
        if !refused.isEmpty { throw JournalStoreFencing(names: refused) }
        try base.commit(records)
    }
}

/// A placement that makes every instance here, and is unavailable while told so.
final class UnavailablePlacement: InstancePlacement, @unchecked Sendable {
    let why = Mutex<String?>(nil)

    func place(_ name: String) throws -> InstancePlace { .here(epoch: 1) }
    func release(_ name: String) {}
    var advertisedURL: String { "http://127.0.0.1:1" }
    var unavailability: String? { why.withLock { $0 } }
}

/// A placement that knows no name: every instance is made here, and counted.
final class KnowsNothingPlacement: InstancePlacement, @unchecked Sendable {
    let claims = Mutex(0)

    func place(_ name: String) throws -> InstancePlace {
        .here(epoch: Int64(claims.withLock { $0 += 1; return $0 }))
    }

    func release(_ name: String) {}
    func knows(_ name: String) throws -> Bool { false }
    var advertisedURL: String { "http://127.0.0.1:9" }
}

/// A placement that keeps every instance here, each claim at a new epoch, and whose releases
/// wait for `releaseGate` while `holdsReleases` is set.
final class SlowReleasePlacement: InstancePlacement, @unchecked Sendable {
    let holdsReleases = Mutex(false)
    let releasing = Mutex(false)
    let releaseGate = DispatchSemaphore(value: 0)
    let claims = Mutex(0)
    let claimsDuringARelease = Mutex(0)

    func place(_ name: String) throws -> InstancePlace {
        if releasing.withLock({ $0 }) { claimsDuringARelease.withLock { $0 += 1 } }
        return .here(epoch: Int64(claims.withLock { $0 += 1; return $0 }))
    }

    /// The names given up, in order.
    let released = Mutex<[String]>([])

    func release(_ name: String) {
        released.withLock { $0.append(name) }
        guard holdsReleases.withLock({ $0 }) else { return }
        releasing.withLock { $0 = true }
        releaseGate.wait()
        releasing.withLock { $0 = false }
    }

    var advertisedURL: String { "http://127.0.0.1:9" }
}

extension StateTests {
    /// The timers an instance armed again from the journal are listed (the inspector counts
    /// them down), not only those its transitions in this process started.
    @Test func theTimersArmedAgainAfterARestartAreListed() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        let first = try PluginJournal(path: path)
        try await journaledServer(first).makeApplication().test(.router) { client in
            let later = try await client.post("t", #"{"action": "add_later", "args": [1, 3600]}"#)
            let ticker = try await client.post("t", #"{"action": "start", "args": [60000]}"#)
            #expect(later.status == .ok && ticker.status == .ok)
        }
        first.close()
        let second = try PluginJournal(path: path)
        try await journaledServer(second).makeApplication().test(.router) { client in
            let status = try await client.get("/v1/machines/counter/t")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(status.text.utf8)) as? [String: Any])
            let timers = try #require(object["timers"] as? [[String: Any]])
            #expect(timers.count == 2, "\(status.text)")
            let delayed = try #require(timers.first { $0["kind"] as? String == "delayed" })
            #expect(delayed["action"] as? String == "add")
            #expect((3_500_000...3_600_000).contains(delayed["due_in_ms"] as? Int ?? -1), "\(delayed)")
            let repeating = try #require(timers.first { $0["kind"] as? String == "repeating" })
            #expect(repeating["id"] as? String == "ticker" && repeating["interval_ms"] as? Int == 60_000)
            #expect((1...60_000).contains(repeating["due_in_ms"] as? Int ?? -1), "\(repeating)")
        }
        second.close()
    }
}
