import ActomatonHost
@testable import ActomatonService
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import HummingbirdWSTesting
import NIOWebSocket
import Synchronization
import Testing

@Suite struct InspectorTests {
    static let reader = "reader-token-0123456789"
    static let sender = "sender-token-0123456789"
    static let table = try! TokenTable.parse("""
        \(reader) read:counter
        \(sender) send:counter
        """, path: "tokens")

    static func hex(_ text: String) -> String {
        text.utf8.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    @Test func theEmbeddedPagesAreTheRepositorysFiles() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../inspector").standardized
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { [".html", ".js", ".css", ".svg"].contains(where: $0.hasSuffix) }.sorted()
        #expect(names.count == InspectorAssets.files.count, "run `make inspector-assets`")
        for name in names {
            let file = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            #expect(InspectorAssets.files[name]?.text == file, "\(name) differs from its embedded copy: run `make inspector-assets`")
        }
    }

    @Test func thePagesNeedNoTokenAndKeepToThemselves() async throws {
        let server = makeServer(tokens: Self.table)
        try await server.makeApplication().test(.router) { client in
            let page = try await client.get("/")
            #expect(page.status == .ok)
            #expect(page.headers[.contentType] == "text/html; charset=utf-8")
            #expect(page.text.contains("<title>Actomaton inspector</title>"))
            let policy = try #require(page.headers[HTTPField.Name("Content-Security-Policy")!])
            #expect(policy.contains("script-src 'self'") && policy.contains("connect-src 'self'") && !policy.contains("unsafe"))
            // Every form is the page's script's: none is submitted (a form a diagram smuggled in neither).
            #expect(policy.contains("form-action 'none'"))
            #expect(try await client.get("/inspector/inspector.js").headers[.contentType] == "text/javascript; charset=utf-8")
            #expect(try await client.get("/play/tictactoe/room-1").text.contains("<title>Tic-tac-toe"))
            #expect(try await client.get("/play/platformer/room-1").status == .ok)
            // The data is not: the pages ask for a token.
            #expect(try await client.get("/v1/plugins").status == .unauthorized)
            let unknownFile = try await client.get("/inspector/secrets.txt")
            #expect(unknownFile.status == .notFound)
            #expect(unknownFile.text == #"{"error":"no file secrets.txt"}"#)
            let unknownGame = try await client.get("/play/chess/room-1")
            #expect(unknownGame.status == .notFound)
            #expect(unknownGame.text == #"{"error":"no game named chess; there are tictactoe, platformer"}"#)
            #expect(try await client.get("/play/tictactoe/\(String(repeating: "k", count: 129))").status == .badRequest)
            #expect(try await client.execute(uri: "/", method: .post).status == .unauthorized, "only GET is free")
        }
    }

    /// Regression (audit): the API's answers had no `X-Content-Type-Options: nosniff`, so a
    /// browser could read a plugin's text in an instance's state as a page of another type.
    @Test func everyAnswerSaysNoSniff() async throws {
        let server = makeServer(tokens: Self.table)
        try await server.makeApplication().test(.router) { client in
            let reader: HTTPFields = [.authorization: "Bearer \(Self.reader)"]
            let sender: HTTPFields = [.authorization: "Bearer \(Self.sender)"]
            let answers = [
                try await client.get("/"), try await client.get("/healthz"), try await client.get("/v1/openapi.yaml", headers: reader),
                try await client.get("/metrics", headers: reader), try await client.get("/v1/plugins", headers: reader),
                try await client.post("n", #"{"action": "increment"}"#, headers: sender),
                try await client.get("/v1/machines/counter/n", headers: reader),
                try await client.get("/v1/plugins"), try await client.get("/v1/machines/counter/none", headers: reader),
                try await client.get("/v1/nothing-here", headers: reader),
            ]
            #expect(answers.map(\.status.code) == [200, 200, 200, 200, 200, 200, 200, 401, 404, 404])
            for answer in answers {
                #expect(answer.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff", "\(answer.status): \(answer.headers)")
            }
        }
    }

    @Test func aTokenIsReadFromTheWebSocketSubprotocol() throws {
        let secret = Self.reader
        var headers: HTTPFields = [WebSocketToken.protocolHeader: "actomaton.v1, actomaton.token.\(Self.hex(secret))"]
        #expect(try WebSocketToken.secret(in: headers) == secret)
        #expect(WebSocketToken.upgradeHeaders(for: headers) == [WebSocketToken.protocolHeader: "actomaton.v1"])
        headers = [WebSocketToken.protocolHeader: "chat"]
        #expect(try WebSocketToken.secret(in: headers) == nil)
        #expect(WebSocketToken.upgradeHeaders(for: headers) == [:])
        // At the limit (a token of 256 bytes) and one byte past it.
        let longest = String(repeating: "61", count: TokenTable.maxTokenLength)
        #expect(try WebSocketToken.secret(in: [WebSocketToken.protocolHeader: "actomaton.token.\(longest)"])?.utf8.count == 256)
        for bad in [longest + "61", "abc", "zz", ""] {
            let error = #expect(throws: ServiceError.self) {
                try WebSocketToken.secret(in: [WebSocketToken.protocolHeader: "actomaton.token.\(bad)"])
            }
            #expect(error?.description == "the token is not valid")
        }
    }

