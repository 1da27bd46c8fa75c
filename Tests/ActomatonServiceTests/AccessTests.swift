import ActomatonHost
@testable import ActomatonService
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite struct AccessTests {
    static let sender = "sender-token-0123456789"
    static let reader = "reader-token-0123456789"
    static let admin = "admin-token-01234567890"
    static let everything = "star-token-012345678901"

    static let table = try! TokenTable.parse("""
        # tokens for the tests
        \(sender) send:counter   # may send to counter only
        \(reader) read:counter
        \(admin) admin read:*

        \(everything) *
        """, path: "tokens")

    func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

    @Test func tokensAreReadWithTheirScopes() throws {
        #expect(Self.table.tokens.map(\.line) == [2, 3, 4, 6])
        #expect(Self.table.tokens[0].scopes == [.send(plugin: "counter")])
        #expect(Self.table.tokens[2].scopes == [.admin, .read(plugin: nil)])
        #expect(Self.table.authenticate(Self.reader)?.line == 3)
        #expect(Self.table.authenticate("reader-token-012345678") == nil)
        #expect(Self.table.authenticate("") == nil)
        #expect(throws: TokenFileError.self) { try TokenTable.parse("short send:counter", path: "t") }
        let unknown = #expect(throws: TokenFileError.self) { try TokenTable.parse("\(Self.sender) write:counter", path: "t") }
        #expect(unknown?.description == "t: line 1: unknown scope 'write:counter' (known: read:PLUGIN, send:PLUGIN, read:*, send:*, *, admin)")
        let none = #expect(throws: TokenFileError.self) { try TokenTable.parse("\(Self.sender)", path: "t") }
        #expect(none?.description == "t: line 1: the token has no scope")
    }

    @Test func theFileMustBeReadableByNoOneElse() throws {
        let directory = try temporaryDirectory()
        let path = directory + "/tokens"
        try "\(Self.sender) send:counter\n".write(toFile: path, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        let error = #expect(throws: TokenFileError.self) { try TokenTable.load(path: path) }
        #expect(error?.description == "\(path): group or other users can read or write the tokens file (mode 644); run `chmod 600` on it")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(try TokenTable.load(path: path).tokens.count == 1)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory)
        let unsafe = #expect(throws: TokenFileError.self) { try TokenTable.load(path: path) }
        #expect(unsafe?.description.contains("the tokens file is in a directory others can change") == true)
    }

    @Test func requestsNeedAValidTokenWithinItsScopes() async throws {
        let server = makeServer(tokens: Self.table)
        try await server.makeApplication().test(.router) { client in
            let body = #"{"action": "increment"}"#
            let missing = try await client.post("k", body)
            #expect(missing.status == .unauthorized)
            #expect(missing.text == #"{"error":"no token: send the header Authorization: Bearer TOKEN"}"#)
            let wrong = try await client.post("k", body, headers: bearer("not-a-token-0123456789"))
            #expect(wrong.status == .unauthorized)
            #expect(wrong.text == #"{"error":"the token is not valid"}"#)
            let basic = try await client.post("k", body, headers: [.authorization: "Basic \(Self.sender)"])
            #expect(basic.status == .unauthorized)

            #expect(try await client.post("k", body, headers: bearer(Self.sender)).status == .ok)
            // Regression: the scheme's name was case-sensitive; it is not (RFC 9110).
            for scheme in ["bearer ", "BEARER ", "Bearer   "] {
                let answer = try await client.post("k", body, headers: [.authorization: scheme + Self.sender])
                #expect(answer.status == .ok, "\(scheme.debugDescription): \(answer.text)")
            }
            #expect(try await client.post("k", body, headers: [.authorization: "Bearer"]).status == .unauthorized)
            #expect(try await client.post("k", body, headers: [.authorization: "Bearer "]).status == .unauthorized)
            let readOnly = try await client.post("k", body, headers: bearer(Self.reader))
            #expect(readOnly.status == .forbidden)
            #expect(readOnly.text == #"{"error":"the token's scopes do not allow this request (it needs send:counter)"}"#)
            #expect(try await client.post("k", body, headers: bearer(Self.everything)).status == .ok)

            #expect(try await client.get("/v1/machines/counter/k", headers: bearer(Self.reader)).status == .ok)
            #expect(try await client.get("/v1/machines/counter/k", headers: bearer(Self.sender)).status == .forbidden)
            #expect(try await client.get("/v1/machines/counter", headers: bearer(Self.admin)).status == .ok)
            #expect(try await client.get("/v1/plugins", headers: bearer(Self.sender)).status == .ok)
            #expect(try await client.get("/v1/plugins").status == .unauthorized)
            #expect(try await client.get("/healthz").status == .ok)
            #expect(try await client.get("/readyz").status == .ok)

            let notAdmin = try await client.execute(uri: "/v1/machines/counter/k", method: .delete, headers: bearer(Self.everything))
            #expect(notAdmin.status == .forbidden)
            #expect(notAdmin.text == #"{"error":"the token's scopes do not allow this request (it needs admin)"}"#)
            #expect(try await client.execute(uri: "/v1/machines/counter/k", method: .delete, headers: bearer(Self.admin)).status == .ok)
        }
    }

    /// Regression: an empty segment (`/v1/machines//counter/k`) hid the plugin from the scope
    /// check, which then let any token through, while the router, which takes a run of `/` as
    /// one, served the request: a read-only token could send, delete and watch.
    @Test func extraSlashesDoNotWidenAToken() async throws {
        let server = makeServer(tokens: Self.table)
        try await server.makeApplication().test(.router) { client in
            let created = try await client.post("k", #"{"action": "increment"}"#, headers: bearer(Self.sender))
            #expect(created.status == .ok)
            let canonical = ["", "v1", "machines", "counter", "k"]
            var variants: [String] = []
            for index in canonical.indices {
                var parts = canonical
                parts[index] += "/"
                variants.append(parts.joined(separator: "/"))
            }
            variants += ["//v1//machines//counter//k", "///v1/machines/counter/k", "/v1/machines/counter/k/"]
            for path in variants {
                let send = try await client.execute(uri: path, method: .post, headers: bearer(Self.reader), body: ByteBuffer(string: #"{"action": "increment"}"#))
                #expect(send.status == .forbidden || send.status == .notFound, "POST \(path) with read:counter: \(send.status)")
                let read = try await client.execute(uri: path, method: .get, headers: bearer(Self.sender))
                #expect(read.status == .forbidden || read.status == .notFound, "GET \(path) with send:counter: \(read.status)")
                let delete = try await client.execute(uri: path, method: .delete, headers: bearer(Self.everything))
                #expect(delete.status == .forbidden || delete.status == .notFound, "DELETE \(path) without admin: \(delete.status)")
            }
            let list = try await client.get("/v1/machines//counter", headers: bearer(Self.sender))
            #expect(list.status == .forbidden, "\(list.status)")
            #expect(try await client.get("/v1/machines/counter/k", headers: bearer(Self.reader)).text.contains(#""seq":1"#), "applied once, deleted never")
        }
    }

    @Test func requirementsFollowThePath() {
        #expect(AccessRequirement.of(method: "POST", path: "/v1/machines//counter/k") == .send("counter"))
        #expect(AccessRequirement.of(method: "POST", path: "//v1/machines/counter") == .send("counter"))
        #expect(AccessRequirement.of(method: "POST", path: "/v1/machines/counter/k") == .send("counter"))
        #expect(AccessRequirement.of(method: "GET", path: "/v1/machines/counter/k/watch") == .read("counter"))
        #expect(AccessRequirement.of(method: "GET", path: "/v1/machines/counter") == .read("counter"))
        #expect(AccessRequirement.of(method: "DELETE", path: "/v1/machines/counter/k") == .admin)
        #expect(AccessRequirement.of(method: "GET", path: "/metrics") == .anyToken)
        #expect(AccessRequirement.of(method: "GET", path: "/healthz") == .none)
        #expect(AccessRequirement.of(method: "GET", path: "/v1/machines/") == .anyToken)
    }

    @Test func eachTokenHasItsRequestsPerSecondAtTheLimitAndOnePast() async throws {
        let time = TestTime()
        let server = makeServer(tokens: Self.table, time: time) { $0.maxRequestsPerSecond = 3 }
        try await server.makeApplication().test(.router) { client in
            for _ in 0..<3 { #expect(try await client.get("/v1/plugins", headers: bearer(Self.sender)).status == .ok) }
            let past = try await client.get("/v1/plugins", headers: bearer(Self.sender))
            #expect(past.status == .tooManyRequests)
            #expect(past.text == #"{"error":"the token sent more than 3 requests in a second, its limit (--max-requests-per-second)"}"#)
            // Another token has its own bucket; time refills this one.
            #expect(try await client.get("/v1/plugins", headers: bearer(Self.reader)).status == .ok)
            time.advance(by: .milliseconds(334))
            #expect(try await client.get("/v1/plugins", headers: bearer(Self.sender)).status == .ok)
            #expect(try await client.get("/v1/plugins", headers: bearer(Self.sender)).status == .tooManyRequests)
        }
    }

    @Test func withoutTokensOnlyALoopbackAddressIsAccepted() throws {
        for text in ["127.0.0.1:8080", "127.1.2.3:0", "[::1]:8080", "localhost:80"] {
            #expect(throws: Never.self) { try ListenAddress(text).checkExposure(hasTokens: false) }
        }
        let exposed = #expect(throws: ListenAddressError.self) { try ListenAddress("0.0.0.0:8080").checkExposure(hasTokens: false) }
        #expect(exposed?.description == "refusing to listen on 0.0.0.0:8080 without --tokens: anyone who can reach it could send actions to every "
            + "instance; pass --tokens FILE, or listen on a loopback address such as 127.0.0.1")
        #expect(throws: Never.self) { try ListenAddress("0.0.0.0:8080").checkExposure(hasTokens: true) }
        #expect(throws: ListenAddressError.self) { try ListenAddress("[::]:8080").checkExposure(hasTokens: false) }
        #expect(throws: ListenAddressError.self) { try ListenAddress("8080") }
        #expect(throws: ListenAddressError.self) { try ListenAddress("127.0.0.1:65536") }
        #expect(throws: ListenAddressError.self) { try ListenAddress("example.com:80") }
    }
}
