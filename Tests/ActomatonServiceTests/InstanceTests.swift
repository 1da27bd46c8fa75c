import ActomatonHost
@testable import ActomatonService
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

@Suite struct InstanceTests {
    /// An action a timer sent that fails has no request to answer: the service logs it, one
    /// line at warning after the instance's address (it went nowhere before).
    @Test func aTimersFailedActionIsReportedInOneLine() async throws {
        let failures = Mutex<[String]>([])
        let machine = try InstanceMachine(type: counterType, onFailure: { line in failures.withLock { $0.append(line) } }) { _ in }
        try await machine.start()
        _ = try await machine.send(try counterType.action("add", [.int(1)]))
        _ = try await machine.send(try counterType.action("add_later", [.int(.max), .float(0)]))
        #expect(await eventually { failures.withLock { !$0.isEmpty } })
        #expect(failures.withLock { $0 } == ["'add 9223372036854775807' failed: adding that amount would overflow the counter (sent by a delayed action)"])
        await machine.close()
    }

    @Test func eightClientsAddingToOneInstanceGetTheExactSumWithIncreasingSeq() async throws {
        let server = makeServer()
        let clients = 8
        let adds = 1000
        try await server.makeApplication().test(.router) { client in
            let seqs = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<clients {
                    group.addTask {
                        var seen: [Int] = []
                        for _ in 0..<adds {
                            let response = try await client.post("shared", #"{"action": "add", "args": [1]}"#)
                            guard response.status == .ok else { return [] }
                            let text = response.text
                            let start = text.range(of: #""seq":"#)!.upperBound
                            seen.append(Int(text[start...].prefix { $0.isNumber })!)
                        }
                        return seen
                    }
                }
                var all: [[Int]] = []
                for try await seen in group { all.append(seen) }
                return all
            }
            for seen in seqs {
                #expect(seen.count == adds)
                #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 < $1 }, "each client sees its seq strictly increase")
            }
            #expect(Set(seqs.joined()) == Set(1...(clients * adds)), "every transition once, none lost")
            let status = try await client.get("/v1/machines/counter/shared")
            #expect(status.text.contains(#""seq":\#(clients * adds),"state":{"count":\#(clients * adds)}"#), "\(status.text)")
        }
    }

    @Test func instancesAreLimitedInAllAndPerPluginAtTheLimitAndOnePast() async throws {
        let all = makeServer { $0.maxInstances = 2 }
        try await all.makeApplication().test(.router) { client in
            // A repeating action keeps an instance busy: it cannot be passivated to make room.
            #expect(try await client.post("a", #"{"action": "start", "args": [60000]}"#).status == .ok)
            #expect(try await client.post("b", #"{"action": "start", "args": [60000]}"#).status == .ok)
            let past = try await client.post("c", #"{"action": "increment"}"#)
            #expect(past.status == .tooManyRequests)
            #expect(past.text == #"{"error":"the service already holds 2 instances, its limit (--max-instances), and none is idle"}"#)
            // An existing instance still takes actions; a deleted one frees its place.
            #expect(try await client.post("a", #"{"action": "increment"}"#).status == .ok)
            _ = try await client.execute(uri: "/v1/machines/counter/b", method: .delete)
            #expect(try await client.post("c", #"{"action": "increment"}"#).status == .ok)
            _ = try await client.post("a", #"{"action": "stop"}"#)
        }
        let perPlugin = makeServer { $0.maxInstancesPerPlugin = 1 }
        try await perPlugin.makeApplication().test(.router) { client in
            #expect(try await client.post("a", #"{"action": "increment"}"#).status == .ok)
            let past = try await client.post("b", #"{"action": "increment"}"#)
            #expect(past.status == .tooManyRequests)
            #expect(past.text == #"{"error":"plugin counter already has 1 instances, its limit (--max-instances-per-plugin)"}"#)
        }
    }

    @Test func aRetryWithTheSameIdempotencyKeyIsReplayedNotApplied() async throws {
        let time = TestTime()
        let server = makeServer(time: time) { $0.idempotencyWindow = .seconds(60) }
        try await server.makeApplication().test(.router) { client in
            let key: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "order-42"]
            let body = #"{"action": "add", "args": [10]}"#
            let first = try await client.post("i", body, headers: key)
            #expect(first.status == .ok)
            #expect(first.headers[HTTPField.Name("Idempotent-Replayed")!] == nil)
            let retry = try await client.post("i", body, headers: key)
            #expect(retry.status == .ok)
            #expect(retry.text == first.text)
            #expect(retry.headers[HTTPField.Name("Idempotent-Replayed")!] == "true")
            #expect(try await client.get("/v1/machines/counter/i").text.contains(#""seq":1,"state":{"count":10}"#))
            // Regression (audit): the body's bytes were compared, and a client that wrote its
            // retry's JSON again otherwise was refused 422; the action asked for is compared.
            for rewritten in [#"{"args":[10],"action":"add"}"#, #" { "action" : "add", "args" : [ 10 ] } "#,
                              #"{"action": "add", "args": {"amount": 10}}"#, #"{"plugin": "counter", "action": "add", "args": [10]}"#] {
                let again = try await client.post("i", rewritten, headers: key)
                #expect(again.status == .ok && again.text == first.text, "\(rewritten): \(again.text)")
                #expect(again.headers[HTTPField.Name("Idempotent-Replayed")!] == "true", "\(rewritten)")
            }
            #expect(try await client.get("/v1/machines/counter/i").text.contains(#""seq":1,"state":{"count":10}"#))

            let other = try await client.post("i", #"{"action": "add", "args": [11]}"#, headers: key)
            #expect(other.status == .unprocessableContent)
            #expect(other.text == #"{"error":"the Idempotency-Key was used for another request to this instance"}"#)
            // The same key on another instance is another request.
            #expect(try await client.post("j", body, headers: key).headers[HTTPField.Name("Idempotent-Replayed")!] == nil)

            // A refusal is kept too: it says what became of the action.
            let badKey: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "bad"]
            let bad = try await client.post("i", #"{"action": "fly"}"#, headers: badKey)
            #expect(bad.status == .badRequest)
            #expect(try await client.post("i", #"{"action": "fly"}"#, headers: badKey).headers[HTTPField.Name("Idempotent-Replayed")!] == "true")

            // After the window the key is forgotten.
            time.advance(by: .seconds(61))
            let later = try await client.post("i", body, headers: key)
            #expect(later.headers[HTTPField.Name("Idempotent-Replayed")!] == nil)
            #expect(later.text.contains(#""seq":2,"action":"add","state":{"count":20}"#))

            let tooLong = try await client.post("i", body, headers: [HTTPField.Name("Idempotency-Key")!: String(repeating: "x", count: 129)])
            #expect(tooLong.status == .badRequest)
            #expect(tooLong.text == #"{"error":"an Idempotency-Key is 1 to 128 bytes of visible ASCII characters"}"#)
            let longest = try await client.post("i", body, headers: [HTTPField.Name("Idempotency-Key")!: String(repeating: "x", count: 128)])
            #expect(longest.status == .ok)
        }
    }

    @Test func idempotencyKeysAreLimited() async throws {
        let server = makeServer { $0.maxIdempotencyKeys = 1 }
        try await server.makeApplication().test(.router) { client in
            let body = #"{"action": "increment"}"#
            #expect(try await client.post("i", body, headers: [HTTPField.Name("Idempotency-Key")!: "one"]).status == .ok)
            let past = try await client.post("i", body, headers: [HTTPField.Name("Idempotency-Key")!: "two"])
            #expect(past.status == .tooManyRequests)
            #expect(past.text == #"{"error":"the service already keeps 1 idempotency keys, its limit (--max-idempotency-keys)"}"#)
        }
    }

    @Test func concurrentRetriesApplyOnce() async throws {
        let server = makeServer()
        try await server.makeApplication().test(.router) { client in
            let key: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "once"]
            let texts = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<8 { group.addTask { try await client.post("r", #"{"action": "add", "args": [1]}"#, headers: key).text } }
                var texts: [String] = []
                for try await text in group { texts.append(text) }
                return texts
            }
            #expect(Set(texts).count == 1)
            #expect(try await client.get("/v1/machines/counter/r").text.contains(#""seq":1,"state":{"count":1}"#))
        }
    }

    @Test func aSlowWatcherIsEndedWithAReasonNotBufferedWithoutBound() async {
        let watcher = Watcher(buffer: 2)
        watcher.offer("1")
        watcher.offer("2")
        #expect(watcher.endReason == nil)
        watcher.offer("3")
        #expect(watcher.endReason == .tooSlow(buffer: 2))
        #expect(watcher.endReason?.closeCode == 1008)
        var received: [String] = []
        for await message in watcher.messages { received.append(message) }
        #expect(received == ["1", "2"])
    }

    @Test func watchersPerInstanceAreLimitedAtTheLimitAndOnePast() throws {
        let address = InstanceAddress(plugin: "counter", key: try InstanceKey("w"))
        let count = Mutex(0)
        let set = WatcherSet(address: address, limit: 2) { delta in count.withLock { $0 += delta } }
        let first = try set.add(buffer: 4)
        _ = try set.add(buffer: 4)
        let past = #expect(throws: ServiceError.self) { try set.add(buffer: 4) }
        #expect(past == .overLimit("counter/w already has 2 watchers, its limit (--max-watchers-per-instance)"))
        set.remove(first)
        #expect(throws: Never.self) { try set.add(buffer: 4) }
        #expect(count.withLock { $0 } == 2)
        set.endAll(.shuttingDown)
        #expect(throws: ServiceError.shuttingDown) { try set.add(buffer: 4) }
    }

    /// Regression (audit): the history kept for `?after=SEQ` was bounded in transitions only,
    /// and each kept the whole state: 1,000 states of a CSV sheet took hundreds of MB. It is
    /// bounded in bytes too (`--watch-history-bytes`), the oldest let go first: at the limit the
    /// transitions it holds are kept, one byte under it the oldest goes.
    @Test func theWatchHistoryIsBoundedInBytes() async throws {
        func history(bytes: Int) async throws -> (WatcherSet, [UInt64]) {
            let server = makeServer { $0.watchHistory = 1000; $0.watchHistoryBytes = bytes }
            try await server.makeApplication().test(.router) { client in
                var statuses: [HTTPResponse.Status] = []
                for _ in 1...10 { statuses.append(try await client.post("h", #"{"action": "increment"}"#).status) }
                #expect(statuses == Array(repeating: .ok, count: 10))
            }
            let instance = try await server.registry.instance(at: InstanceAddress(plugin: "counter", key: try InstanceKey("h")), creating: false)
            let kept = (0...10).filter { after in (try? instance.watchers.check(after: UInt64(after))) != nil }.map(UInt64.init)
            return (instance.watchers, kept)
        }
        // Every transition of "increment" from 1 to 10 weighs the same but for its state's digits.
        let (unbounded, all) = try await history(bytes: 1 << 30)
        #expect(all == Array(0...10))
        let bytesOfTheLastThree = unbounded.keptBytesOfTheLast(3)
        let (_, three) = try await history(bytes: bytesOfTheLastThree)
        #expect(three == [7, 8, 9, 10], "the last three transitions are kept, at the limit")
        let (_, two) = try await history(bytes: bytesOfTheLastThree - 1)
        #expect(two == [8, 9, 10], "one byte under it, the oldest of them goes")
        let gone = #expect(throws: ServiceError.self) { try unbounded.check(after: 11) }
        #expect(gone?.status == .badRequest)
    }

    @Test func keysAreCheckedByteByByte() throws {
        #expect(try InstanceKey("order:2026-01.a_b").text == "order:2026-01.a_b")
        #expect(throws: ServiceError.badRequest("an instance key must not be empty")) { try InstanceKey("") }
        #expect(throws: ServiceError.badRequest("an instance key may hold only letters, digits and . _ : - (byte 2 is not one)")) {
            try InstanceKey("a/b")
        }
        #expect(throws: ServiceError.self) { try InstanceKey("é") }
    }
}
