import ActomatonHost
@testable import ActomatonService
import Foundation
import HostCommandLine
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// In a cluster, a request for an instance another host owns is forwarded to it. That host is
/// a peer, and untrusted: only an answer this API gives is passed on, and a forward that failed
/// says whether the request may have been applied.
@Suite struct ForwardingTests {
    /// Answers every forward as `answer` says.
    final class ScriptedForwarder: RequestForwarder {
        let answer: @Sendable () throws -> ForwardedResponse

        init(_ answer: @escaping @Sendable () throws -> ForwardedResponse) {
            self.answer = answer
        }

        func forward(_ request: ForwardedRequest, to owner: String) async throws -> ForwardedResponse {
            try answer()
        }
    }

    /// A transition as an owner writes it, its state `depth` levels deep.
    private static func transition(depth: Int) -> String {
        let state = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        return #"{"plugin":"counter","key":"k","seq":1,"action":"increment","state":"# + state + #","started":[],"cancelled":[]}"#
    }

    private static func answer(_ status: Int, _ contentType: String?, _ body: String) -> @Sendable () throws -> ForwardedResponse {
        {
            var headers = HTTPFields()
            if let contentType { headers[.contentType] = contentType }
            return ForwardedResponse(status: status, headers: headers, body: ByteBuffer(string: body))
        }
    }

