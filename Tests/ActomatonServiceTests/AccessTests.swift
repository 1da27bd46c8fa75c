import ComputeOffThePool
import ActomatonHost
@testable import ActomatonService
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
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

    /// Regression (audit): a `#` within a token began a comment and cut the token (a valid one
    /// was refused as too short), and a byte order mark was refused as a character that is not
    /// visible ASCII, without a word of why. A `#` begins a comment only at the start of a word.
    @Test func aHashWithinATokenIsPartOfIt() throws {
        let table = try TokenTable.parse("# the reader\nread#er-token-0123456789 read:counter #all it may do\n", path: "t")
        #expect(table.tokens.map(\.line) == [2])
        #expect(table.authenticate("read#er-token-0123456789")?.scopes == [.read(plugin: "counter")])
        let scope = #expect(throws: TokenFileError.self) { try TokenTable.parse("\(Self.admin) admin#not-a-comment", path: "t") }
        #expect(scope?.description.hasPrefix("t: line 1: unknown scope 'admin#not-a-comment'") == true, "\(String(describing: scope))")
        let mark = #expect(throws: TokenFileError.self) { try TokenTable.parse("\u{FEFF}\(Self.admin) admin", path: "t") }
        #expect(mark?.description == "t: line 1 starts with a UTF-8 byte order mark (EF BB BF), which is not part of a token: save the file without it")
    }

    /// The 10,000 tokens a file may hold: each is found, and a guess is not.
    @Test func theMostTokensAreEachFound() async throws {
        try await computeOffThePool {
            let text = (0..<TokenTable.maxTokens).map { "token-\(String(repeating: "0", count: 10))\($0) read:counter" }.joined(separator: "\n")
            let table = try TokenTable.parse(text, path: "t")
            for index in [0, 1, 4_999, TokenTable.maxTokens - 1] {
                #expect(table.authenticate("token-\(String(repeating: "0", count: 10))\(index)")?.line == index + 1)
            }
            #expect(table.authenticate("token-\(String(repeating: "0", count: 10))\(TokenTable.maxTokens)") == nil)
            let past = #expect(throws: TokenFileError.self) { try TokenTable.parse(text + "\nanother-token-0123456 read:counter", path: "t") }
            #expect(past?.description == "t: more than \(TokenTable.maxTokens) tokens")
        }
    }

    /// Regression (audit): a file with `\r\n` line ends was read as one line (a `Character`
    /// holds `\r\n` whole), so the second token's scopes went to the first: a read-only token
    /// could delete instances. Lines now end at `\n` with an optional `\r`; any other control
    /// character, and a scope naming no possible plugin, is refused.
    @Test func linesEndingInCRLFAreLinesAndControlCharactersAreRefused() throws {
        let crlf = try TokenTable.parse("\(Self.reader) read:counter\r\n\(Self.admin) admin\t# ops\r\n", path: "t")
        #expect(crlf.tokens.map(\.scopes) == [[.read(plugin: "counter")], [.admin]])
        #expect(crlf.tokens.map(\.line) == [1, 2])
        #expect(crlf.authenticate(Self.reader)?.scopes == [.read(plugin: "counter")])
        let lastLine = try TokenTable.parse("\(Self.reader) read:counter\r\n\(Self.admin) admin", path: "t")
        #expect(lastLine.tokens.map(\.scopes) == [[.read(plugin: "counter")], [.admin]])
        let alone = #expect(throws: TokenFileError.self) {
            try TokenTable.parse("\(Self.reader) read:counter\r\(Self.admin) admin", path: "t")
        }
        #expect(alone?.description == "t: line 1: a control character (byte 0x0D) is in the line; lines end with \\n or \\r\\n, "
            + "words are separated by spaces or tabs")
        for control in ["\u{0B}", "\u{0C}", "\u{00}", "\u{7F}", "\u{1B}"] {
            #expect(throws: TokenFileError.self) { try TokenTable.parse("\(Self.reader) read:counter\(control)x", path: "t") }
        }
        for scope in ["read:count-er", "send:", "read:9lives", "read:\u{E9}t\u{E9}", "read:" + String(repeating: "a", count: 200)] {
            let error = #expect(throws: TokenFileError.self) { try TokenTable.parse("\(Self.reader) \(scope)", path: "t") }
            #expect(error?.description.hasPrefix("t: line 1: unknown scope") == true, "\(scope)")
        }
        #expect(try TokenTable.parse("\(Self.reader) read:Counter_2 send:*", path: "t").tokens[0].scopes == [.read(plugin: "Counter_2"), .send(plugin: nil)])
        // Regression (audit): a file of comments only was taken, and every request was 401.
        for empty in ["", "# none yet\n\n", "   \n"] {
            let error = #expect(throws: TokenFileError.self) { try TokenTable.parse(empty, path: "t") }
            #expect(error?.description == "t: holds no token: every request would be refused (401)", "\(empty.debugDescription)")
        }
    }

    /// Regression (audit): an idempotency key was scoped to its token's line; two hosts whose
    /// files listed the same tokens in another order applied a retry twice. A token's identity
    /// is a digest of its secret: the same whatever its line, and not the secret.
    @Test func aTokensIdentityIsTheSameWhateverItsLine() throws {
        let swapped = try TokenTable.parse("\(Self.everything) *\n\n\(Self.sender) send:counter\n", path: "tokens")
        let here = try #require(Self.table.authenticate(Self.sender))
        let there = try #require(swapped.authenticate(Self.sender))
        #expect(here.line != there.line)
        #expect(here.identity == there.identity)
        #expect(here.identity.count == 16 && here.identity.allSatisfy(\.isHexDigit))
        #expect(Set(Self.table.tokens.map(\.identity)).count == Self.table.tokens.count)
        #expect(!Self.sender.contains(here.identity))
        // SHA-256 of "sender-token-0123456789", its first 8 bytes.
        #expect(here.identity == AccessToken.identity(of: Array(Self.sender.utf8)))
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

    /// Regression (audit): the diagram route answers 403 to a token that may not read its
    /// plugin, but the OpenAPI document did not list it. Every operation of a path about one
    /// plugin can be 403, and says so.
    @Test func everyRouteAboutAPluginIsForbiddenOutsideTheScopesAndSaysSo() async throws {
        let server = makeServer(tokens: Self.table)
        try await server.makeApplication().test(.router) { client in
            var statuses: [HTTPResponse.Status] = []
            statuses.append(try await client.get("/v1/plugins/counter/diagram", headers: bearer(Self.sender)).status)
            statuses.append(try await client.get("/v1/machines/counter", headers: bearer(Self.sender)).status)
            statuses.append(try await client.execute(uri: "/v1/machines/counter/k", method: .delete, headers: bearer(Self.reader)).status)
            #expect(statuses == [.forbidden, .forbidden, .forbidden])
        }
        var path = "", method = ""
        var operations: [String: Bool] = [:]
        for line in OpenAPIDocument.yaml.split(separator: "\n") {
            if line.hasPrefix("  /") { (path, method) = (String(line.dropFirst(2).dropLast()), "") }
            if ["    get:", "    post:", "    delete:"].contains(line) { method = String(line.dropFirst(4).dropLast()) }
            guard path.contains("{plugin}"), !method.isEmpty else { continue }
            operations["\(method) \(path)", default: false] = operations["\(method) \(path)", default: false] || line.contains(#""403""#)
        }
        #expect(operations.count == 6, "\(operations.keys.sorted())")
        #expect(operations.filter { !$0.value }.keys.sorted() == [])
    }

    @Test func requestsNeedAValidTokenWithinItsScopes() async throws {
        let server = makeServer(tokens: Self.table)
        try await server.makeApplication().test(.router) { client in
            let body = #"{"action": "increment"}"#
            let missing = try await client.post("k", body)
            #expect(missing.status == .unauthorized)
            #expect(missing.text == #"{"error":"no token: send the header Authorization: Bearer TOKEN"}"#)
            // Regression (audit): a 401 said no scheme to authenticate with (RFC 9110 requires it).
            #expect(missing.headers[.wwwAuthenticate] == #"Bearer realm="actomaton-host""#)
            let wrong = try await client.post("k", body, headers: bearer("not-a-token-0123456789"))
            #expect(wrong.status == .unauthorized)
            #expect(wrong.text == #"{"error":"the token is not valid"}"#)
            #expect(wrong.headers[.wwwAuthenticate] == #"Bearer realm="actomaton-host""#)
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
            // An empty segment names no route: refused before the token is looked at.
            let list = try await client.get("/v1/machines//counter", headers: bearer(Self.sender))
            #expect(list.status == .notFound, "\(list.status)")
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
            #expect(past.text == #"{"error":"the token used up its 3 requests per second (bursts of up to 3), its limit (--max-requests-per-second)"}"#)
            // Regression (audit): a 429 said nothing of when to retry; a third of a second, rounded up.
            #expect(past.headers[.retryAfter] == "1")
            // Another token has its own bucket; time refills this one.
            #expect(try await client.get("/v1/plugins", headers: bearer(Self.reader)).status == .ok)
            time.advance(by: .milliseconds(334))
            #expect(try await client.get("/v1/plugins", headers: bearer(Self.sender)).status == .ok)
            #expect(try await client.get("/v1/plugins", headers: bearer(Self.sender)).status == .tooManyRequests)
        }
    }

    /// Regression: failed authentications were not limited, so a client could guess tokens as
    /// fast as the service answered. Past the limit, an address's requests are 429 before their
    /// token is looked at (a valid one too), until time gives the budget back.
    @Test func failedAuthenticationsOfOneAddressAtTheLimitAndOnePast() async throws {
        let time = TestTime()
        let server = makeServer(tokens: Self.table, time: time) { $0.maxFailedAuthenticationsPerMinute = 3 }
        try await server.makeApplication().test(.router) { client in
            // A valid token, or one outside its scopes (403), is no failed authentication.
            for _ in 0..<5 {
                #expect(try await client.get("/v1/plugins", headers: bearer(Self.sender)).status == .ok)
                #expect(try await client.get("/v1/machines/counter/k", headers: bearer(Self.sender)).status == .forbidden)
            }
            // The third failure is the last one answered 401 …
            #expect(try await client.get("/v1/plugins").status == .unauthorized)
            #expect(try await client.get("/v1/plugins", headers: bearer("guess-0123456789abcdef")).status == .unauthorized)
            #expect(try await client.get("/v1/plugins", headers: [.authorization: "Basic abc"]).status == .unauthorized)
            // … then every request needing a token is 429, even with a valid one; /healthz is not.
            let past = try await client.get("/v1/plugins", headers: bearer("guess-0123456789abcdeg"))
            #expect(past.status == .tooManyRequests)
            #expect(past.text == #"{"error":"more than 3 failed authentications from this address in a minute, its limit "#
                + #"(--max-failed-authentications-per-minute): wait, then retry with a valid token"}"#)
            // 3 a minute: one comes back every 20 s.
            #expect(past.headers[.retryAfter] == "20")
            #expect(try await client.get("/v1/plugins", headers: bearer(Self.sender)).status == .tooManyRequests)
            #expect(try await client.get("/healthz").status == .ok)
            time.advance(by: .seconds(19))
            #expect(try await client.get("/v1/plugins", headers: bearer(Self.sender)).headers[.retryAfter] == "1")
            time.advance(by: .seconds(1))
            #expect(try await client.get("/v1/plugins", headers: bearer(Self.sender)).status == .ok)
            #expect(try await client.get("/v1/plugins", headers: bearer("guess-0123456789abcdeh")).status == .unauthorized)
            #expect(try await client.get("/v1/plugins", headers: bearer(Self.sender)).status == .tooManyRequests)
            time.advance(by: .seconds(60))
            #expect(try await client.get("/v1/plugins", headers: bearer(Self.sender)).status == .ok)
        }
        // 0: no limit.
        let unlimited = makeServer(tokens: Self.table) { $0.maxFailedAuthenticationsPerMinute = 0 }
        let sender = bearer(Self.sender)
        try await unlimited.makeApplication().test(.router) { client in
            for _ in 0..<100 {
                let refused = try await client.get("/v1/plugins")
                #expect(refused.status == .unauthorized)
            }
            let valid = try await client.get("/v1/plugins", headers: sender)
            #expect(valid.status == .ok)
        }
    }

    @Test func clientAddressesAreIPv4AddressesAndIPv6Networks() throws {
        func client(_ text: String, _ port: Int = 1) throws -> ClientAddress {
            ClientAddress(try SocketAddress(ipAddress: text, port: port))
        }
        let a = try client("192.0.2.1")
        #expect(try a == client("192.0.2.1", 2))
        #expect(try a != client("192.0.2.2"))
        #expect(a.bytes == [192, 0, 2, 1])
        let b = try client("2001:db8:1:2:aaaa::1")
        #expect(try b == client("2001:db8:1:2:bbbb::9"), "one /64")
        #expect(try b != client("2001:db8:1:3::1"))
        #expect(ClientAddress(nil).bytes.isEmpty)
        // Regression: on a dual-stack listener every IPv4 client arrives mapped into ::ffff:0:0/96,
        // whose /64 they all share: one client's failures locked every IPv4 client out.
        #expect(try client("::ffff:192.0.2.1") == a)
        #expect(try client("::ffff:192.0.2.2") != a)
    }

    /// The table of failing addresses never grows past its limit: refilled buckets are dropped
    /// to make room, and a new key that finds none is let through untracked.
    @Test func aRateLimiterTracksAtMostItsKeys() {
        let time = TestTime()
        let limiter = RateLimiter<Int>(rate: 2, per: .seconds(60), maxKeys: 2, now: time.read)
        #expect(limiter.admit(1) && limiter.admit(1) && !limiter.admit(1))
        #expect(limiter.admit(2))
        #expect(limiter.trackedKeys == 2)
        // Full: key 3 is not tracked (and not refused).
        #expect(limiter.admit(3) && limiter.admit(3) && limiter.admit(3))
        #expect(limiter.trackedKeys == 2 && limiter.isExhausted(1) && !limiter.isExhausted(3))
        // After 30 s key 2 is full again and makes room; key 1 has one back and stays.
        time.advance(by: .seconds(30))
        #expect(limiter.admit(3))
        #expect(limiter.trackedKeys == 2 && !limiter.isExhausted(1))
        #expect(limiter.admit(3) && !limiter.admit(3))
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

    /// Which `Host` and `Origin` values name this machine, for a service without tokens.
    @Test func aRequestWithoutTokensMustComeFromThisMachine() {
        for authority in ["localhost", "LOCALHOST:8080", "localhost.:80", "127.0.0.1:1", "127.5.6.7", "[::1]:8080", "[::1]",
                          "app.localhost:3000"] {
            #expect(LocalRequests.refusal(authority: authority, origin: nil) == nil, "\(authority)")
        }
        for authority in ["evil.example:19100", "127.0.0.1.evil.example", "localhost.evil.example:1", "[::2]:1", "0.0.0.0:80", "x",
                          "10.0.0.5:8080", "", "[::1"] {
            #expect(LocalRequests.refusal(authority: authority, origin: nil) != nil, "\(authority)")
        }
        for origin in ["http://localhost:3000", "https://127.0.0.1", "http://[::1]:8080", "http://app.localhost"] {
            #expect(LocalRequests.refusal(authority: "127.0.0.1:8080", origin: origin) == nil, "\(origin)")
        }
        for origin in ["null", "https://evil.example", "http://127.0.0.1.nip.io", "http://localhost:1/path", "file://", "localhost", ""] {
            #expect(LocalRequests.refusal(authority: "127.0.0.1:8080", origin: origin) != nil, "\(origin)")
        }
        // A cluster's host is also reached by its --advertise URL's host.
        let advertised = LocalRequests.host(ofURL: "http://Node-1.internal:8080")
        #expect(advertised == "node-1.internal")
        #expect(LocalRequests.refusal(authority: "node-1.internal:8080", origin: nil, alsoAllowed: [advertised!]) == nil)
        #expect(LocalRequests.refusal(authority: "node-2.internal:8080", origin: nil, alsoAllowed: [advertised!]) != nil)
        #expect(LocalRequests.refusal(authority: "node-1.internal.:8080", origin: nil,
                                      alsoAllowed: [LocalRequests.host(ofURL: "http://node-1.INTERNAL.:8080")!]) == nil)
        #expect(LocalRequests.host(ofURL: "http://[::1]:8080") == "::1")
        // One line, the value cut and escaped.
        let long = LocalRequests.refusal(authority: "evil\n" + String(repeating: "e", count: 500), origin: nil) ?? ""
        #expect(!long.contains("\n") && long.utf8.count < 400, "\(long)")
    }

    /// Regression (audit): without tokens, a page of any site could drive the service from the
    /// user's browser — a cross-site `text/plain` POST was applied, and a page of a name the
    /// attacker pointed at 127.0.0.1 (DNS rebinding) could read and delete instances, and watch
    /// them. A request addressed to another name, or sent by a page of another site, is refused
    /// (403) and applies nothing; one from this machine is answered as before.
    @Test func aPageOfAnotherSiteCannotUseAServiceWithoutTokens() async throws {
        try await withRunningServer { server, port in
            func exchange(_ request: String) async throws -> String {
                try await overLoopback { () throws -> String in
                    let connection = try LoopbackConnection(port: port)
                    try connection.send(request)
                    return try connection.response(within: .answerDeadline) ?? "no answer"
                }
            }
            let body = #"{"action":"add","args":[666]}"#
            func post(_ fields: String) -> String {
                "POST /v1/machines/counter/csrf HTTP/1.1\r\n\(fields)Content-Type: text/plain;charset=UTF-8\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
            let crossSite = try await exchange(post("Host: 127.0.0.1:\(port)\r\nOrigin: https://evil.example\r\n"))
            #expect(crossSite.hasPrefix("HTTP/1.1 403"), "\(crossSite)")
            #expect(crossSite.hasSuffix(#"{"error":"the service has no tokens (--tokens), so pages of other sites may not use it; "#
                + #"this request came from a page of 'https://evil.example'"}"#), "\(crossSite)")
            let rebound = try await exchange(post("Host: rebind.evil.example:\(port)\r\n"))
            #expect(rebound.hasPrefix("HTTP/1.1 403"), "\(rebound)")
            #expect(rebound.contains("this one was addressed to 'rebind.evil.example:\(port)'"), "\(rebound)")
            for request in ["GET /v1/machines/counter HTTP/1.1\r\nHost: rebind.evil.example\r\n\r\n",
                            "DELETE /v1/machines/counter/csrf HTTP/1.1\r\nHost: rebind.evil.example\r\n\r\n"] {
                let answer = try await exchange(request)
                #expect(answer.hasPrefix("HTTP/1.1 403"), "\(request): \(answer)")
            }
            // A refused watch is, as every refused watch, a WebSocket closed at once with 4000 + the status.
            let watch = try await overLoopback { () throws -> (code: Int, reason: String, framesBefore: Int)? in
                let connection = try LoopbackConnection(port: port)
                _ = try connection.webSocketHandshake("/v1/machines/counter/csrf/watch", headers: ["Origin: http://evil.example"],
                                                      within: .answerDeadline)
                return try connection.webSocketClose(within: .answerDeadline)
            }
            #expect(watch?.code == 4403 && watch?.reason.hasPrefix("the service has no tokens (--tokens), so pages of other sites") == true,
                    "\(String(describing: watch))")
            #expect(await server.registry.hasSlot(for: "csrf") == false, "nothing applied")
            // Health stays open to any name; this machine's own pages are answered.
            #expect(try await exchange("GET /healthz HTTP/1.1\r\nHost: rebind.evil.example\r\n\r\n").hasPrefix("HTTP/1.1 200"))
            // As does what would need no token with tokens: the inspector's page (its calls are checked).
            #expect(try await exchange("GET / HTTP/1.1\r\nHost: rebind.evil.example\r\n\r\n").hasPrefix("HTTP/1.1 200"))
            let local = try await exchange(post("Host: localhost:\(port)\r\nOrigin: http://127.0.0.1:\(port)\r\n"))
            #expect(local.hasPrefix("HTTP/1.1 200") && local.contains(#""count":666"#), "\(local)")
        }
    }

    /// Regression (audit): a reverse proxy on this machine that forwards its own name as the
    /// `Host` (nginx's `proxy_set_header Host $host`) had every request refused (403) by a
    /// service without tokens, with no way to say the name is this machine's. `--allow-host`
    /// names it: requests addressed to it, and pages of it, are answered; other names are still
    /// refused.
    @Test func aNameAllowedByAllowHostIsThisMachines() async throws {
        try await withRunningServer { configuration in
            configuration.allowedHosts = ["Proxy.Example.", "fd00:0:0:0:0:0:0:1"]
        } _: { (_: ActomatonServer, port: Int) async throws in
            func status(_ fields: String) async throws -> String {
                try await overLoopback { () throws -> String in
                    let connection = try LoopbackConnection(port: port)
                    try connection.send("GET /v1/plugins HTTP/1.1\r\n\(fields)\r\n")
                    return String(try connection.response(within: .answerDeadline)?.prefix(12) ?? "no answer")
                }
            }
            #expect(try await status("Host: proxy.example\r\n") == "HTTP/1.1 200")
            #expect(try await status("Host: PROXY.example.:443\r\nOrigin: https://proxy.example\r\n") == "HTTP/1.1 200")
            #expect(try await status("Host: [fd00::1]:8080\r\n") == "HTTP/1.1 200")
            #expect(try await status("Host: [FD00:0::1]\r\n") == "HTTP/1.1 200")
            #expect(try await status("Host: localhost\r\n") == "HTTP/1.1 200")
            #expect(try await status("Host: other.example\r\n") == "HTTP/1.1 403")
            #expect(try await status("Host: proxy.example.evil\r\n") == "HTTP/1.1 403")
            #expect(try await status("Host: localhost\r\nOrigin: https://evil.example\r\n") == "HTTP/1.1 403")
        }
    }

    /// What `--allow-host` takes: a DNS name, an IPv4 or an IPv6 address, normalized as a
    /// request's host is; not a port, a path, a scheme, an empty label or a label past 63 bytes.
    @Test func allowHostTakesHostNamesOnly() {
        let label = String(repeating: "a", count: 63)
        let longest = [label, label, label, String(repeating: "b", count: 61)].joined(separator: ".")
        #expect(longest.utf8.count == 253)
        for (text, name) in [("Proxy.Example.", "proxy.example"), ("10.0.0.5", "10.0.0.5"), ("[FD00::1]", "fd00::1"), ("::1", "::1"),
                             ("fd00:0:0:0:0:0:0:1", "fd00::1"), ("::ffff:7f00:2", "::ffff:127.0.0.2"),
                             ("x", "x"), (label + ".example", label + ".example"), (longest, longest)] {
            #expect(ServiceConfiguration.allowedHostName(text) == name, "\(text)")
        }
        for text in ["", ".", "a..b", "proxy.example:8080", "http://proxy.example", "proxy.example/x", "pro xy", "prox_y", "é.example",
                     label + "a.example", longest + "b", "[fd00::1", "fd00::zz", "*.example", "[proxy.example]"] {
            #expect(ServiceConfiguration.allowedHostName(text) == nil, "\(text)")
        }
    }
}
