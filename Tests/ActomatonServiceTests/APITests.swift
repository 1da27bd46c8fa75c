import ActomatonHost
@testable import ActomatonService
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite struct APITests {
    @Test func anActionCreatesTheInstanceAndAnswersItsTransition() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            let response = try await client.post("room-1", #"{"action": "add", "args": [5]}"#)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/json")
            #expect(response.text == #"{"plugin":"counter","key":"room-1","seq":1,"action":"add","state":{"count":5},"started":[],"cancelled":[]}"#)
            let second = try await client.post("room-1", #"{"action": "add", "args": {"amount": 2}}"#)
            #expect(second.text == #"{"plugin":"counter","key":"room-1","seq":2,"action":"add","state":{"count":7},"started":[],"cancelled":[]}"#)
            let other = try await client.post("room-2", #"{"action": "increment"}"#)
            #expect(other.text.contains(#""seq":1"#) && other.text.contains(#""state":{"count":1}"#))
            let status = try await client.get("/v1/machines/counter/room-1")
            #expect(status.status == .ok)
            #expect(status.text == #"{"plugin":"counter","key":"room-1","seq":2,"state":{"count":7},"timers":[],"effects":0}"#)
        }
    }

    @Test func effectsAreReportedAndTimersListed() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            let started = try await client.post("t", #"{"action": "start", "args": [60000]}"#)
            #expect(started.status == .ok)
            #expect(started.text.contains(#""started":["every 60s: increment (id ticker)"]"#), "\(started.text)")
            let status = try await client.get("/v1/machines/counter/t")
            #expect(status.text.contains(#""timers":[{"kind":"repeating","id":"ticker","action":"increment""#), "\(status.text)")
            #expect(status.text.hasSuffix(#""effects":1}"#))
            let stopped = try await client.post("t", #"{"action": "stop"}"#)
            #expect(stopped.text.contains(#""cancelled":["ticker"]"#), "\(stopped.text)")
            #expect(await eventually { (try? await client.get("/v1/machines/counter/t").text.contains(#""timers":[]"#)) == true })
        }
    }

    @Test func badRequestsAre400WithTheCommandLinesMessages() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            let cases: [(String, String)] = [
                (#"{"action": "add", "args": [5"#, "not valid JSON"),
                ("add 5", #"the request body must be a JSON object, as in {\"action\": \"add\", \"args\": [5]}"#),
                (#"{"action": "fly"}"#, "plugin counter: unknown action 'fly' for plugin 'counter' (its actions: "),
                (#"{"action": "add", "args": []}"#, "plugin counter: 'add' takes 1 argument, got 0: add(amount: int64)"),
                (#"{"action": "add", "args": ["five"]}"#, #"plugin counter: argument 1 (amount) of 'add' must be an int64, got the string \"five\""#),
                (#"{"action": "add", "args": {"count": 1}}"#, #"plugin counter: 'add' needs argument \"amount\""#),
                (#"{"action": "add", "args": [1], "color": 2}"#, #"unknown JSON key \"color\""#),
                (#"{"plugin": "tictactoe", "action": "add", "args": [1]}"#, "the body names plugin 'tictactoe' but the path names 'counter'"),
            ]
            for (body, message) in cases {
                let response = try await client.post("k", body)
                #expect(response.status == .badRequest, "\(body)")
                #expect(response.text.hasPrefix(#"{"error":""#) && response.text.contains(message), "\(body): \(response.text)")
            }
            // Not JSON's whitespace (RFC 8259: space, tab, line feed, carriage return).
            for body in ["\u{00A0}{\"action\": \"increment\"}", "\u{2028}{\"action\": \"increment\"}"] {
                let response = try await client.post("k", body)
                #expect(response.status == .badRequest && response.text.contains("the request body must be a JSON object"), "\(body.debugDescription)")
            }
            // None of them created the instance.
            #expect(try await client.get("/v1/machines/counter/k").status == .notFound)
            // Regression (review): JSON's whitespace before the object (a line break) made it read
            // as a line of words, and refused for an action named after the object.
            for body in ["\n{\"action\": \"increment\"}", "\r\n{\"action\": \"increment\"}\r\n", " \n\t{\"action\":\"increment\"}\n"] {
                let response = try await client.post("w", body)
                #expect(response.status == .ok, "\(body.debugDescription): \(response.status) \(response.text)")
            }
            let badKey = try await client.post(String(repeating: "k", count: 129), #"{"action": "increment"}"#)
            #expect(badKey.status == .badRequest)
            #expect(badKey.text == #"{"error":"an instance key is at most 128 bytes, got 129"}"#)
            // Regression: `.` and `..` were keys, which a URL takes as dot-segments: a client or
            // the inspector's links addressed another path.
            for dots in [".", ".."] {
                let dotted = try await client.post(dots, #"{"action": "increment"}"#)
                #expect(dotted.status == .badRequest, "\(dots): \(dotted.text)")
                #expect(dotted.text.contains("an instance key cannot be . or .."), "\(dotted.text)")
            }
            #expect(try await client.post("...", #"{"action": "increment"}"#).status == .ok, "three dots are a key")
            let longest = try await client.post(String(repeating: "k", count: 128), #"{"action": "increment"}"#)
            #expect(longest.status == .ok)
            let badCharacter = try await client.post("a%24b", #"{"action": "increment"}"#)
            #expect(badCharacter.status == .badRequest, "\(badCharacter.text)")
            // Regression: an action's name went into the error as it came, a line break and an
            // escape sequence included (the JSON was valid; the line, once decoded, was not one).
            let forged = try await client.post("k", #"{"action": "a\nb\u2028c\u001b[31m"}"#)
            #expect(forged.status == .badRequest)
            let object = try JSONSerialization.jsonObject(with: Data(forged.text.utf8)) as? [String: String]
            let line = try #require(object?["error"])
            #expect(line.hasPrefix(#"plugin counter: unknown action 'a\nb\u{2028}c\u{1B}[31m' for plugin 'counter'"#), "\(line)")
            #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x2028 })
        }
    }

    @Test func unknownPluginsInstancesAndRoutesAre404() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            let plugin = try await client.post("k", #"{"action": "increment"}"#, plugin: "nope")
            #expect(plugin.status == .notFound)
            #expect(plugin.text == #"{"error":"no plugin named 'nope' is loaded (loaded: counter)"}"#)
            let instance = try await client.get("/v1/machines/counter/absent")
            #expect(instance.status == .notFound)
            #expect(instance.text == #"{"error":"no instance counter/absent"}"#)
            let route = try await client.get("/v2/whatever")
            #expect(route.status == .notFound)
            #expect(route.text.hasPrefix(#"{"error":"#))
        }
    }

    @Test func aMethodARouteDoesNotTakeIs405WithTheMethodsItTakes() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            #expect(try await client.post("k", #"{"action": "increment"}"#).status == .ok)
            // Every route of the table, its parameters filled in; every method either served
            // (any status but 405) or 405 with `Allow`.
            let methods: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options, .trace, .connect]
            for route in RouteMethods.routes {
                let path = "/" + route.segments.map { $0 ?? (route.segments.first == "inspector" ? "app.js" : "counter") }.joined(separator: "/")
                for method in methods where !(method == .delete && path == "/v1/machines/counter/counter") {
                    let response = try await client.execute(uri: path, method: method)
                    if route.methods.contains(method) {
                        #expect(response.status != .methodNotAllowed, "\(method) \(path)")
                    } else {
                        #expect(response.status == .methodNotAllowed, "\(method) \(path)")
                        #expect(response.headers[.allow] == RouteMethods.allowField(route.methods), "\(method) \(path)")
                        #expect(response.text == #"{"error":"\#(path) does not take \#(method.rawValue); it takes \#(RouteMethods.allowField(route.methods))"}"#)
                    }
                }
            }
            // The instance is untouched by every 405.
            #expect(try await client.get("/v1/machines/counter/k").text.contains(#""seq":1"#))
            // A path that names no route stays 404, whatever the method.
            #expect(try await client.execute(uri: "/v1/machines", method: .put).status == .notFound)
            #expect(try await client.execute(uri: "/v1/machines/counter/k/watch/more", method: .post).status == .notFound)
        }
    }

    /// Regression (audit): the router read `/v1/machines/counter/k/` and
    /// `/v1//machines/counter//k` as `/v1/machines/counter/k`, and applied the action; a path
    /// with an empty segment names no route. An unknown plugin's name is cut in the answer.
    @Test func aPathWithAnEmptySegmentNamesNoRoute() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            var statuses: [HTTPResponse.Status] = []
            for path in ["/v1/machines/counter/k/", "/v1//machines/counter/k", "/v1/machines/counter//k", "/v1/machines/counter/k/watch/", "/healthz/"] {
                statuses.append(try await client.execute(uri: path, method: .post, body: ByteBuffer(string: #"{"action": "increment"}"#)).status)
            }
            #expect(statuses == Array(repeating: .notFound, count: 5))
            let root = try await client.get("/")
            #expect(root.status == .ok)
            #expect(try await client.get("/v1/machines/counter/k").status == .notFound, "nothing applied")
            let long = String(repeating: "p", count: 8000)
            let unknown = try await client.get("/v1/machines/\(long)/k")
            #expect(unknown.status == .notFound)
            #expect(unknown.text.hasPrefix(#"{"error":"no plugin named '\#(String(repeating: "p", count: 64))…' is loaded"#), "\(unknown.text.prefix(200))")
        }
    }

    /// Regression (audit): a client that percent-encodes its path segments (the inspector's
    /// pages among them) wrote the key `room:1` as `room%3A1`, which was refused as a character
    /// no key holds. A segment is decoded, then checked: the same instance either way, and a
    /// token's scope reads the decoded plugin. A `%` without two hexadecimal digits, bytes that
    /// are not UTF-8, and an encoded `/` are 400.
    @Test func percentEncodedPathSegmentsNameTheInstanceTheyEncode() async throws {
        let server = makeServer(tokens: AccessTests.table)
        let sender: HTTPFields = [.authorization: "Bearer \(AccessTests.sender)"]
        let reader: HTTPFields = [.authorization: "Bearer \(AccessTests.reader)"]
        try await server.makeApplication().test(.router) { client in
            var statuses: [HTTPResponse.Status] = []
            for path in ["/v1/machines/counter/room%3A1", "/v1/machines/c%6Funter/room:1", "/v1/machines/counter/%72oom%3a1"] {
                statuses.append(try await client.execute(uri: path, method: .post, headers: sender,
                                                         body: ByteBuffer(string: #"{"action": "increment"}"#)).status)
            }
            #expect(statuses == [.ok, .ok, .ok])
            let status = try await client.get("/v1/machines/counter/room:1", headers: reader)
            #expect(status.text.hasPrefix(#"{"plugin":"counter","key":"room:1","seq":3,"state":{"count":3}"#), "\(status.text)")
            #expect(try await client.get("/v1/machines/counter/room%3A1", headers: reader).text == status.text)
            let listed = try await client.get("/v1/machines/c%6Funter", headers: reader)
            #expect(listed.text.contains(#""room:1""#), "\(listed.text)")
            // The scope is the decoded plugin's: the sender may not read it, encoded or not.
            #expect(try await client.get("/v1/machines/c%6Funter/room:1", headers: sender).status == .forbidden)
            let bad = [("/v1/machines/counter/room%3", "a path segment has a % not followed by two hexadecimal digits"),
                       ("/v1/machines/counter/room%zz", "a path segment has a % not followed by two hexadecimal digits"),
                       ("/v1/machines/counter/%C3%28", "a path segment is not UTF-8 once its percent-encoding is decoded"),
                       ("/v1/machines/counter/a%2Fb", "")]
            for (path, message) in bad {
                let answer = try await client.get(path, headers: reader)
                #expect(answer.status == .badRequest, "\(path)")
                #expect(message.isEmpty || answer.text == #"{"error":"\#(message)"}"#, "\(path): \(answer.text)")
            }
        }
    }

    @Test func headAnswersAsGetWithoutABody() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            #expect(try await client.post("k", #"{"action": "add", "args": [3]}"#).status == .ok)
            for path in ["/v1/machines/counter/k", "/v1/machines/counter", "/v1/plugins", "/healthz", "/metrics", "/v1/openapi.yaml", "/",
                         "/v1/machines/counter/absent", "/v1/machines/nope/k"] {
                let get = try await client.get(path)
                let head = try await client.execute(uri: path, method: .head)
                #expect(head.status == get.status, "\(path)")
                #expect(head.headers[.contentType] == get.headers[.contentType], "\(path)")
                #expect(head.body.readableBytes == 0, "\(path)")
            }
            // HEAD reads: it changes nothing, and makes no instance.
            #expect(try await client.get("/v1/machines/counter/k").text.contains(#""seq":1"#))
            #expect(try await client.get("/v1/machines/counter/absent").status == .notFound)
        }
    }

    @Test func thePluginRefusingIs422AndChangesNothing() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            #expect(try await client.post("max", #"{"action": "add", "args": [9223372036854775807]}"#).status == .ok)
            let refused = try await client.post("max", #"{"action": "increment"}"#)
            #expect(refused.status == .unprocessableContent)
            #expect(refused.text == #"{"error":"plugin counter: 'increment' failed: the counter is at its maximum"}"#)
            let status = try await client.get("/v1/machines/counter/max")
            #expect(status.text.contains(#""seq":1,"state":{"count":9223372036854775807}"#), "\(status.text)")
        }
    }

    /// Header fields at the limit are read; one byte past it is 431 with the limit's flag.
    @Test func headersAtTheLimitAreReadAndOnePastIs431() async throws {
        let server = makeServer { $0.maxHeaderSize = 100 }
        let pad = HTTPField.Name("X-Pad")!
        try await server.makeApplication().test(.router) { client in
            // The test client's "Host: localhost" + CRLF (17 bytes), "X-Pad: " + value + CRLF: 17 + 9 + 74 = 100 bytes.
            let atTheLimit = try await client.get("/healthz", headers: [pad: String(repeating: "a", count: 74)])
            #expect(atTheLimit.status == .ok)
            let past = try await client.get("/healthz", headers: [pad: String(repeating: "a", count: 75)])
            #expect(past.status == .requestHeaderFieldsTooLarge)
            #expect(past.text == #"{"error":"the request's header fields are longer than 100 bytes, the limit (--max-header-size)"}"#)
            let twoFields = try await client.get("/healthz", headers: [pad: String(repeating: "a", count: 41), HTTPField.Name("X-Two")!: String(repeating: "b", count: 42)])
            #expect(twoFields.status == .requestHeaderFieldsTooLarge, "every field counts")
        }
    }

    /// Regression: `Host` was not counted (HTTP types carry it as the request's authority),
    /// so a Host of any size up to the parser's own limit passed.
    @Test func theHostFieldCountsTowardsTheHeaderLimit() async throws {
        try await withRunningServer { $0.maxHeaderSize = 100 } _: { _, port in
            // "Host: " + value + CRLF: 8 + 92 = 100 bytes.
            for (length, status) in [(92, "200"), (93, "431")] {
                let answer = try await overLoopback { () throws -> String? in
                    let connection = try LoopbackConnection(port: port)
                    try connection.send("GET /healthz HTTP/1.1\r\nHost: \(String(repeating: "h", count: length))\r\n\r\n")
                    return try connection.response(within: .answerDeadline)
                }
                #expect(answer?.hasPrefix("HTTP/1.1 \(status)") == true, "Host of \(length) bytes: \(answer ?? "no answer")")
            }
        }
    }

    /// Regression: a head past the HTTP parser's own limits (80 KiB, 1,000 fields: above any
    /// `--max-header-size`, at most 64 KiB) was answered 431 with an empty body, where every
    /// other error is a JSON line. At the parser's limit of fields it reaches the service's.
    @Test func aHeadPastTheParsersLimitsIsAnsweredWithAJSONLine() async throws {
        try await withRunningServer { $0.maxHeaderSize = 64 << 10 } _: { _, port in
            let cases = [("X-Big: \(String(repeating: "b", count: 81 << 10))\r\n", "431 Request Header Fields Too Large"),
                         (String(repeating: "X-F: 1\r\n", count: 999), "200 OK"),
                         (String(repeating: "X-F: 1\r\n", count: 1000), "431 Request Header Fields Too Large")]
            for (fields, status) in cases {
                let answer = try await overLoopback { () throws -> String? in
                    let connection = try LoopbackConnection(port: port)
                    try connection.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n" + fields + "\r\n")
                    return try connection.response(within: .answerDeadline)
                }
                #expect(answer?.hasPrefix("HTTP/1.1 \(status)") == true, "\(fields.utf8.count) bytes: \(answer?.prefix(300) ?? "no answer")")
                if status.hasPrefix("431") {
                    let line = "the request is not valid HTTP/1.1: its head is longer than 80 KiB or has more than 1,000 fields, the HTTP parser's limits"
                    #expect(answer?.hasSuffix(#"{"error":"\#(line)"}"#) == true, "\(answer?.prefix(300) ?? "no answer")")
                }
            }
        }
    }

    /// Connections at the limit are served; one past it waits to be accepted (the kernel
    /// holds it) and is served once another closes: nothing refused, nothing lost. Two that
    /// wait while one closes: only one is accepted (one read of the listening socket accepted
    /// up to four, past the limit). A real server: HummingbirdTesting's live server drops the
    /// application's connection limit.
    @Test func connectionsAtTheLimitAreServedAndOnePastWaitsForOneToClose() async throws {
        let request = "POST /v1/machines/counter/c HTTP/1.1\r\nHost: localhost\r\nContent-Length: 23\r\n\r\n{\"action\": \"increment\"}"
        let served = try await withRunningServer({ $0.maxConnections = 2 }) { _, port in try await overLoopback { () throws -> [String?] in
            var held: [LoopbackConnection] = []
            var answers: [String?] = []
            for _ in 0..<2 {
                let connection = try LoopbackConnection(port: port)
                try connection.send(request)
                answers.append(try connection.response(within: .answerDeadline))
                held.append(connection)
            }
            let waiting = try (0..<2).map { _ in try LoopbackConnection(port: port) }
            for connection in waiting { try connection.send(request) }
            // A while with nothing to come: a loaded machine can only make this pass.
            answers.append(try waiting[0].response(within: .milliseconds(300)))
            held.removeFirst()
            answers.append(try waiting[0].response(within: .answerDeadline))
            answers.append(try waiting[1].response(within: .milliseconds(300)))
            held.removeFirst()
            answers.append(try waiting[1].response(within: .answerDeadline))
            return answers
        } }
        func transition(_ answer: String?, seq: Int) -> Bool {
            answer?.hasPrefix("HTTP/1.1 200 OK") == true
                && answer?.hasSuffix(#""seq":\#(seq),"action":"increment","state":{"count":\#(seq)},"started":[],"cancelled":[]}"#) == true
        }
        #expect(served.count == 6)
        #expect(transition(served[0], seq: 1) && transition(served[1], seq: 2), "at the limit: \(served[0] ?? "nothing"), \(served[1] ?? "nothing")")
        #expect(served[2] == nil, "one past the limit is not served while two are open")
        #expect(transition(served[3], seq: 3), "served once one closed: \(served[3] ?? "nothing")")
        #expect(served[4] == nil, "the other one waiting was not accepted with it")
        #expect(transition(served[5], seq: 4), "served once another closed: \(served[5] ?? "nothing")")
    }

    @Test func aBodyAtTheLimitIsReadAndOnePastIs413() async throws {
        let server = makeServer { $0.maxBodySize = 100 }
        try await server.makeApplication().test(.router) { client in
            let json = #"{"action": "increment"}"#
            let atLimit = json + String(repeating: " ", count: 100 - json.utf8.count)
            #expect(try await client.post("b", atLimit).status == .ok)
            let past = try await client.post("b", atLimit + " ")
            #expect(past.status == .contentTooLarge)
            #expect(past.text == #"{"error":"the request body is longer than 100 bytes, the limit (--max-body-size)"}"#)
        }
        // Regression (audit): a body past 1 MiB, an input line's limit, was refused as "the line is
        // longer than 1048576 bytes; it was skipped", whatever --max-body-size (up to 64M) said.
        let large = makeServer { $0.maxBodySize = 4 << 20 }
        try await large.makeApplication().test(.router) { client in
            let json = #"{"action": "increment"}"#
            let answer = try await client.post("b", json + String(repeating: " ", count: (4 << 20) - json.utf8.count))
            #expect(answer.status == .ok, "\(answer.text.prefix(200))")
        }
    }

    @Test func deleteForgetsTheInstance() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            _ = try await client.post("d", #"{"action": "add", "args": [3]}"#)
            let deleted = try await client.execute(uri: "/v1/machines/counter/d", method: .delete)
            #expect(deleted.status == .ok)
            #expect(deleted.text == #"{"plugin":"counter","key":"d","deleted":true}"#)
            #expect(try await client.get("/v1/machines/counter/d").status == .notFound)
            let again = try await client.execute(uri: "/v1/machines/counter/d", method: .delete)
            #expect(again.status == .notFound)
            #expect(again.text == #"{"error":"no instance counter/d"}"#)
            // A new first action starts from the initial state.
            #expect(try await client.post("d", #"{"action": "increment"}"#).text.contains(#""seq":1,"action":"increment","state":{"count":1}"#))
        }
    }

    /// Regression: after a DELETE, a retry under an Idempotency-Key replayed "applied" for an
    /// instance that no longer held the action (and, after a restart, applied it anew).
    @Test func deleteForgetsTheInstancesIdempotentAnswers() async throws {
        let server = makeServer()
        let key: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "once"]
        let replayed = HTTPField.Name("Idempotent-Replayed")!
        try await server.makeApplication().test(.router) { client in
            let first = try await client.post("d", #"{"action": "increment"}"#, headers: key)
            #expect(first.status == .ok)
            #expect(try await client.post("d", #"{"action": "increment"}"#, headers: key).headers[replayed] == "true")
            #expect(try await client.post("other", #"{"action": "increment"}"#, headers: key).status == .ok)
            #expect(try await client.execute(uri: "/v1/machines/counter/d", method: .delete).status == .ok)
            let retry = try await client.post("d", #"{"action": "increment"}"#, headers: key)
            #expect(retry.status == .ok && retry.headers[replayed] == nil, "a new request")
            #expect(retry.text.contains(#""seq":1,"action":"increment","state":{"count":1}"#), "\(retry.text)")
            #expect(try await client.get("/v1/machines/counter/d").status == .ok)
            // Another instance's answer under the same key is kept.
            #expect(try await client.post("other", #"{"action": "increment"}"#, headers: key).headers[replayed] == "true")
        }
    }

    @Test func keysArePagedInByteOrder() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            for key in ["b", "a", "c", "A"] { _ = try await client.post(key, #"{"action": "increment"}"#) }
            let first = try await client.get("/v1/machines/counter?limit=2")
            #expect(first.text == #"{"plugin":"counter","keys":["A","a"],"next":"a"}"#)
            let second = try await client.get("/v1/machines/counter?after=a&limit=2")
            #expect(second.text == #"{"plugin":"counter","keys":["b","c"],"next":null}"#)
            let all = try await client.get("/v1/machines/counter")
            #expect(all.text == #"{"plugin":"counter","keys":["A","a","b","c"],"next":null}"#)
            let zero = try await client.get("/v1/machines/counter?limit=0")
            #expect(zero.status == .badRequest)
            #expect(zero.text == #"{"error":"limit must be a number from 1 to 1000"}"#)
            #expect(try await client.get("/v1/machines/counter?limit=1000").status == .ok)
            #expect(try await client.get("/v1/machines/counter?limit=1001").status == .badRequest)
            #expect(try await client.get("/v1/machines/nope").status == .notFound)
            // Regression (audit): `+1` was a page size (`Int` reads it); digits only now.
            for limit in ["%2B1", "+1", "1.0", "-1", "1e2", "%201"] {
                let odd = try await client.get("/v1/machines/counter?limit=\(limit)")
                #expect(odd.status == .badRequest, "\(limit): \(odd.text)")
                #expect(odd.text == #"{"error":"limit must be a number from 1 to 1000"}"#, "\(limit): \(odd.text)")
            }
            // Regression (audit): a broken escape in the query was told to be no key character.
            for query in ["after=%ZZ", "after=a%2", "limit=%", "after=a&x=%G1"] {
                let broken = try await client.get("/v1/machines/counter?\(query)")
                #expect(broken.status == .badRequest, "\(query): \(broken.text)")
                #expect(broken.text == #"{"error":"the query has a % not followed by two hexadecimal digits"}"#, "\(query): \(broken.text)")
            }
            #expect(try await client.get("/v1/machines/counter?after=%61&limit=%31").text == #"{"plugin":"counter","keys":["b"],"next":"b"}"#)
        }
    }

    /// Regression (audit): an integer written with a fraction or an exponent was read as a
    /// double, and past 2^53 the action applied another integer than the one sent
    /// (`9007199254740993.0` added 9007199254740992). It is read from its digits now.
    @Test func anIntegerWrittenAsADecimalIsAppliedExactly() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            let exact = try await client.post("big", #"{"action": "add", "args": [9007199254740993.0]}"#)
            #expect(exact.text.contains(#""state":{"count":9007199254740993}"#), "\(exact.text)")
            let exponent = try await client.post("big", #"{"action": "add", "args": [-9.007199254740992e15]}"#)
            #expect(exponent.text.contains(#""state":{"count":1}"#), "\(exponent.text)")
            let large = try await client.post("big", #"{"action": "add", "args": [9.223372036854775806e18]}"#)
            #expect(large.text.contains(#""state":{"count":9223372036854775807}"#), "\(large.text)")
            let past = try await client.post("other", #"{"action": "add", "args": [9.223372036854775808e18]}"#)
            #expect(past.status == .badRequest)
            #expect(past.text == #"{"error":"plugin counter: argument 1 (amount) of 'add' is 9223372036854775808, out of range for int64 (-9223372036854775808...9223372036854775807)"}"#,
                    "\(past.text)")
            // A fraction the double loses is refused, not applied as the whole number left.
            let lost = try await client.post("other", #"{"action": "add", "args": [2.0000000000000001]}"#)
            #expect(lost.text == #"{"error":"the number 2.0000000000000001 has a fraction that a double cannot keep: it would be read as 2.0 (column 28)"}"#,
                    "\(lost.text)")
            let fraction = try await client.post("other", #"{"action": "add", "args": [2.5]}"#)
            #expect(fraction.text == #"{"error":"plugin counter: argument 1 (amount) of 'add' must be an int64, got the number 2.5"}"#, "\(fraction.text)")
        }
    }

    /// Regression (audit): a refusal quoted all of what it refused: a 60,000-digit number made
    /// a 60,155-byte error line. What a message quotes is cut at 1 KiB (whole characters) and
    /// says how much more there was.
    @Test func anErrorQuotesAtMostAKibibyteOfWhatCame() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            // Two keys of this many bytes stay under the body's 64 KiB.
            let count = 30_000
            let digits = String(repeating: "1", count: count)
            let bodies = [#"{"action": "add", "args": [\#(digits)]}"#, #"{"action": "add", "args": [-\#(digits)x]}"#,
                          #"{"action": "add", "args": {"a\#(digits)": 1, "a\#(digits)": 2}}"#]
            for body in bodies {
                let refused = try await client.post("k", body)
                #expect(refused.status == .badRequest)
                #expect(refused.text.utf8.count < 1_400, "\(refused.text.prefix(200))")
                #expect(refused.text.contains("… (\(count - 1024) more bytes)") || refused.text.contains("… (\(count + 1 - 1024) more bytes)"),
                        "\(refused.text.suffix(300))")
            }
            // At the limit, all of it.
            let kibibyte = String(repeating: "1", count: 1024)
            let whole = try await client.post("k", #"{"action": "add", "args": [\#(kibibyte)]}"#)
            #expect(whole.text.contains("the number \(kibibyte) is out of range"), "\(whole.text.prefix(200))")
            #expect(!whole.text.contains("more bytes"))
        }
    }

    /// Regression (audit): a body behind a UTF-8 byte order mark was told to be no JSON object.
    @Test func aByteOrderMarkBeforeTheBodyIsNamed() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            let marked = try await client.post("k", "\u{FEFF}{\"action\": \"increment\"}")
            #expect(marked.status == .badRequest)
            #expect(marked.text == #"{"error":"the request body starts with a UTF-8 byte order mark (EF BB BF), which JSON over HTTP does not have (RFC 8259, 8.1): send the object without it"}"#,
                    "\(marked.text)")
            #expect(try await client.get("/v1/machines/counter/k").status == .notFound)
        }
    }

    /// Regression (audit): the actions of timers were in no metric — a delayed action that
    /// failed was only a log line. They are counted by outcome, apart from the clients'; an
    /// instance brought back (its journal replayed) counts none again.
    @Test func theActionsOfEffectsAreCounted() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        for round in 0..<2 {
            let journal = try PluginJournal(path: path)
            defer { journal.close() }
            let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                         journal: try ServiceJournal(journal))
            try await server.makeApplication().test(.router) { client in
                if round == 0 {
                    var statuses: [HTTPResponse.Status] = []
                    statuses.append(try await client.post("t", #"{"action": "add_later", "args": [1, 0.001]}"#).status)
                    statuses.append(try await client.post("f", #"{"action": "add", "args": [9223372036854775806]}"#).status)
                    statuses.append(try await client.post("f", #"{"action": "add_later", "args": [5, 0.001]}"#).status)
                    #expect(statuses == [.ok, .ok, .ok])
                    #expect(await eventually {
                        let metrics = (try? await client.get("/metrics").text) ?? ""
                        return metrics.contains(#"actomaton_effect_actions_total{plugin="counter",outcome="ok"} 1"#)
                            && metrics.contains(#"actomaton_effect_actions_total{plugin="counter",outcome="failed"} 1"#)
                    })
                    #expect(try await client.get("/metrics").text.contains(#"actomaton_actions_total{plugin="counter",outcome="ok"} 3"#))
                } else {
                    #expect(try await client.get("/v1/machines/counter/t").text.contains(#""seq":2"#), "brought back")
                    #expect(!(try await client.get("/metrics").text.contains("actomaton_effect_actions_total{")), "nothing counted again")
                }
            }
        }
    }

    @Test func pluginsHealthReadinessMetricsAndTheDocument() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            let plugins = try await client.get("/v1/plugins")
            #expect(plugins.text.hasPrefix(#"{"plugins":[{"name":"counter","version":"#), "\(plugins.text)")
            #expect(plugins.text.contains(#"{"name":"add","signature":"add(amount: int64)","parameters":[{"name":"amount","type":"int64"}]}"#))
            #expect(try await client.get("/healthz").text == #"{"status":"ok"}"#)
            #expect(try await client.get("/readyz").text == #"{"status":"ready"}"#)
            _ = try await client.post("m", #"{"action": "increment"}"#)
            _ = try await client.post("m", #"{"action": "fly"}"#)
            let metrics = try await client.get("/metrics").text
            #expect(metrics.contains(#"actomaton_actions_total{plugin="counter",outcome="ok"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"actomaton_actions_total{plugin="counter",outcome="bad_request"} 1"#))
            #expect(metrics.contains("actomaton_action_duration_seconds_count{plugin=\"counter\"} 2"))
            #expect(metrics.contains("actomaton_instances_active 1"))
            #expect(metrics.contains("actomaton_watchers 0"))
            #expect(metrics.contains("actomaton_effects_in_flight 0"))
            // Regression (audit): the journal's and the cluster's metrics were served, at 0,
            // where they cannot count.
            for absent in ["actomaton_journal_", "actomaton_requests_forwarded_total", "actomaton_fencing_refusals_total"] {
                #expect(!metrics.contains(absent), "\(absent)")
            }
            // A delayed action an hour away: one effect in flight until it is cancelled.
            #expect(try await client.post("e", #"{"action": "add_later", "args": [2, 3600]}"#).status == .ok)
            #expect(try await client.get("/metrics").text.contains("actomaton_effects_in_flight 1"))
            #expect(try await client.execute(uri: "/v1/machines/counter/e", method: .delete).status == .ok)
            #expect(try await client.get("/metrics").text.contains("actomaton_effects_in_flight 0"))
            // Regression (audit): refusals before the action's turn were not counted: a body over
            // the limit, and a key reused with another body (422).
            _ = try await client.post("m", "{" + String(repeating: " ", count: ServiceConfiguration().maxBodySize) + "}")
            let keyed: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "k-1"]
            #expect(try await client.post("m", #"{"action": "increment"}"#, headers: keyed).status == .ok)
            #expect(try await client.post("m", #"{"action": "increment"}"#, headers: keyed).status == .ok)
            #expect(try await client.post("m", #"{"action": "add", "args": [2]}"#, headers: keyed).status == .unprocessableContent)
            let counted = try await client.get("/metrics").text
            for line in [#"actomaton_actions_total{plugin="counter",outcome="too_large"} 1"#, #"actomaton_actions_total{plugin="counter",outcome="ok"} 3"#,
                         #"actomaton_actions_total{plugin="counter",outcome="replayed"} 1"#, #"actomaton_actions_total{plugin="counter",outcome="refused"} 1"#] {
                #expect(counted.contains(line), "\(line) in \(counted)")
            }
            let document = try await client.get("/v1/openapi.yaml")
            #expect(document.headers[.contentType] == "application/yaml")
            #expect(document.text == OpenAPIDocument.yaml)
        }
    }

    /// Regression (audit): the served document gave a page's maximum as 1,000 whatever
    /// `--max-page-size` said.
    @Test func theServedDocumentGivesTheServicesPageLimit() async throws {
        let server = makeServer { $0.maxPageSize = 5000 }
        try await server.makeApplication().test(.router) { client in
            let document = try await client.get("/v1/openapi.yaml").text
            #expect(document.contains("schema: {type: integer, minimum: 1, maximum: 5000}}"))
            #expect(!document.contains("maximum: 1000}}"))
            #expect(document.utf8.count == OpenAPIDocument.yaml.utf8.count, "only the maximum differs")
        }
    }

    @Test func theServedDocumentIsTheRepositorysOpenAPIFile() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/openapi.yaml").standardized.path
        let file = try String(contentsOfFile: path, encoding: .utf8)
        #expect(file == OpenAPIDocument.yaml)
        #expect(file.hasPrefix("openapi: 3.1.0\n"))
    }
}

import Foundation

extension APITests {
    /// Regression: a DELETE that came while the first request's instance was being made
    /// destroyed it, and answered 404, while the request got a 503. Now the instance is made,
    /// the action applied, then the instance deleted: 200 and 200, and nothing left.
    /// Regression (audit): requests that came while an instance was being made (its worker
    /// starting) or restored all waited for it, and were let go in no order — ten POSTs 2 ms
    /// apart were applied 6, 5, 4, 3, 2, 1, 7, 8, 9, 10 — and POSTs sent after a DELETE were
    /// applied before it, then deleted with it, though each was answered 200. They are applied
    /// in the order they came, the DELETE among them.
    @Test func actionsAndADeleteAreAppliedInTheOrderTheyCame() async throws {
        let counter = try PluginType.load(path: plugin("CounterPlugin"),
                                          isolation: .process(WorkerOptions(executable: "\(pluginDirectory)/actomaton-host")),
                                          options: .init())
        let server = ActomatonServer(catalog: PluginCatalog([counter]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"))
        try await server.makeApplication().test(.router) { client in
            // add 1 … add 5, DELETE, add 6 … add 8: each sent once the one before is in line.
            let adds = [1, 2, 3, 4, 5, nil, 6, 7, 8]
            let answers = try await withThrowingTaskGroup(of: (Int, TestResponse).self) { group in
                for (index, add) in adds.enumerated() {
                    group.addTask {
                        let answer = if let add {
                            try await client.post("ordered", #"{"action": "add", "args": [\#(add)]}"#)
                        } else {
                            try await client.execute(uri: "/v1/machines/counter/ordered", method: .delete)
                        }
                        return (index, answer)
                    }
                    #expect(await eventually { server.arrivals.entered == index + 1 }, "request \(index) never came in")
                }
                var answers: [Int: TestResponse] = [:]
                for try await (index, answer) in group { answers[index] = answer }
                return answers
            }
            let expected = [(1, 1), (2, 3), (3, 6), (4, 10), (5, 15), nil, (1, 6), (2, 13), (3, 21)]
            for (index, seqAndCount) in expected.enumerated() {
                let text = answers[index]?.text ?? "no answer"
                #expect(answers[index]?.status == .ok, "\(index): \(text)")
                if let (seq, count) = seqAndCount {
                    #expect(text.contains(#""seq":\#(seq),"#) && text.contains(#""state":{"count":\#(count)}"#), "\(index): \(text)")
                }
            }
            let final = try await client.get("/v1/machines/counter/ordered").text
            #expect(final.contains(#""seq":3,"#) && final.contains(#"{"count":21}"#), "\(final)")
            #expect(server.arrivals.addressCount == 0, "every request left its place")
        }
    }

    @Test func aDeleteWhileTheInstanceIsBeingMadeWaitsForIt() async throws {
        // In a worker, an instance takes a process start to make: a DELETE can come meanwhile.
        let counter = try PluginType.load(path: plugin("CounterPlugin"),
                                          isolation: .process(WorkerOptions(executable: "\(pluginDirectory)/actomaton-host")),
                                          options: .init())
        let server = ActomatonServer(catalog: PluginCatalog([counter]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"))
        try await server.makeApplication().test(.router) { client in
            var deletedWhileMade = 0
            for round in 0..<12 {
                let key = "race-\(round)"
                async let sent = client.post(key, #"{"action": "increment"}"#)
                // Once the request's instance is being made (or made), the DELETE.
                #expect(await eventually { await server.registry.hasSlot(for: key) })
                let deleted = try await client.execute(uri: "/v1/machines/counter/\(key)", method: .delete)
                let post = try await sent
                #expect(post.status == .ok, "round \(round): \(post.status) \(post.text)")
                #expect(deleted.status == .ok, "round \(round): \(deleted.status) \(deleted.text)")
                #expect(try await client.get("/v1/machines/counter/\(key)").status == .notFound, "round \(round)")
                if deleted.status == .ok { deletedWhileMade += 1 }
            }
            #expect(deletedWhileMade == 12)
        }
    }
}