    @Test func aBrowserWatchesWithItsTokenAsASubprotocol() async throws {
        let server = makeServer(tokens: Self.table)
        try await server.makeApplication().test(.live) { client in
            let created = try await client.post("w", #"{"action": "add", "args": [1]}"#, headers: [.authorization: "Bearer \(Self.sender)"])
            #expect(created.status == .ok)
            let instance = try await server.registry.instance(at: InstanceAddress(plugin: "counter", key: try InstanceKey("w")), creating: false)
            let received = Mutex<[String]>([])
            let offered = WebSocketClientConfiguration(additionalHeaders: [
                WebSocketToken.protocolHeader: "actomaton.v1, actomaton.token.\(Self.hex(Self.reader))",
            ])
            try await client.ws("/v1/machines/counter/w/watch?after=1", configuration: offered) { inbound, _, _ in
                #expect(await eventually { instance.watcherCount == 1 })
                _ = try await instance.machine.send(try counterType.action("increment", []))
                var messages = inbound.messages(maxSize: 1 << 16).makeAsyncIterator()
                if case let .text(text)? = try await messages.next() { received.withLock { $0.append(text) } }
            }
            #expect(received.withLock { $0 }.first?.contains(#""seq":2"#) == true)
            // A token that may not read, and one that is not a token, are refused: a plain request
            // with its status, a WebSocket client with a close of 4000 + that status and the
            // line (it takes the subprotocol the browser offered, or the browser would see no
            // reason at all).
            for (secret, status, line) in [(Self.sender, HTTPResponse.Status.forbidden, "the token's scopes do not allow this request (it needs read:counter)"),
                                           ("not-a-token-0123456789", .unauthorized, "the token is not valid")] {
                let offered: HTTPFields = [WebSocketToken.protocolHeader: "actomaton.v1, actomaton.token.\(Self.hex(secret))"]
                #expect(try await client.get("/v1/machines/counter/w/watch", headers: offered).status == status)
                let close = try await webSocketClose(port: try #require(client.port), "/v1/machines/counter/w/watch",
                                                     headers: ["\(WebSocketToken.protocolHeader): actomaton.v1, actomaton.token.\(Self.hex(secret))"])
                #expect(close?.status == "HTTP/1.1 101 Switching Protocols")
                #expect(close?.code == 4000 + status.code)
                #expect(close?.reason == line)
            }
        }
    }

    @Test func aTimerSaysWhenItIsDue() {
        let armed = ContinuousClock.now
        let delayed = PendingTimer(kind: "delayed", id: nil, text: "after 1s: add 2", action: "add", interval: .seconds(1), armed: armed)
        #expect(delayed.dueIn(at: armed + .milliseconds(300)) == .milliseconds(700))
        #expect(delayed.dueIn(at: armed + .seconds(3)) == .zero, "a due timer is due now, not overdue")
        let repeating = PendingTimer(kind: "repeating", id: "ticker", text: "every 1s: increment", action: "increment",
                                     interval: .seconds(1), armed: armed)
        #expect(repeating.dueIn(at: armed + .milliseconds(2300)) == .milliseconds(700))
        #expect(repeating.dueIn(at: armed) == .seconds(1))
        #expect(ServiceJSON.milliseconds(.microseconds(1)) == 1, "rounded up: not yet due is never 0")
        #expect(ServiceJSON.milliseconds(.seconds(2)) == 2000)
    }

    @Test func theStatusCountsDownEachTimer() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            _ = try await client.post("t", #"{"action": "add_later", "args": [1, 60]}"#)
            let status = try await client.get("/v1/machines/counter/t")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(status.text.utf8)) as? [String: Any])
            let timer = try #require((object["timers"] as? [[String: Any]])?.first)
            #expect(timer["interval_ms"] as? Int == 60_000)
            let due = try #require(timer["due_in_ms"] as? Int)
            #expect((1...60_000).contains(due))
        }
    }
}
