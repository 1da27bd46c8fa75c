import ActomatonHost
import Foundation
@testable import ActomatonService
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Passivation: idle instances give up their machines and come back on the next request. The
/// time idleness is measured on is a ``TestTime`` the tests move; nothing sleeps.
@Suite struct PassivationTests {
    @Test func anIdleInstanceIsPassivatedAndRestoredWithItsStateAndSeq() async throws {
        let time = TestTime()
        let server = makeServer(time: time) { $0.idleTimeout = .seconds(300) }
        let idle = InstanceAddress(plugin: "counter", key: try InstanceKey("idle"))
        let ticking = InstanceAddress(plugin: "counter", key: try InstanceKey("ticking"))
        try await server.makeApplication().test(.router) { client in
            #expect(try await client.post("idle", #"{"action": "add", "args": [5]}"#).status == .ok)
            #expect(try await client.post("idle", #"{"action": "add", "args": [2]}"#).status == .ok)
            // A pending timer keeps an instance active, however long it is idle.
            #expect(try await client.post("ticking", #"{"action": "start", "args": [3600000]}"#).status == .ok)
            let machine = try await server.registry.instance(at: idle, creating: false).machine

            // At the timeout, not before.
            time.advance(by: .seconds(299))
            #expect(await server.registry.passivateIdle() == 0)
            time.advance(by: .seconds(1))
            #expect(await server.registry.passivateIdle() == 1)
            #expect(await server.registry.isPassivated(idle))
            #expect(await !server.registry.isPassivated(ticking))
            #expect(machine.isPassivated)
            #expect(await server.registry.activeCount == 1)
            #expect(server.metrics.prometheusText().contains("actomaton_instances_passivated 1"))
            #expect(server.metrics.prometheusText().contains("actomaton_instances_active 1"))

            // The next request restores it: the state is intact and seq goes on.
            let restored = try await client.post("idle", #"{"action": "add", "args": [1]}"#)
            #expect(restored.text == #"{"plugin":"counter","key":"idle","seq":3,"action":"add","state":{"count":8},"started":[],"cancelled":[]}"#)
            #expect(await !server.registry.isPassivated(idle))
            #expect(server.metrics.prometheusText().contains("actomaton_instances_passivated 0"))
            // A send to the freed machine is turned away, not applied.
            #expect(try await machine.send(try counterType.action("add", [.int(100)])) == nil)
            #expect(try await client.get("/v1/machines/counter/idle").text.contains(#""seq":3,"state":{"count":8}"#))

            // A GET restores it too; a passivated instance is still listed and can be deleted.
            time.advance(by: .seconds(300))
            #expect(await server.registry.passivateIdle() == 1)
            #expect(try await client.get("/v1/machines/counter?limit=10").text.contains(#"["idle","ticking"]"#))
            #expect(try await client.get("/v1/machines/counter/idle").text.contains(#""seq":3,"state":{"count":8},"timers":[]"#))
            time.advance(by: .seconds(300))
            #expect(await server.registry.passivateIdle() == 1)
            #expect(try await client.execute(uri: "/v1/machines/counter/idle", method: .delete).status == .ok)
            #expect(try await client.get("/v1/machines/counter/idle").status == .notFound)
            #expect(await server.registry.passivatedInstances == 0)
            _ = try await client.post("ticking", #"{"action": "stop"}"#)
        }
    }

    @Test func atTheInstanceLimitTheLeastRecentlyUsedIdleInstanceIsPassivated() async throws {
        let time = TestTime()
        let server = makeServer(time: time) { $0.maxInstances = 2 }
        try await server.makeApplication().test(.router) { client in
            #expect(try await client.post("a", #"{"action": "add", "args": [1]}"#).status == .ok)
            time.advance(by: .seconds(1))
            #expect(try await client.post("b", #"{"action": "add", "args": [2]}"#).status == .ok)
            time.advance(by: .seconds(1))
            // At the limit: the third passivates `a`, the least recently used.
            #expect(try await client.post("c", #"{"action": "add", "args": [3]}"#).status == .ok)
            #expect(await server.registry.isPassivated(InstanceAddress(plugin: "counter", key: try InstanceKey("a"))))
            #expect(await server.registry.activeCount == 2)
            time.advance(by: .seconds(1))
            // `a` comes back (passivating `b`), its count intact.
            #expect(try await client.post("a", #"{"action": "add", "args": [10]}"#).text.contains(#""seq":2,"action":"add","state":{"count":11}"#))
            #expect(await server.registry.isPassivated(InstanceAddress(plugin: "counter", key: try InstanceKey("b"))))
            // With both in memory busy (a repeating action each), one past the limit is refused.
            #expect(try await client.post("a", #"{"action": "start", "args": [3600000]}"#).status == .ok)
            #expect(try await client.post("c", #"{"action": "start", "args": [3600000]}"#).status == .ok)
            let past = try await client.post("b", #"{"action": "increment"}"#)
            #expect(past.status == .tooManyRequests)
            #expect(past.text == #"{"error":"the service already holds 2 instances, its limit (--max-instances), and none is idle"}"#)
            #expect(await server.registry.isPassivated(InstanceAddress(plugin: "counter", key: try InstanceKey("b"))), "b's state is kept")
            _ = try await client.post("a", #"{"action": "stop"}"#)
            _ = try await client.post("c", #"{"action": "stop"}"#)
        }
    }

    /// Instances whose plugin runs in worker processes are bounded by `--max-workers`, a worker
    /// each: at the limit, the least recently used idle one of them is passivated (its worker
    /// stopped), however recently the instances in this process were used; they are not counted.
    /// With every one busy, one past is 429 and keeps its state.
    @Test func workerProcessesAreBoundedAtTheLimitAndOnePast() async throws {
        let time = TestTime()
        let counterInWorkers = try PluginType.load(path: plugin("CounterPlugin"),
                                                   isolation: .process(WorkerOptions(executable: "\(pluginDirectory)/actomaton-host")),
                                                   options: .init())
        let hostileInProcess = try PluginType.load(path: plugin("ActomatonHostTestFixtures"), isolation: .none,
                                                   options: .init(entrySymbol: "fixture_hostile_entry"))
        let server = ActomatonServer(catalog: PluginCatalog([counterInWorkers, hostileInProcess]), tokens: nil,
                                     listen: try ListenAddress("127.0.0.1:0"), configuration: testConfiguration { $0.maxWorkers = 2 },
                                     now: time.read)
        @Sendable func passivated(_ key: String, plugin: String = "counter") async throws -> Bool {
            await server.registry.isPassivated(InstanceAddress(plugin: plugin, key: try InstanceKey(key)))
        }
        try await server.makeApplication().test(.router) { client in
            // In this process, and the least recently used of all.
            for key in ["x", "y", "z"] {
                #expect(try await client.post(key, #"{"action": "set", "args": [1]}"#, plugin: "hostile").status == .ok)
                time.advance(by: .seconds(1))
            }
            #expect(try await client.post("a", #"{"action": "add", "args": [1]}"#).status == .ok)
            time.advance(by: .seconds(1))
            #expect(try await client.post("b", #"{"action": "add", "args": [2]}"#).status == .ok)
            time.advance(by: .seconds(1))
            #expect(await server.registry.workerCount == 2)
            // At the limit: the third passivates `a`, the least recently used in a worker.
            #expect(try await client.post("c", #"{"action": "add", "args": [3]}"#).status == .ok)
            #expect(try await passivated("a"))
            #expect(await server.registry.workerCount == 2)
            for key in ["x", "y", "z"] { #expect(try await !passivated(key, plugin: "hostile")) }
            time.advance(by: .seconds(1))
            // `a` comes back (passivating `b`), its count intact.
            #expect(try await client.post("a", #"{"action": "add", "args": [10]}"#).text.contains(#""state":{"count":11}"#))
            #expect(try await passivated("b"))
            // With both in workers busy (a repeating action each), one past the limit is refused.
            #expect(try await client.post("a", #"{"action": "start", "args": [3600000]}"#).status == .ok)
            #expect(try await client.post("c", #"{"action": "start", "args": [3600000]}"#).status == .ok)
            let past = try await client.post("b", #"{"action": "increment"}"#)
            #expect(past.status == .tooManyRequests)
            #expect(past.text == #"{"error":"the service already runs 2 worker processes, its limit (--max-workers), and none of their instances is idle"}"#)
            #expect(try await passivated("b"), "b's state is kept")
            // Instances in this process are still made.
            #expect(try await client.post("w", #"{"action": "set", "args": [2]}"#, plugin: "hostile").status == .ok)
            #expect(await server.registry.workerCount == 2)
            _ = try await client.post("a", #"{"action": "stop"}"#)
            _ = try await client.post("c", #"{"action": "stop"}"#)
            #expect(try await client.get("/v1/machines/counter/b").text.contains(#""state":{"count":2}"#))
        }
    }

    /// `.wasm` instances are bounded by the memory they may hold together (`--wasm-memory-total`),
    /// here 5 pages of the grower fixture's, which starts with 2. One more is made while its 2
    /// pages fit, the least recently used idle one passivated otherwise; a grow past the total
    /// passivates an idle one and the action is sent again; with none idle, 429 says so. Before,
    /// only the count of instances bounded them: 64 MiB each at 100,000.
    @Test func wasmInstancesAreBoundedByTheMemoryTheyHoldTogether() async throws {
        let page = 65_536
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let path = "\(root)/.build/wasm/hostile/grower.wasm"
        try #require(FileManager.default.fileExists(atPath: path), "\(path) is missing: run `make wasm-build` first")
        let total = WasmMemoryBudget(limit: 5 * page)
        let grower = try PluginType.load(path: path, isolation: .none, options: .init(wasmLimits: WasmLimits(memoryTotal: total)))
        let time = TestTime()
        let server = ActomatonServer(catalog: PluginCatalog([grower]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     configuration: testConfiguration { _ in }, now: time.read)
        @Sendable func passivated(_ key: String) async throws -> Bool {
            await server.registry.isPassivated(InstanceAddress(plugin: "grower", key: try InstanceKey(key)))
        }
        try await server.makeApplication().test(.router) { client in
            #expect(try await client.post("a", #"{"action": "grow_one"}"#, plugin: "grower").text.contains(#""state":"n=1""#))
            time.advance(by: .seconds(1))
            #expect(total.used == 3 * page)
            // b is made (2 pages: at the limit), and its grow is refused: `a` is passivated, and
            // b's action sent again.
            #expect(try await client.post("b", #"{"action": "grow_or_refuse"}"#, plugin: "grower").text.contains(#""state":"n=1""#))
            #expect(try await passivated("a"))
            time.advance(by: .seconds(1))
            #expect(try await client.post("c", #"{"action": "grow_or_refuse"}"#, plugin: "grower").text.contains(#""state":"n=1""#))
            #expect(try await passivated("b"))
            time.advance(by: .seconds(1))
            // `a` comes back with its 3 pages: `c` is passivated to make room for its first 2.
            #expect(try await client.get("/v1/machines/grower/a").text.contains(#""state":"n=1""#))
            #expect(try await passivated("c"))
            #expect(total.used == 3 * page)
            // With a watcher, `a` is not idle: no room for `d`'s 2 pages, and none to make.
            // (Its watchers only: an `Instance` held here would keep its memory held.)
            let watchers = try await server.registry.instance(at: InstanceAddress(plugin: "grower", key: try InstanceKey("a")), creating: false).watchers
            let watcher = try watchers.add(buffer: 1, after: 1)
            _ = try await client.post("a", #"{"action": "grow_one"}"#, plugin: "grower")
            let past = try await client.post("d", #"{"action": "grow_or_refuse"}"#, plugin: "grower")
            #expect(past.status == .tooManyRequests)
            #expect(past.text == #"{"error":"the .wasm instances in memory hold 262144 of the 327680 bytes of memory they may have together "#
                    + #"(--wasm-memory-total), too much for one more of grower (131072 bytes), and none of them is idle"}"#)
            // A grow past the total with none idle: 429, the module's own failure with it.
            #expect(try await client.post("a", #"{"action": "grow_or_refuse"}"#, plugin: "grower").text.contains(#""state":"n=3""#))
            #expect(total.used == total.limit)
            let refused = try await client.post("a", #"{"action": "grow_or_refuse"}"#, plugin: "grower")
            #expect(refused.status == .tooManyRequests)
            #expect(refused.headers[.retryAfter] == "1")
            #expect(refused.text == #"{"error":"plugin grower: 'grow_or_refuse' failed: no memory (a memory.grow was refused: the .wasm instances of this "#
                    + #"host already hold too much of the 327680 bytes of memory they may have together (--wasm-memory-total))"}"#)
            watchers.remove(watcher)
            #expect(try await client.post("d", #"{"action": "grow_or_refuse"}"#, plugin: "grower").status == .ok)
            #expect(try await passivated("a"))
            let metrics = try await client.get("/metrics").text
            #expect(metrics.contains("\nactomaton_wasm_memory_bytes 196608.0\n"), "d's 3 pages")
            #expect(metrics.contains("\nactomaton_wasm_memory_limit_bytes 327680.0\n"))
        }
    }

    /// A server with the grower fixture, its instances' memory bounded by `total`.
    func growerServer(total: WasmMemoryBudget, time: TestTime) throws -> ActomatonServer {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let grower = try PluginType.load(path: "\(root)/.build/wasm/hostile/grower.wasm", isolation: .none,
                                         options: .init(wasmLimits: WasmLimits(memoryTotal: total)))
        return ActomatonServer(catalog: PluginCatalog([grower]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                               configuration: testConfiguration { _ in }, now: time.read)
    }

    /// Grows instances a, b and c of the grower once each (3 pages each), a second apart.
    func growThree(_ client: some TestClientProtocol, time: TestTime) async throws {
        for key in ["a", "b", "c"] {
            #expect(try await client.post(key, #"{"action": "grow_or_refuse"}"#, plugin: "grower").status == .ok)
            time.advance(by: .seconds(1))
        }
    }

    /// Regression (review): after a grow the total refused, the action was sent again even when
    /// the plugin had changed its state first (the bumpgrow fixture adds 1, then makes a request
    /// the host refuses): one POST applied it twice and answered 200 with n=3. Such a failure is
    /// not sent again, and is 422, not a 429 that invites a retry: the change stands, once.
    @Test func anActionThatMayHaveChangedTheStateIsNotSentAgain() async throws {
        let total = WasmMemoryBudget(limit: 4 * 65_536)
        let time = TestTime()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let type = try PluginType.load(path: "\(root)/.build/wasm/hostile/bumpgrow.wasm", isolation: .none,
                                       options: .init(wasmLimits: WasmLimits(memoryTotal: total)))
        let server = ActomatonServer(catalog: PluginCatalog([type]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     configuration: testConfiguration { _ in }, now: time.read)
        try await server.makeApplication().test(.router) { client throws in
            for key in ["a", "b"] {
                #expect(try await client.post(key, #"{"action": "bump"}"#, plugin: "bumpgr").status == .ok)
                time.advance(by: .seconds(1))
            }
            #expect(total.used == total.limit)
            let answer = try await client.post("b", #"{"action": "bump_grow"}"#, plugin: "bumpgr")
            #expect(answer.status == .unprocessableContent)
            #expect(answer.text.contains("its state may have changed"), "\(answer.text)")
            // Its change stands, once: the next bump leaves n=3 (the retry made it 4).
            let next = try await client.post("b", #"{"action": "bump"}"#, plugin: "bumpgr").text
            #expect(next.contains(#""state":"n=3""#), "\(next)")
        }
    }

    /// Regression (review): an action sent again after a refused grow had left its place among
    /// the instance's requests at its first turn, so one that came after it was applied first.
    /// Here the room is made by passivating `v`, whose turn the test holds meanwhile: `b`'s
    /// request waits in line (before the fix it was applied at once, seq 1, with no room to
    /// grow), and comes second.
    @Test func anActionSentAgainKeepsItsPlaceInLine() async throws {
        let total = WasmMemoryBudget(limit: 5 * 65_536)
        let time = TestTime()
        let server = try growerServer(total: total, time: time)
        let a = InstanceAddress(plugin: "grower", key: try InstanceKey("a"))
        try await server.makeApplication().test(.router) { client throws in
            #expect(try await client.post("v", #"{"action": "grow_one"}"#, plugin: "grower").status == .ok)
            time.advance(by: .seconds(1))
            let v = try await server.registry.instance(at: InstanceAddress(plugin: "grower", key: try InstanceKey("v")), creating: false)
            await v.machine.turn.acquire()
            let first = Task { try await client.post("a", #"{"action": "grow_or_refuse"}"#, plugin: "grower").text }
            // Its grow refused, `a`'s action waits for `v`'s passivation.
            #expect(await eventually { v.machine.turn.waiting == 1 }, "v's passivation never began")
            let second = Task { try await client.post("a", #"{"action": "grow_or_skip"}"#, plugin: "grower").text }
            let waited = await eventually { server.arrivals.waiting(at: a) == 1 }
            v.machine.turn.release()
            let (firstText, secondText) = (try await first.value, try await second.value)
            #expect(waited, "the second request did not wait for the first")
            #expect(firstText.contains(#""seq":1"#) && firstText.contains(#""state":"n=1""#), "\(firstText)")
            #expect(secondText.contains(#""seq":2"#) && secondText.contains(#""state":"n=2""#), "\(secondText)")
        }
    }

    /// Regression: an action that failed after changing the state (a request the host refused,
    /// 422 "its state may have changed") left GET showing the state before it, though the
    /// change is kept and the next transition builds on it. GET now shows the state as it is,
    /// at the same seq: the failure made no transition.
    @Test func aFailedActionsChangeShowsInTheStatus() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let type = try PluginType.load(path: "\(root)/.build/wasm/hostile/refuse-after-change.wasm", isolation: .none, options: .init())
        let server = ActomatonServer(catalog: PluginCatalog([type]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     configuration: testConfiguration { _ in })
        try await server.makeApplication().test(.router) { client throws in
            #expect(try await client.post("k", #"{"action": "bump"}"#, plugin: "mut").status == .ok)
            let failed = try await client.post("k", #"{"action": "invalid_after_change"}"#, plugin: "mut")
            #expect(failed.status == .unprocessableContent)
            let status = try await client.get("/v1/machines/mut/k").text
            #expect(status.contains(#""seq":1"#) && status.contains(#""state":"n=1001""#), "before: n=1 \(status)")
            #expect(try await client.post("k", #"{"action": "bump"}"#, plugin: "mut").text.contains(#""state":"n=1002""#))
        }
    }

    /// Regression (review): a grow one page short passivated as many instances as the whole
    /// memory of the one that grew (b and c, where b was enough).
    @Test func aRefusedGrowPassivatesOnlyWhatItLacked() async throws {
        let total = WasmMemoryBudget(limit: 9 * 65_536)
        let time = TestTime()
        let server = try growerServer(total: total, time: time)
        try await server.makeApplication().test(.router) { client throws in
            try await growThree(client, time: time)
            #expect(total.used == total.limit)
            #expect(try await client.post("a", #"{"action": "grow_or_refuse"}"#, plugin: "grower").text.contains(#""state":"n=2""#))
            #expect(await server.registry.isPassivated(InstanceAddress(plugin: "grower", key: try InstanceKey("b"))))
            #expect(await !server.registry.isPassivated(InstanceAddress(plugin: "grower", key: try InstanceKey("c"))))
        }
    }

    /// Regression (review): a passivated instance a request still held kept its memory until
    /// the request let go, and the registry passivated another, and another, to make room.
    @Test func aPassivatedInstanceGivesItsMemoryBackAtOnce() async throws {
        let total = WasmMemoryBudget(limit: 9 * 65_536)
        let time = TestTime()
        let server = try growerServer(total: total, time: time)
        try await server.makeApplication().test(.router) { client throws in
            try await growThree(client, time: time)
            // Held as a request holds it between finding the instance and its answer; b and c
            // used since, so that a is the least recently used.
            let held = try await server.registry.instance(at: InstanceAddress(plugin: "grower", key: try InstanceKey("a")), creating: false)
            for key in ["b", "c"] {
                time.advance(by: .seconds(1))
                #expect(try await client.get("/v1/machines/grower/\(key)").status == .ok)
            }
            #expect(try await client.post("d", #"{"action": "grow_or_refuse"}"#, plugin: "grower").status == .ok)
            #expect(await server.registry.isPassivated(InstanceAddress(plugin: "grower", key: try InstanceKey("a"))))
            #expect(await !server.registry.isPassivated(InstanceAddress(plugin: "grower", key: try InstanceKey("b"))))
            #expect(total.used == total.limit)
            _ = held
        }
    }

    /// Regression (review): first requests to new keys at once, with room for three grown
    /// instances: all could be 429, and instances no action was applied to were left
    /// passivated, listed and counted. Now those answered 200 are the ones listed, no answer is
    /// 500, and once they are passivated nothing is held. Regression: their actions sent again
    /// once room was made each took the room made for all, and all twelve could still be 429
    /// (2 of 6 runs of this suite alone); they are now sent again one at a time.
    @Test func concurrentFirstRequestsNearTheTotal() async throws {
        let total = WasmMemoryBudget(limit: 10 * 65_536)
        let time = TestTime()
        let server = try growerServer(total: total, time: time)
        try await server.makeApplication().test(.router) { client throws in
            let answers = await withTaskGroup(of: (String, Int).self) { group in
                for index in 0..<12 {
                    group.addTask { ("k\(index)", (try? await client.post("k\(index)", #"{"action": "grow_or_refuse"}"#, plugin: "grower").status.code) ?? -1) }
                }
                var all: [(String, Int)] = []
                for await answer in group { all.append(answer) }
                return all
            }
            #expect(answers.allSatisfy { $0.1 == 200 || $0.1 == 429 }, "\(answers)")
            #expect(answers.contains { $0.1 == 200 })
            let listed = try await server.registry.keys(of: "grower", after: nil, limit: 100).keys.map(\.text)
            #expect(listed == answers.filter { $0.1 == 200 }.map(\.0).sorted(), "\(answers)")
            #expect(total.used <= total.limit)
            time.advance(by: .seconds(1000))
            await server.registry.passivateIdle()
            #expect(total.used == 0)
        }
    }

    /// A cluster host past its share sheds instances: the least recently used idle ones, never
    /// one with a pending timer (nor a watcher), at most the count asked.
    @Test func sheddingPassivatesTheLeastRecentlyUsedIdleInstancesUpToTheCount() async throws {
        let time = TestTime()
        let server = makeServer(time: time)
        try await server.makeApplication().test(.router) { client in
            for key in ["a", "b", "c", "d"] {
                #expect(try await client.post(key, #"{"action": "increment"}"#).status == .ok)
                time.advance(by: .seconds(1))
            }
            // `a`, the least recently used, is busy: a repeating action pending.
            #expect(try await client.post("a", #"{"action": "start", "args": [3600000]}"#).status == .ok)
            time.advance(by: .seconds(1))
            #expect(await server.registry.shed(2) == 2)
            for (key, passivated) in [("a", false), ("b", true), ("c", true), ("d", false)] {
                #expect(await server.registry.isPassivated(InstanceAddress(plugin: "counter", key: try InstanceKey(key))) == passivated, "\(key)")
            }
            #expect(await server.registry.shed(5) == 1, "only d is left idle")
            // Regression (audit, a cluster under load): instances in use were shed at every
            // renewal (and taken back at once by the host their clients asked). One used within
            // the last second is not.
            #expect(try await client.post("e", #"{"action": "increment"}"#).status == .ok)
            time.advance(by: .milliseconds(999))
            #expect(await server.registry.shed(5) == 0, "e was used less than a second ago")
            time.advance(by: .milliseconds(1))
            #expect(await server.registry.shed(5) == 1, "e has gone unused for a second")
            _ = try await client.post("a", #"{"action": "stop"}"#)
        }
    }

    @Test func deleteCancelsTheInstancesEffectsAtOnce() async throws {
        let server = makeServer()
        let address = InstanceAddress(plugin: "counter", key: try InstanceKey("d"))
        try await server.makeApplication().test(.router) { client in
            #expect(try await client.post("d", #"{"action": "start", "args": [3600000]}"#).status == .ok)
            let instance = try await server.registry.instance(at: address, creating: false)
            #expect(await instance.machine.effectCount == 1)
            #expect(try await client.execute(uri: "/v1/machines/counter/d", method: .delete).status == .ok)
            #expect(await instance.machine.effectCount == 0, "DELETE closes the machine: its timer is cancelled, not left to run")
        }
    }

    /// Without `--state`, a passivated instance keeps its snapshot and description in memory,
    /// and instances are bounded in memory only while active: a client could make instances
    /// with large states and have them passivated past every bound. `--max-passivated-bytes`
    /// bounds them: at the limit an idle instance is passivated, one past it stays in memory;
    /// a new instance that needs its room is 429, naming the flag; a passivated one still
    /// comes back in place of an idle one, its bytes going to it.
    @Test func passivatedInstancesKeepAtMostTheirTotalInMemoryAtTheLimitAndOnePast() async throws {
        let time = TestTime()
        let one = try await Self.passivatedBytes(ofCount: 1)
        #expect(one > 0)

        let server = makeServer(time: time) { $0.maxPassivatedBytes = 2 * one; $0.maxInstances = 1 }
        @Sendable func passivated(_ key: String) async throws -> Bool {
            await server.registry.isPassivated(InstanceAddress(plugin: "counter", key: try InstanceKey(key)))
        }
        try await server.makeApplication().test(.router) { client in
            for key in ["a", "b", "c"] {
                #expect(try await client.post(key, #"{"action": "add", "args": [1]}"#).status == .ok)
                time.advance(by: .seconds(1))
            }
            // a and b (the limit) were passivated to make room; c, one past, stays in memory.
            #expect(try await passivated("a"))
            #expect(try await passivated("b"))
            #expect(server.registry.passivatedBytes.used == 2 * one)
            time.advance(by: .seconds(300))
            #expect(await server.registry.passivateIdle() == 0)
            #expect(try await !passivated("c"))
            #expect(try await client.post("c", #"{"action": "add", "args": [1]}"#).text.contains(#""seq":2,"action":"add","state":{"count":2}"#))
            #expect(try await client.get("/metrics").text.contains("actomaton_passivated_bytes \(2 * one)"))

            // A new instance needs c's room, which cannot be passivated.
            time.advance(by: .seconds(1))
            let refused = try await client.post("d", #"{"action": "add", "args": [1]}"#)
            #expect(refused.status == .tooManyRequests)
            #expect(refused.text == #"{"error":"the service already holds 1 instances, its limit (--max-instances), and no idle one can be "#
                + #"passivated: one's state takes \#(one) bytes, more than the passivated instances may still keep in memory (they keep "#
                + #"\#(2 * one) of \#(2 * one), --max-passivated-bytes)"}"#, "\(refused.text)")
            #expect(try await client.get("/v1/machines/counter/d").status == .notFound)

            // a comes back in c's place: c takes the bytes a gave back.
            #expect(try await client.post("a", #"{"action": "add", "args": [1]}"#).text.contains(#""seq":2,"action":"add","state":{"count":2}"#))
            #expect(try await passivated("c"))
            // c's count, 2, takes as many bytes as a's, 1.
            #expect(server.registry.passivatedBytes.used == 2 * one)

            // Deleting a passivated instance gives its bytes back.
            #expect(try await client.execute(uri: "/v1/machines/counter/b", method: .delete).status == .ok)
            #expect(server.registry.passivatedBytes.used == one)
            #expect(try await client.execute(uri: "/v1/machines/counter/c", method: .delete).status == .ok)
            #expect(server.registry.passivatedBytes.used == 0)
        }
    }

    /// What one passivated counter keeps in memory, its count `count`.
    private static func passivatedBytes(ofCount count: Int) async throws -> Int {
        let time = TestTime()
        let probe = makeServer(time: time)
        try await probe.makeApplication().test(.router) { client async throws in
            #expect(try await client.post("m", #"{"action": "add", "args": [\#(count)]}"#).status == .ok)
            time.advance(by: .seconds(300))
            #expect(await probe.registry.passivateIdle() == 1)
        }
        return probe.registry.passivatedBytes.used
    }

    /// Regression (review): a refused first action leaves no instance (`discardIfUntouched`),
    /// which keeps nothing passivated; it asked `--max-passivated-bytes` for the snapshot's
    /// bytes all the same, and once the passivated instances kept all they may, the refusal
    /// left a listed, readable instance, counted against `--max-instances`, behind.
    @Test func aRefusedFirstActionLeavesNoInstanceWhileThePassivatedBytesAreTaken() async throws {
        let one = try await Self.passivatedBytes(ofCount: 1)
        let time = TestTime()
        let server = makeServer(time: time) { $0.maxPassivatedBytes = one }
        try await server.makeApplication().test(.router) { client async throws in
            #expect(try await client.post("ghost0", #"{"action": "start", "args": [0]}"#).status == .unprocessableContent)
            #expect(try await client.get("/v1/machines/counter/ghost0").status == .notFound)
            // The passivated instances keep all they may.
            #expect(try await client.post("a", #"{"action": "add", "args": [1]}"#).status == .ok)
            time.advance(by: .seconds(300))
            #expect(await server.registry.passivateIdle() == 1)
            #expect(server.registry.passivatedBytes.used == one)
            #expect(try await client.post("ghost", #"{"action": "start", "args": [0]}"#).status == .unprocessableContent)
            let read = try await client.get("/v1/machines/counter/ghost")
            #expect(read.status == .notFound, "\(read.status) \(read.text)")
            #expect(await server.registry.count == 1, "only a")
            #expect(server.registry.passivatedBytes.used == one)
        }
    }

    /// Regression (review): when the least recently used idle instance's snapshot did not fit
    /// in `--max-passivated-bytes`, no other was tried: a new instance was 429 while a smaller
    /// idle one fitted, and the idle scan passivated nothing past it. The next is tried; the
    /// one that does not fit is not snapshotted again while it stays unused and does not fit.
    @Test func anIdleInstanceTooLargeToPassivateDoesNotKeepSmallerOnesFromIt() async throws {
        let one = try await Self.passivatedBytes(ofCount: 1)
        let big = try await Self.passivatedBytes(ofCount: 1_000_000_000)
        #expect(big > one + 4)
        for idleScan in [false, true] {
            let time = TestTime()
            let server = makeServer(time: time) { $0.maxPassivatedBytes = one + 4; $0.maxInstances = 2 }
            let (small, large) = (InstanceAddress(plugin: "counter", key: try InstanceKey("small")),
                                  InstanceAddress(plugin: "counter", key: try InstanceKey("big")))
            try await server.makeApplication().test(.router) { client async throws in
                #expect(try await client.post("big", #"{"action": "add", "args": [1000000000]}"#).status == .ok)
                time.advance(by: .seconds(1))
                #expect(try await client.post("small", #"{"action": "add", "args": [1]}"#).status == .ok)
                time.advance(by: .seconds(1))
                if idleScan {
                    time.advance(by: .seconds(300))
                    #expect(await server.registry.passivateIdle() == 1)
                    #expect(await server.registry.passivateIdle() == 0, "nothing more fits")
                } else {
                    let new = try await client.post("new", #"{"action": "add", "args": [1]}"#)
                    #expect(new.status == .ok, "\(new.status) \(new.text)")
                }
                #expect(await server.registry.isPassivated(small), "idle scan: \(idleScan)")
                #expect(await !server.registry.isPassivated(large))
                // Used again, it is tried again.
                #expect(try await client.get("/v1/machines/counter/big").status == .ok)
            }
        }
    }
}