    /// Regression: a peer's answer was passed on as it came — a 200 whose body was `hello` or
    /// HTML, a status 999, a 101 after which the client's connection hung. Each is now 502,
    /// and only a status this API uses, with a JSON object, is passed on.
    @Test func onlyAnAnswerThisAPIGivesIsPassedOn() async throws {
        let cases: [(answer: @Sendable () throws -> ForwardedResponse, status: HTTPResponse.Status, passed: String?)] = [
            (Self.answer(200, "application/json", #"{"seq":1}"#), .ok, #"{"seq":1}"#),
            (Self.answer(404, "application/json", #"{"error":"no instance counter/k"}"#), .notFound, #"{"error":"no instance counter/k"}"#),
            (Self.answer(200, "application/json", "hello"), .badGateway, nil),
            (Self.answer(200, "text/html", "<b>evil</b>"), .badGateway, nil),
            (Self.answer(200, nil, #"{"seq":1}"#), .badGateway, nil),
            (Self.answer(200, "application/json", "[1]"), .badGateway, nil),
            (Self.answer(999, "application/json", "{}"), .badGateway, nil),
            (Self.answer(101, "application/json", "{}"), .badGateway, nil),
            (Self.answer(302, "application/json", "{}"), .badGateway, nil),
            // Regression (review): an owner's answer whose state is as deep as a state may be
            // (64 levels) is one level deeper: it was 502, "may have been applied", and so was
            // every retry. One level past that is no answer of this API.
            (Self.answer(200, "application/json", Self.transition(depth: JSONParser.maxDepth)), .ok, Self.transition(depth: JSONParser.maxDepth)),
            (Self.answer(200, "application/json", Self.transition(depth: JSONParser.maxDepth + 1)), .badGateway, nil),
        ]
        // A HEAD's answer has no body.
        try await withForwardingServer(ScriptedForwarder(Self.answer(200, "application/json", ""))) { client in
            let head = try await client.execute(uri: "/v1/machines/counter/k", method: .head)
            #expect(head.status == .ok)
        }
        // Regression: a forwarded HEAD answered `Content-Length: 0`; it gives the owner's length
        // (of the GET's body), when that is a plain number within the limit.
        for (length, passed) in [("82", "82"), ("0", "0"), (String(ServiceRoutes.maxForwardedHeadLength), String(ServiceRoutes.maxForwardedHeadLength)),
                                 (String(ServiceRoutes.maxForwardedHeadLength + 1), "0"), ("-1", "0"), ("+82", "0"), ("82, 82", "0"), ("x", "0")] {
            let answer: @Sendable () throws -> ForwardedResponse = {
                ForwardedResponse(status: 200, headers: [.contentType: "application/json", .contentLength: length], body: ByteBuffer())
            }
            try await withForwardingServer(ScriptedForwarder(answer)) { client in
                let head = try await client.execute(uri: "/v1/machines/counter/k", method: .head)
                #expect(head.status == .ok && head.headers[.contentLength] == passed, "\(length): \(head.headers)")
            }
        }
        for (index, scripted) in cases.enumerated() {
            try await withForwardingServer(ScriptedForwarder(scripted.answer)) { client in
                let response = try await client.post("k", #"{"action": "increment"}"#)
                #expect(response.status == scripted.status, "case \(index)")
                if let passed = scripted.passed {
                    #expect(response.text == passed, "case \(index)")
                } else {
                    #expect(response.text.contains("is owned by the host at http://127.0.0.1:9, which answered status"), "case \(index): \(response.text)")
                }
            }
        }
    }

    /// Regression: a forward that timed out after the request was sent was answered 503,
    /// "retry", though the owner may have applied the action: a client without an
    /// `Idempotency-Key` that retried applied it twice. It is 504, saying so; a request that
    /// never reached the owner stays 503.
    @Test func aFailedForwardSaysWhetherTheRequestMayHaveBeenApplied() async throws {
        try await withForwardingServer(ScriptedForwarder { throw RequestForwardingError("connection refused", mayHaveReachedTheOwner: false) }) { client in
            let response = try await client.post("k", #"{"action": "increment"}"#)
            #expect(response.status == .serviceUnavailable && response.text.contains("could not be reached (connection refused); retry"),
                    "\(response.text)")
        }
        try await withForwardingServer(ScriptedForwarder { throw RequestForwardingError("no answer within 10000 ms", mayHaveReachedTheOwner: true) }) { client in
            let sent = try await client.post("k", #"{"action": "increment"}"#)
            #expect(sent.status == .gatewayTimeout && sent.text.contains("it may have been applied there"), "\(sent.text)")
            let read = try await client.get("/v1/machines/counter/k")
            #expect(read.status == .gatewayTimeout && read.text.contains("did not answer (no answer within 10000 ms); retry"), "\(read.text)")
        }
        // Regression (audit): an owner that answered garbage, or more than the limit, was 504
        // "did not answer"; it answered, badly: 502, still saying it may have been applied.
        try await withForwardingServer(ScriptedForwarder {
            throw RequestForwardingError("the answer is not HTTP: invalid HTTP method", mayHaveReachedTheOwner: true, ownerAnswered: true)
        }) { client in
            let sent = try await client.post("k", #"{"action": "increment"}"#)
            #expect(sent.status == .badGateway && sent.text.contains("whose answer could not be read (the answer is not HTTP: invalid HTTP method); "
                                                                     + "it may have been applied there"), "\(sent.text)")
        }
    }

    /// Regression: an instance whose ownership moved between this host's claim and the
    /// request's turn was answered 421, which the API documents only without forwarding. With
    /// a forwarder it is 503, retry: nothing was applied.
    @Test func anInstanceThatMovedMeanwhileIs503WithAForwarder() {
        let moved = ServiceError.ownedElsewhere(name: "counter/k", owner: "http://127.0.0.1:9")
        let forwarding = ServiceRoutes.movedMeanwhile(moved, forwarding: true)
        #expect(forwarding.status == .serviceUnavailable && forwarding.description.contains("nothing was applied: retry"))
        #expect(ServiceRoutes.movedMeanwhile(moved, forwarding: false) == moved)
        #expect(ServiceRoutes.movedMeanwhile(.notFound("x"), forwarding: true) == .notFound("x"))
    }

    /// Regression: an action the journal refused (fenced: another host took the instance
    /// over) was a 500, "ran but is not acknowledged"; it was not applied, and a retry is safe.
    /// It is 503.
    @Test func anActionTheJournalRefusedIs503() {
        let refused = PluginCallError(.notAcknowledged(action: "increment", journal: PluginJournalError(.fenced("counter/k"), at: "postgres://h/db")),
                                      plugin: "counter")
        let error = ServiceError(refused)
        #expect(error.status == .serviceUnavailable && error.description.hasSuffix("; retry"), "\(error)")
        // Regression (audit): it said "ran but is not acknowledged", as if it had taken effect.
        #expect(error.description.hasPrefix("plugin counter: 'increment' was not applied: postgres://h/db: another host owns counter/k now"), "\(error)")
    }

    private func withForwardingServer(_ forwarder: ScriptedForwarder, _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let journal = try PluginJournal(path: directory + "/state.sqlite")
        defer { journal.close() }
        let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     journal: try ServiceJournal(journal, placement: ElsewherePlacement()), forwarder: forwarder)
        try await server.makeApplication().test(.router) { client in try await body(client) }
    }
}
