import ActomatonHost
import ActomatonPluginContract
@testable import ActomatonService
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import HummingbirdWSTesting
import Logging
import NIOWebSocket
import ServiceLifecycle
import Synchronization
import Testing

@Suite struct WatchAndShutdownTests {
    @Test func aWatcherReceivesEveryTransitionTimersIncludedWithItsSeq() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.live) { client in
            _ = try await client.post("w", #"{"action": "add", "args": [1]}"#)
            let instance = try await server.registry.instance(at: InstanceAddress(plugin: "counter", key: try InstanceKey("w")), creating: false)
            let received = Mutex<[String]>([])
            try await client.ws("/v1/machines/counter/w/watch") { inbound, _, _ in
                #expect(await eventually { instance.watcherCount == 1 })
                // One input action that starts a delayed one (due at once): two transitions.
                _ = try await instance.machine.send(try counterType.action("add_later", [.int(2), .float(0)]))
                var messages = inbound.messages(maxSize: 1 << 16).makeAsyncIterator()
                while received.withLock({ $0.count }) < 2, let message = try await messages.next() {
                    if case let .text(text) = message { received.withLock { $0.append(text) } }
                }
            }
            let messages = received.withLock { $0 }
            #expect(messages.count == 2)
            #expect(messages.first?.hasPrefix(#"{"plugin":"counter","key":"w","seq":2,"origin":"input","effect_id":null,"action":"add_later","state":{"count":1},"started":["after 0s: add 2"]"#) == true, "\(messages)")
            #expect(messages.last == #"{"plugin":"counter","key":"w","seq":3,"origin":"delayed","effect_id":null,"action":"add","state":{"count":3},"started":[],"cancelled":[]}"#, "\(messages)")
            #expect(await eventually { instance.watcherCount == 0 }, "a watcher that left is forgotten")
        }
    }

    /// A watcher that reconnects with the seq it saw last gets every transition after it once,
    /// in order, while another client keeps sending: no gap, no duplicate.
    @Test func watchingAfterASeqResumesWithoutAGapOrADuplicate() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.live) { client in
            for _ in 0..<5 { #expect(try await client.post("r", #"{"action": "increment"}"#).status == .ok) }
            let address = InstanceAddress(plugin: "counter", key: try InstanceKey("r"))
            let instance = try await server.registry.instance(at: address, creating: false)
            let sends = 200
            let sender = Task {
                for _ in 0..<sends { _ = try await instance.machine.send(try counterType.action("increment", [])) }
            }
            let seqs = Mutex<[UInt64]>([])
            try await client.ws("/v1/machines/counter/r/watch?after=3") { inbound, _, _ in
                var messages = inbound.messages(maxSize: 1 << 16).makeAsyncIterator()
                while seqs.withLock({ $0.last ?? 0 }) < UInt64(5 + sends), let message = try await messages.next() {
                    guard case let .text(text) = message,
                          let seq = UInt64(text.split(separator: #""seq":"#)[1].prefix { $0.isNumber }) else { continue }
                    seqs.withLock { $0.append(seq) }
                }
            }
            try await sender.value
            #expect(seqs.withLock { $0 } == Array(4...UInt64(5 + sends)))
        }
    }

    /// An `after` older than the kept history is 410 with what is kept; one past the last
    /// transition, or not a number, is 400. Checked at the history's limit and one past it.
    @Test func watchingAfterASeqNoLongerKeptIs410() async throws {
        let server = makeServer { $0.watchHistory = 3 }
        let upgrade: HTTPFields = [.upgrade: "websocket", .connection: "Upgrade"]
        try await server.makeApplication().test(.router) { client in
            for _ in 0..<5 { #expect(try await client.post("h", #"{"action": "increment"}"#).status == .ok) }
            // Kept: seq 3, 4 and 5, so `after` may be 2 (the limit) to 5.
            let gone = try await client.get("/v1/machines/counter/h/watch?after=1", headers: upgrade)
            #expect(gone.status == .gone)
            #expect(gone.text.contains("the transitions of counter/h after seq 1 are no longer kept (only those after seq 2"), "\(gone.text)")
            let past = try await client.get("/v1/machines/counter/h/watch?after=6", headers: upgrade)
            #expect(past.status == .badRequest)
            #expect(past.text == #"{"error":"after=6 is past counter/h's last transition, seq 5"}"#)
            for bad in ["x", "-1", "", "99999999999999999999", "1.0"] {
                let response = try await client.get("/v1/machines/counter/h/watch?after=\(bad)", headers: upgrade)
                #expect(response.status == .badRequest, "after=\(bad)")
            }
        }
        let instance = try await server.registry.instance(at: InstanceAddress(plugin: "counter", key: try InstanceKey("h")), creating: false)
        for after: UInt64 in 2...5 { #expect(throws: Never.self) { try instance.watchers.check(after: after) } }
        let missed = try instance.watchers.add(buffer: 1, after: 2)
        var seqs: [String] = []
        instance.watchers.remove(missed)
        for await message in missed.messages { seqs.append(String(message.split(separator: #""seq":"#)[1].prefix { $0.isNumber })) }
        #expect(seqs == ["3", "4", "5"], "the missed ones do not count against the buffer")
    }

    /// `--max-watchers-per-instance` over the API: with the limit's watchers connected, one more
    /// WebSocket client is refused — accepted and closed at once with 4429 and the limit's name
    /// (the WebSocket server answered a refused upgrade with a bare 400, which said nothing);
    /// once one watcher leaves, a new one connects.
    @Test func watchersPerInstanceAreLimitedOverTheAPI() async throws {
        let server = makeServer { $0.maxWatchersPerInstance = 2 }
        try await server.makeApplication().test(.live) { client in
            _ = try await client.post("l", #"{"action": "increment"}"#)
            let instance = try await server.registry.instance(at: InstanceAddress(plugin: "counter", key: try InstanceKey("l")), creating: false)
            try await client.ws("/v1/machines/counter/l/watch") { _, _, _ in
                try await client.ws("/v1/machines/counter/l/watch") { _, _, _ in
                    #expect(await eventually { instance.watcherCount == 2 }, "at the limit")
                    let refused = try await webSocketClose(port: try #require(client.port), "/v1/machines/counter/l/watch")
                    #expect(refused?.code == 4429)
                    #expect(refused?.reason == "counter/l already has 2 watchers, its limit (--max-watchers-per-instance)")
                    #expect(instance.watcherCount == 2)
                }
                #expect(await eventually { instance.watcherCount == 1 }, "one left")
                try await client.ws("/v1/machines/counter/l/watch") { _, _, _ in
                    #expect(await eventually { instance.watcherCount == 2 }, "room for one again")
                }
            }
        }
    }

    /// Regression (audit): watchers that connect at once past the limit were closed with 1008
    /// (a slow reader's code) when the check before the handshake let them through and another
    /// took the last place meanwhile; every refusal is 4429, whichever check makes it, for the
    /// instance's limit and for the service's.
    @Test(arguments: [false, true])
    func watchersConnectingAtOnceAreRefusedWith4429(serviceWide: Bool) async throws {
        try await withRunningServer({ configuration in
            if serviceWide { configuration.maxWatchers = 2 } else { configuration.maxWatchersPerInstance = 2 }
        }) { server, port in
            let instance = try await server.registry.instance(at: InstanceAddress(plugin: "counter", key: try InstanceKey("c")), creating: true)
            _ = try await instance.machine.send(try counterType.action("increment", []))
            // Every handshake is sent before any answer is read: the server takes them at once.
            let connections = try await overLoopback { () throws -> [LoopbackConnection] in
                let connections = try (0..<12).map { _ in try LoopbackConnection(port: port) }
                for connection in connections {
                    try connection.send("GET /v1/machines/counter/c/watch HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
                                        + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
                }
                for connection in connections { _ = try connection.response(within: .answerDeadline) }
                return connections
            }
            #expect(await eventually { instance.watcherCount == 2 })
            // The two watchers get the next transition; every other connection, its close.
            _ = try await instance.machine.send(try counterType.action("increment", []))
            let firsts = try await withThrowingTaskGroup(of: (opcode: UInt8, payload: [UInt8])?.self) { group in
                for connection in connections {
                    group.addTask { try await overLoopback { try connection.webSocketTextOrClose(within: .answerDeadline) } }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let closes = firsts.compactMap { $0 }.filter { $0.opcode == 8 }.map { Int($0.payload[0]) << 8 | Int($0.payload[1]) }
            #expect(firsts.compactMap { $0 }.count { $0.opcode == 1 } == 2)
            #expect(closes.count == 10 && closes.allSatisfy { $0 == 4429 }, "\(closes)")
        }
        // Which check refuses depends on the timing; the one after the upgrade answers as the
        // one before would have.
        let refusals: [(ServiceError, Bool, Int)] = [(.overLimit("x"), false, 4429), (.badRequest("x"), false, 4400), (.notFound("x"), false, 4404),
                                                     (.forbidden("x"), false, 4403), (.gone("x"), true, 1008), (.gone("x"), false, 4410),
                                                     (.shuttingDown, false, 1001)]
        for (error, journalAsked, code) in refusals {
            #expect(ServiceRoutes.closeCode(ofLateRefusal: error, journalAsked: journalAsked) == WebSocketErrorCode(codeNumber: code), "\(error)")
        }
    }

    /// Regression (audit): what a watcher sends is dropped, but frames that RFC 6455 says end
    /// the connection were dropped too: a continuation with no message begun, a new message
    /// before the last one ended (1002), a text message that is not UTF-8 (1007), a message
    /// past the limit (1009), a close whose reason is not UTF-8 (1002, not 1000). A fragmented
    /// message, and one at the limit (in one frame or several), are dropped and the watcher goes on.
    @Test func framesThatBreakTheProtocolCloseTheWatcher() async throws {
        try await withRunningServer { server, port in
            let instance = try await server.registry.instance(at: InstanceAddress(plugin: "counter", key: try InstanceKey("f")), creating: true)
            _ = try await instance.machine.send(try counterType.action("increment", []))
            let limit = ServiceRoutes.maxClientMessageBytes
            let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 16_384)
            let cases: [(String, [(UInt8, Bool, [UInt8])], Int?)] = [
                ("a continuation first", [(0, true, Array("x".utf8))], 1002),
                ("a message inside a message", [(1, false, Array("x".utf8)), (1, true, Array("y".utf8))], 1002),
                ("text that is not UTF-8", [(1, true, [0xFF, 0xFE])], 1007),
                ("a close whose reason is not UTF-8", [(8, true, [0x03, 0xE8, 0xFF, 0xFE])], 1002),
                ("past the limit", [(1, false, chunk)] + Array(repeating: (0, false, chunk), count: limit / chunk.count - 1) + [(0, true, [0x61])], 1009),
                ("at the limit, fragmented", [(1, false, chunk)] + Array(repeating: (0, false, chunk), count: limit / chunk.count - 2) + [(0, true, chunk)], nil),
                // Regression (audit): the frame decoder's own limit was 16 KiB: a frame of 16 KiB + 1
                // was closed 1009 with no reason, where the documented limit is 64 KiB.
                ("one frame at the limit", [(1, true, [UInt8](repeating: UInt8(ascii: "a"), count: limit))], nil),
                ("one frame past the limit", [(1, true, [UInt8](repeating: UInt8(ascii: "a"), count: limit + 1))], 1009),
            ]
            for (name, frames, code) in cases {
                let connection = try await overLoopback { () throws -> LoopbackConnection in
                    let connection = try LoopbackConnection(port: port)
                    _ = try connection.webSocketHandshake("/v1/machines/counter/f/watch", within: .answerDeadline)
                    return connection
                }
                #expect(await eventually { instance.watcherCount == 1 }, "\(name)")
                try await overLoopback {
                    for (opcode, fin, payload) in frames { try connection.sendWebSocketFrame(opcode: opcode, fin: fin, payload: payload) }
                }
                // A close, or (when the frames were dropped) the next transition.
                if code == nil { _ = try await instance.machine.send(try counterType.action("increment", [])) }
                let first = try await overLoopback { try connection.webSocketTextOrClose(within: .answerDeadline) }
                if let code {
                    #expect(first?.opcode == 8 && first.map { Int($0.payload[0]) << 8 | Int($0.payload[1]) } == code, "\(name): \(String(describing: first))")
                } else {
                    #expect(first?.opcode == 1, "\(name): \(String(describing: first))")
                }
                // A close the client began needs no answer.
                if frames.first?.0 != 8 { try await overLoopback { try connection.answerWebSocketClose() } }
                #expect(await eventually { instance.watcherCount == 0 }, "\(name)")
            }
        }
    }

    /// Regression (audit): watchers of many instances could take every connection
    /// `--max-connections` allows, and `/healthz` waited for ever. `--max-watchers` bounds them
    /// for the whole service (by default a quarter of the connections, at most 64, stay free):
    /// at the limit one more is refused with 4429 and the limit's name, whichever instance it
    /// watches; once one leaves, a new one connects.
    @Test func watchersOfTheWholeServiceAreLimited() async throws {
        #expect(ServiceConfiguration().watcherLimit == 960)
        #expect({ var c = ServiceConfiguration(); c.maxConnections = 16; return c.watcherLimit }() == 12)
        // Regression (audit): below 4 connections none stayed for requests: one watcher of
        // `--max-connections 1` left `/healthz` unanswered.
        #expect([1, 2, 3, 4].map { count in var c = ServiceConfiguration(); c.maxConnections = count; return c.watcherLimit } == [0, 1, 2, 3])
        let server = makeServer { $0.maxWatchers = 2 }
        try await server.makeApplication().test(.live) { client in
            _ = try await client.post("a", #"{"action": "increment"}"#)
            _ = try await client.post("b", #"{"action": "increment"}"#)
            try await client.ws("/v1/machines/counter/a/watch") { _, _, _ in
                try await client.ws("/v1/machines/counter/b/watch") { _, _, _ in
                    #expect(await eventually { server.watcherBudget.current == 2 }, "at the limit")
                    let refused = try await webSocketClose(port: try #require(client.port), "/v1/machines/counter/a/watch")
                    #expect(refused?.code == 4429)
                    #expect(refused?.reason == "the service already has 2 watchers, its limit (--max-watchers)")
                    #expect(try await client.get("/healthz").status == .ok, "a request still gets a connection")
                }
                #expect(await eventually { server.watcherBudget.current == 1 }, "one left")
                try await client.ws("/v1/machines/counter/b/watch") { _, _, _ in
                    #expect(await eventually { server.watcherBudget.current == 2 }, "room for one again")
                }
            }
        }
        #expect(server.watcherBudget.current == 0)
    }

    /// Every refusal of a watch reaches a WebSocket client as a close with 4000 + the status
    /// and the line, cut to the 123 bytes a close frame's reason holds: an unknown instance
    /// (4404, with the longest key: the line is cut), a bad `after` (4400).
    @Test func aRefusedWatchIsAClosedWebSocketWithTheStatusAndTheReason() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.live) { client in
            let longest = String(repeating: "k", count: InstanceKey.maxLength)
            let port = try #require(client.port)
            let unknown = try await webSocketClose(port: port, "/v1/machines/counter/\(longest)/watch")
            #expect(unknown?.code == 4404)
            let reason = try #require(unknown?.reason)
            #expect(reason.utf8.count <= ServiceErrorMiddleware.maxCloseReasonBytes && reason.hasPrefix("no instance counter/kkk") && reason.hasSuffix("…"), "\(reason)")
            _ = try await client.post("b", #"{"action": "increment"}"#)
            let bad = try await webSocketClose(port: port, "/v1/machines/counter/b/watch?after=x")
            #expect(bad?.code == 4400)
            #expect(bad?.reason == "after must be a seq, a number from 0 to 9999999999999999999")
        }
    }

    /// A watcher whose client reads nothing, over a real connection: its socket fills, the
    /// service's writes wait, it falls more than its buffer behind and is ended as too slow;
    /// then, `--watcher-close-timeout` later, its connection is cut and its place among the
    /// instance's watchers is free. Before, the writes waited for ever: the connection and the
    /// place stayed taken, and 64 such clients shut an instance's watchers out.
    @Test func aWatcherThatReadsNothingIsEndedAndItsConnectionCut() async throws {
        // The CSV sheet describes every record it holds: each transition's message is larger
        // than the one before, so a few hundred fill any socket's buffers.
        let sheet = try PluginType.load(path: plugin("CSVTokenizerPlugin"), isolation: .none, options: .init())
        try await withRunningServer(plugins: [sheet]) { configuration in
            configuration.watcherBuffer = 4
            configuration.watcherCloseTimeout = .milliseconds(200)
        } _: { server, port in
            let address = InstanceAddress(plugin: "csv", key: try InstanceKey("s"))
            let instance = try await server.registry.instance(at: address, creating: true)
            let watcher = try await overLoopback { () throws -> LoopbackConnection in
                let connection = try LoopbackConnection(port: port, receiveBuffer: 4096)
                _ = try connection.webSocketHandshake("/v1/machines/csv/s/watch", within: .answerDeadline)
                return connection
            }
            #expect(await eventually { instance.watcherCount == 1 })
            // Transitions until the service lets the watcher go; a bounded number, however
            // large the socket buffers are.
            let body = #"{"action": "feed", "args": [""# + String(repeating: "x", count: 1000) + #"\n"]}"#
            let request = "POST /v1/machines/csv/s HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
            let sender = try await overLoopback { try LoopbackConnection(port: port) }
            var sent = 0
            while instance.watcherCount == 1 && sent < 2_000 {
                let answer = try await overLoopback {
                    try sender.send(request)
                    return try sender.response(within: .answerDeadline)
                }
                #expect(answer?.hasPrefix("HTTP/1.1 200 OK") == true, "\(answer ?? "no answer")")
                sent += 1
            }
            #expect(await eventually { instance.watcherCount == 0 }, "the watcher's place is free after \(sent) transitions")
            #expect(try await overLoopback { try watcher.readsUntilClosed(within: .answerDeadline) }, "its connection was cut")
            let metrics = try await overLoopback { () throws -> String? in
                try sender.send("GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
                return try sender.response(within: .answerDeadline)
            }
            #expect(metrics?.contains("actomaton_watchers 0") == true, "\(metrics ?? "no answer")")
        }
    }

    /// Regression: a watcher fed from the journal (an instance another host owns) never heard
    /// of a DELETE: it stayed open, then took the next instance's transitions as if they went
    /// on. It is closed with 1000, "the instance was deleted", as the owner's watchers are.
    ///
    /// Regression (review): it told a deletion only by the count of transitions falling below
    /// its seq. When the instance made again had as many transitions as the watcher had seen
    /// before it read again (the second case), the watcher went on with the new life's, missing
    /// its first ones and never told of the deletion. Its life is told by where its actions are
    /// in the journal: a later life's are journaled after the ones it read.
    @Test(arguments: [(seen: 3, madeAgain: 1), (seen: 1, madeAgain: 3)])
    func aJournalWatcherIsClosedWhenItsInstanceIsDeleted(seen: Int, madeAgain: Int) async throws {
        let directory = try temporaryDirectory()
        let journal = try PluginJournal(path: directory + "/state.sqlite")
        defer { journal.close() }
        let owner = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                    journal: try ServiceJournal(journal))
        let changes = WokenOnly()
        try await withRunningServer(journal: try ServiceJournal(journal, placement: ElsewherePlacement()), journalChanges: changes) { _, port in
            try await owner.makeApplication().test(.router) { client in
                for _ in 0..<seen { #expect(try await client.post("w", #"{"action": "increment"}"#).status == .ok) }
                let watcher = try await overLoopback { () throws -> LoopbackConnection in
                    let connection = try LoopbackConnection(port: port)
                    let head = try connection.webSocketHandshake("/v1/machines/counter/w/watch?after=0", within: .answerDeadline)
                    #expect(head?.hasPrefix("HTTP/1.1 101") == true, "\(head ?? "no answer")")
                    for seq in 1...seen {
                        let frame = try connection.webSocketTextFrame(within: .answerDeadline)
                        #expect(frame?.contains(#""seq":\#(seq)"#) == true, "\(frame ?? "no frame")")
                    }
                    return connection
                }
                #expect(try await client.execute(uri: "/v1/machines/counter/w", method: .delete).status == .ok)
                for _ in 0..<madeAgain { #expect(try await client.post("w", #"{"action": "add", "args": [100]}"#).status == .ok) }
                // Woken until it answers: a wake before it waits again is not kept.
                var close: (code: Int, reason: String, framesBefore: Int)?
                for _ in 0..<300 where close == nil {
                    changes.wakeAll()
                    close = try await overLoopback { try watcher.webSocketClose(within: .milliseconds(100)) }
                }
                #expect(close?.code == 1000 && close?.reason == "the instance was deleted" && close?.framesBefore == 0, "\(String(describing: close))")
            }
        }
    }

    /// Regression: a watch fed from the journal that was refused closed with 1008 where the
    /// owner closes with 4000 + the status: 4400 for an `after` past the last transition, 4429
    /// past the watcher limit.
    @Test func aJournalWatchIsRefusedWithTheOwnersCodes() async throws {
        let directory = try temporaryDirectory()
        let journal = try PluginJournal(path: directory + "/state.sqlite")
        defer { journal.close() }
        let owner = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                    journal: try ServiceJournal(journal))
        try await withRunningServer(journal: try ServiceJournal(journal, placement: ElsewherePlacement()), journalChanges: WokenOnly()) {
            $0.maxWatchersPerInstance = 1
        } _: { server, port in
            try await owner.makeApplication().test(.router) { client in
                for _ in 0..<3 { #expect(try await client.post("w", #"{"action": "increment"}"#).status == .ok) }
                let past = try await webSocketClose(port: port, "/v1/machines/counter/w/watch?after=4")
                #expect(past?.code == 4400 && past?.reason == "after=4 is past counter/w's last transition, seq 3", "\(String(describing: past))")
                let first = try await overLoopback { () throws -> LoopbackConnection in
                    let connection = try LoopbackConnection(port: port)
                    let head = try connection.webSocketHandshake("/v1/machines/counter/w/watch", within: .answerDeadline)
                    #expect(head?.hasPrefix("HTTP/1.1 101") == true)
                    return connection
                }
                // Its place is taken once its handler runs, after the handshake.
                #expect(await eventually(within: 120) { server.metrics.watcherTotal == 1 })
                let second = try await webSocketClose(port: port, "/v1/machines/counter/w/watch")
                #expect(second?.code == 4429 && second?.reason.contains("already has 1 watchers on this host") == true, "\(String(describing: second))")
                withExtendedLifetime(first) {}
            }
        }
    }

    /// Regression: a watcher fed from the journal (an instance another host owns) that reads
    /// nothing held its connection and its place for ever, the write waiting on its full socket.
    ///
    /// Its socket's send buffer is made small and the WebSocket pings rare, so that a few hundred
    /// kilobytes fill the buffers and only the close timeout can cut the connection. Before,
    /// with the system's buffers (which grow to megabytes) it pushed 20 MB of messages, and
    /// beside the whole suite on 2 cores took minutes; a lighter version was cut by the
    /// pings' timeout (60 s) instead, its buffers holding all of it.
    @Test func aJournalWatcherThatReadsNothingHasItsConnectionCut() async throws {
        let sheet = try PluginType.load(path: plugin("CSVTokenizerPlugin"), isolation: .none, options: .init())
        let path = try temporaryDirectory() + "/state.sqlite"
        do {
            // Transitions whose messages grow with every record.
            let journal = try PluginJournal(path: path, options: JournalOptions(sync: .off))
            let server = ActomatonServer(catalog: PluginCatalog([sheet]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                         journal: try ServiceJournal(journal))
            let body = #"{"action": "feed", "args": [""# + String(repeating: "x", count: 1000) + #"\n"]}"#
            try await server.makeApplication().test(.router) { client in
                // About 1 MB of messages in all: past the watch's buffers (NIO's 64 KiB, a few
                // KiB of sockets), and little beside the suite.
                for _ in 0..<45 {
                    let response = try await client.post("s", body, plugin: "csv")
                    #expect(response.status == .ok)
                }
            }
            journal.close()
        }
        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        try await withRunningServer(plugins: [sheet], journal: try ServiceJournal(journal, placement: ElsewherePlacement()),
                                    journalChanges: WokenOnly()) { configuration in
            configuration.watcherCloseTimeout = .seconds(2)
            configuration.watchSendBufferBytes = 4096
            configuration.webSocketPingInterval = .seconds(3600)
        } _: { server, port in
            let (watcher, head) = try await overLoopback { () throws -> (LoopbackConnection, String?) in
                let connection = try LoopbackConnection(port: port, receiveBuffer: 4096)
                return (connection, try connection.webSocketHandshake("/v1/machines/csv/s/watch?after=0", within: .answerDeadline))
            }
            #expect(head?.hasPrefix("HTTP/1.1 101") == true, "\(head ?? "no answer")")
            // Its first message shows the watcher runs (its place is counted only while it
            // runs: a count of 1 lasts about 2 s, which a loaded machine can miss). Then it
            // reads nothing: the rest fills the buffers, and with pings an hour apart only the
            // stall deadline can end the watcher. The deadlines are a safety net: alone, this
            // takes a few seconds.
            let first = try await overLoopback { try watcher.webSocketTextOrClose(within: .seconds(180)) }
            #expect(first?.opcode == 1, "\(String(describing: first))")
            #expect(await eventually(within: 180) { server.metrics.watcherTotal == 0 }, "the watcher's place is free")
            // Cut, not closed with a reason: what was buffered, then the end of the stream with
            // no close frame before it.
            let (close, ended) = try await overLoopback {
                (try watcher.webSocketClose(within: .seconds(180)), try watcher.readsUntilClosed(within: .seconds(1)))
            }
            #expect(close == nil, "closed with \(String(describing: close)), not cut")
            #expect(ended, "its connection was cut")
        }
    }

    @Test func watchingAnUnknownInstanceIs404() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            let response = try await client.get("/v1/machines/counter/none/watch")
            #expect(response.status == .notFound)
            #expect(response.text == #"{"error":"no instance counter/none"}"#)
        }
    }

    /// A plain GET of a watch route (no WebSocket upgrade) is refused, not answered with an empty 200.
    @Test func watchingWithoutAnUpgradeIs400() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            let created = try await client.post("u", #"{"action": "increment"}"#)
            #expect(created.status == .ok)
            let response = try await client.get("/v1/machines/counter/u/watch")
            #expect(response.status == .badRequest)
            #expect(response.text == #"{"error":"this route takes a WebSocket upgrade (Connection: Upgrade, Upgrade: websocket)"}"#)
        }
    }

    @Test func drainingAnswers503AndSaysNotReady() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            #expect(try await client.post("s", #"{"action": "increment"}"#).status == .ok)
            await server.drain()
            let refused = try await client.post("s", #"{"action": "increment"}"#)
            #expect(refused.status == .serviceUnavailable)
            #expect(refused.text == #"{"error":"the service is shutting down"}"#)
            #expect(try await client.get("/readyz").status == .serviceUnavailable)
            #expect(try await client.get("/healthz").status == .ok)
        }
    }

    /// Regression (audit): a request whose body was still coming when a shutdown's time ran
    /// out was cancelled, and logged as a client's mistake: "400 the request body cannot be
    /// read: CancellationError()". It is the shutdown's 503.
    @Test func aBodyCutOffByTheEndOfAShutdownIs503() async throws {
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let logged = LogStore()
        let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     logger: logged.logger(level: .debug), onListening: { port in portSink.yield(port) })
        var group = ServiceGroupConfiguration(services: [server], logger: Logger(label: "test"))
        group.maximumGracefulShutdownDuration = .milliseconds(200)
        let serviceGroup = ServiceGroup(configuration: group)
        let running = Task { try await serviceGroup.run() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        let connection = try await overLoopback { () throws -> LoopbackConnection in
            let connection = try LoopbackConnection(port: port)
            try connection.send("POST /v1/machines/counter/c HTTP/1.1\r\nHost: localhost\r\nContent-Length: 30\r\n\r\n{\"acti")
            return connection
        }
        #expect(await eventually { server.lifecycle.inFlight == 1 }, "the request is in, its body still coming")
        await serviceGroup.triggerGracefulShutdown()
        _ = try? await running.value
        let warnings = logged.messages(at: .warning)
        #expect(!warnings.contains { $0.contains("CancellationError") }, "\(warnings)")
        #expect(warnings.contains { $0.contains("POST /v1/machines/counter/c: 503 the service is shutting down") }, "\(warnings)")
        withExtendedLifetime(connection) {}
    }

    /// Regression (audit): actions queued on one instance waited for their turn past the end
    /// of a shutdown's time, then were applied: the process lingered 24 s after "stopped",
    /// journaling 381 actions whose clients were told nothing. What still waits for its turn
    /// when the time is up is not applied, and the service ends.
    @Test func actionsWaitingForTheirTurnAreNotAppliedPastTheShutdownsTime() async throws {
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let logged = LogStore()
        var configuration = testConfiguration { _ in }
        configuration.shutdownTimeout = .milliseconds(200)
        let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     configuration: configuration, logger: logged.logger(level: .info),
                                     onListening: { port in portSink.yield(port) })
        var group = ServiceGroupConfiguration(services: [server], logger: Logger(label: "test"))
        group.maximumGracefulShutdownDuration = .milliseconds(200)
        let serviceGroup = ServiceGroup(configuration: group)
        let ended = Mutex(false)
        let running = Task {
            _ = try? await serviceGroup.run()
            ended.withLock { $0 = true }
        }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        let address = InstanceAddress(plugin: "counter", key: try InstanceKey("q"))
        let instance = try await server.registry.instance(at: address, creating: true)
        // The instance's line is held: the POSTs wait behind it.
        let held = try #require(await server.arrivals.enter(address))
        let connections = try await overLoopback { () throws -> [LoopbackConnection] in
            try (0..<3).map { _ in
                let connection = try LoopbackConnection(port: port)
                try connection.send("POST /v1/machines/counter/q HTTP/1.1\r\nHost: localhost\r\nContent-Length: 22\r\n\r\n{\"action\":\"increment\"}")
                return connection
            }
        }
        #expect(await eventually { server.arrivals.entered == 4 }, "the three POSTs wait in line")
        await serviceGroup.triggerGracefulShutdown()
        #expect(await eventually(within: 120) { ended.withLock { $0 } }, "the service ended at the end of its shutdown's time")
        held.leave()
        #expect(await instance.machine.status().seq == 0, "nothing that waited was applied")
        #expect(logged.messages(at: .warning).contains { $0.hasPrefix("--shutdown-timeout (200ms) ran out: 3 requests in flight were cut off") },
                "\(logged.messages(at: .warning))")
        running.cancel()
        withExtendedLifetime(connections) {}
    }

    @Test func gracefulShutdownClosesWatchersWith1001AndEnds() async throws {
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        var configuration = testConfiguration { _ in }
        configuration.shutdownTimeout = .seconds(30)
        let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     configuration: configuration, onListening: { port in portSink.yield(port) })
        let group = ServiceGroup(configuration: .init(services: [server], logger: Logger(label: "test")))
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        let address = InstanceAddress(plugin: "counter", key: try InstanceKey("g"))
        let instance = try await server.registry.instance(at: address, creating: true)
        let watcher = try await overLoopback { () throws -> LoopbackConnection in
            let connection = try LoopbackConnection(port: port)
            _ = try connection.webSocketHandshake("/v1/machines/counter/g/watch", within: .answerDeadline)
            return connection
        }
        #expect(await eventually { instance.watcherCount == 1 })
        await group.triggerGracefulShutdown()
        let close = try await overLoopback { () throws -> (code: Int, reason: String, framesBefore: Int)? in
            let close = try watcher.webSocketClose(within: .answerDeadline)
            try watcher.answerWebSocketClose()
            return close
        }
        #expect(close?.code == 1001)
        #expect(close?.reason == "the service is shutting down")
        try await running.value
        #expect(server.lifecycle.isDraining)
    }

    /// A watcher that takes the close but never answers it held the shutdown for the whole
    /// `--watcher-close-timeout` (a cluster's every restart took its `--shutdown-timeout`).
    @Test func aWatcherThatNeverAnswersTheCloseHoldsTheShutdownOnlyAMoment() async throws {
        let address = InstanceAddress(plugin: "counter", key: try InstanceKey("silent"))
        let ending = try await shutDownWithASilentWatcher(of: "/v1/machines/counter/silent/watch") { server in
            let instance = try await server.registry.instance(at: address, creating: true)
            return { await eventually { instance.watcherCount == 1 } }
        } watching: { _ in }
        #expect(ending.close?.code == 1001)
        #expect(ending.cut, "the service waited for the answer to its close for more than 60 s")
        #expect(ending.ended, "the shutdown waited for the watcher")
    }

    /// Starts a server whose shutdown and watcher close timeouts are 300 s, watches `path` with a
    /// client that takes the close and never answers it, and shuts the server down: the close,
    /// whether the connection was cut within 60 s, and whether the shutdown ended within 60 s.
    /// `prepare` runs once the server listens and returns what tells that the watcher runs;
    /// `watching` reads from the client before the shutdown.
    private func shutDownWithASilentWatcher(
        of path: String, journal: ServiceJournal? = nil, journalChanges: (any JournalChangeSignal)? = nil,
        prepare: (ActomatonServer) async throws -> @Sendable () async -> Bool,
        watching: @escaping @Sendable (LoopbackConnection) throws -> Void
    ) async throws -> (close: (code: Int, reason: String, framesBefore: Int)?, cut: Bool, ended: Bool) {
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        var configuration = testConfiguration { _ in }
        configuration.shutdownTimeout = .seconds(300)
        configuration.watcherCloseTimeout = .seconds(300)
        let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     configuration: configuration, journal: journal, journalChanges: journalChanges,
                                     onListening: { port in portSink.yield(port) })
        var groupConfiguration = ServiceGroupConfiguration(services: [server], logger: Logger(label: "test"))
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(300)
        let group = ServiceGroup(configuration: groupConfiguration)
        let ended = Mutex(false)
        let running = Task {
            try await group.run()
            ended.withLock { $0 = true }
        }
        defer { running.cancel() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        let runs = try await prepare(server)
        let watcher = try await overLoopback { () throws -> LoopbackConnection in
            let connection = try LoopbackConnection(port: port)
            _ = try connection.webSocketHandshake(path, within: .answerDeadline)
            try watching(connection)
            return connection
        }
        #expect(await runs(), "the watcher runs")
        await group.triggerGracefulShutdown()
        let (close, cut) = try await overLoopback { () throws -> ((code: Int, reason: String, framesBefore: Int)?, Bool) in
            let close = try watcher.webSocketClose(within: .answerDeadline)
            return (close, try watcher.readsUntilClosed(within: .answerDeadline))
        }
        return (close, cut, await eventually(within: 60) { ended.withLock { $0 } })
    }

    /// Regression: once a watch's handler had ended (here: refused, no such instance),
    /// Hummingbird waited 15 s for the client to answer its close, and a shutdown with it.
    @Test func aRefusedWatchWhoseClientNeverAnswersIsCutAfterASecond() async throws {
        try await withRunningServer { _, port in
            let (head, close, cut) = try await overLoopback {
                () throws -> (String?, (code: Int, reason: String, framesBefore: Int)?, Bool) in
                let connection = try LoopbackConnection(port: port)
                // Without the handshake's answer, the close read next would be made of its bytes.
                guard let head = try connection.webSocketHandshake("/v1/machines/counter/nobody/watch", within: .answerDeadline) else {
                    return (nil, nil, false)
                }
                let close = try connection.webSocketClose(within: .answerDeadline)
                return (head, close, try connection.readsUntilClosed(within: .seconds(30)))
            }
            try #require(head?.hasPrefix("HTTP/1.1 101") == true, "the handshake's answer: \(head ?? "none within \(Duration.answerDeadline)")")
            #expect(close?.code == 4404)
            #expect(cut, "the connection was still open 30 s after the close, unanswered")
        }
    }

    /// The same for a watcher fed from the journal (in a cluster, of an instance another host
    /// owns): one that never answered the close held a shutdown until its end (2 of 10 restarts
    /// of `make test-cluster`'s hosts took their whole --shutdown-timeout).
    @Test func aJournalWatcherThatNeverAnswersTheCloseHoldsTheShutdownOnlyAMoment() async throws {
        let directory = try temporaryDirectory()
        let journal = try PluginJournal(path: directory + "/state.sqlite")
        defer { journal.close() }
        let owner = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                    journal: try ServiceJournal(journal))
        try await owner.makeApplication().test(.router) { client in
            let response = try await client.post("j", #"{"action": "increment"}"#)
            #expect(response.status == .ok)
        }
        let ending = try await shutDownWithASilentWatcher(of: "/v1/machines/counter/j/watch?after=0",
                                                          journal: try ServiceJournal(journal, placement: ElsewherePlacement()),
                                                          journalChanges: WokenOnly()) { _ in
            { true }
        } watching: { connection in
            // Its first message shows that it runs.
            _ = try connection.webSocketTextFrame(within: .answerDeadline)
        }
        #expect(ending.close?.code == 1001 && ending.close?.reason == "the service is shutting down", "\(String(describing: ending.close))")
        #expect(ending.cut, "the service waited for the answer to its close for more than 60 s")
        #expect(ending.ended, "the shutdown waited for the watcher")
    }
}

@Suite struct LifecycleStateTests {
    @Test func waitingForIdleEndsWhenTheLastRequestLeavesOrOnCancellation() async {
        let lifecycle = ServiceLifecycleState()
        #expect(lifecycle.enter())
        let waiting = Task { await lifecycle.waitUntilIdle() }
        #expect(await eventually { lifecycle.inFlight == 1 })
        lifecycle.leave()
        await waiting.value
        lifecycle.beginDraining()
        #expect(!lifecycle.enter(), "a draining service takes no new request")

        let stuck = ServiceLifecycleState()
        #expect(stuck.enter())
        let cancelled = Task { await stuck.waitUntilIdle() }
        cancelled.cancel()
        await cancelled.value // returns although a request is still in flight
        #expect(stuck.inFlight == 1)
    }
}

/// A placement that says another host owns every instance: this host watches them from the journal.
final class ElsewherePlacement: InstancePlacement {
    func place(_ name: String) throws -> InstancePlace { .elsewhere(advertisedURL) }
    func release(_ name: String) {}
    var advertisedURL: String { "http://127.0.0.1:9" }
}

/// A change signal that tells of no change, and sleeps on no clock: a journal watcher waits
/// until ``wakeAll()`` (a shutdown) or until its task is cancelled (its client left).
final class WokenOnly: JournalChangeSignal, Sendable {
    private let waiters = Mutex<[UInt64: CheckedContinuation<Void, Never>]>([:])
    private let nextWaiter = Atomic<UInt64>(0)

    func waitForChange(of name: String, timeout: Duration) async {
        let id = nextWaiter.add(1, ordering: .relaxed).newValue
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = waiters.withLock { waiters in
                    guard !Task.isCancelled else { return true }
                    waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            waiters.withLock { $0.removeValue(forKey: id) }?.resume()
        }
    }

    func wakeAll() {
        for waiter in waiters.withLock({ waiters in defer { waiters = [:] }; return Array(waiters.values) }) { waiter.resume() }
    }
}

@Suite struct TurnLockTests {
    /// A waiter cancelled while it waits gets no turn, and the ones after it get theirs in order.
    @Test func aCancelledWaiterIsPassedOver() async {
        let lock = TurnLock()
        await lock.acquire()
        let first = Task { () -> Bool in
            guard await lock.acquireUnlessCancelled() else { return false }
            lock.release()
            return true
        }
        #expect(await eventually { lock.waiting == 1 })
        let second = Task { () -> Bool in
            guard await lock.acquireUnlessCancelled() else { return false }
            lock.release()
            return true
        }
        #expect(await eventually { lock.waiting == 2 })
        first.cancel()
        #expect(await first.value == false, "cancelled while waiting: no turn")
        lock.release()
        #expect(await second.value == true, "the turn passed over the cancelled one")
        // Cancelled before it asks: no turn, even when the lock is free.
        let early = Task { () -> Bool in
            while !Task.isCancelled { await Task.yield() }
            return await lock.acquireUnlessCancelled()
        }
        early.cancel()
        #expect(await early.value == false)
        await lock.acquire()
        lock.release()
    }
}
