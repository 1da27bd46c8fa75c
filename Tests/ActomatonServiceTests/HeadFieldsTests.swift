@testable import ActomatonService
import NIOHTTP1
import Testing

/// ``HeadFields`` finds, in one pass, what ``RequestGate`` used to look up field by field: it
/// must find the same as those lookups, whatever the fields' case, count and values.
@Suite struct HeadFieldsTests {
    static let hostValues = ["127.0.0.1:8080", "", " ", "\t", "a,b", "a,", ",", " a ", "[::1]:80", "a, b"]

    @Test(arguments: [0, 1, 2], hostValues)
    func hostsAreCountedAsTheCanonicalFormCountsThem(fields: Int, value: String) {
        for name in ["Host", "host", "HOST", "hOsT"] {
            var headers = HTTPHeaders([("Content-Type", "application/json")])
            for _ in 0..<fields { headers.add(name: name, value: value) }
            let found = HeadFields(headers)
            #expect(found.hostCount(headers) == headers[canonicalForm: "host"].count, "\(fields) × \(name): '\(value)'")
            #expect(found.host == headers.first(name: "host"))
        }
    }

    @Test func theOtherFieldsAreFoundInAnyCaseAndOnlyByTheirWholeName() {
        let cases: [(String, KeyPath<HeadFields, Bool>)] = [
            ("Transfer-Encoding", \.hasCoding), ("content-encoding", \.hasCoding), ("UPGRADE", \.hasUpgrade), ("Expect", \.hasExpect),
        ]
        for (name, found) in cases {
            #expect(HeadFields(HTTPHeaders([(name, "x")]))[keyPath: found], "\(name)")
            #expect(!HeadFields(HTTPHeaders([(name + "s", "x")]))[keyPath: found], "\(name)s")
            #expect(!HeadFields(HTTPHeaders([(String(name.dropLast()), "x")]))[keyPath: found], "\(name.dropLast())")
        }
        let none = HeadFields(HTTPHeaders([("Host", "a"), ("Content-Length", "5"), ("Connection", "keep-alive"), ("Hosts", "b")]))
        #expect(!none.hasCoding && !none.hasUpgrade && !none.hasExpect)
        #expect(none.host == "a")
    }
}
