import ActomatonHost
@testable import ActomatonService
import Hummingbird
import HummingbirdTesting
import Testing

@Suite struct CrashTests {
    /// The hostile fixture, each instance in a worker process of its own.
    static func hostileInWorkers() throws -> PluginType {
        try PluginType.load(path: plugin("ActomatonHostTestFixtures"),
                            isolation: .process(WorkerOptions(executable: "\(pluginDirectory)/actomaton-host")),
                            options: Plugin.LoadOptions(entrySymbol: "fixture_hostile_entry"))
    }

    @Test func aPluginCrashingInItsWorkerIs500AndTheOtherInstancesCarryOn() async throws {
        let server = ActomatonServer(catalog: PluginCatalog([counterType, try Self.hostileInWorkers()]), tokens: nil,
                                     listen: try ListenAddress("127.0.0.1:0"))
        try await server.makeApplication().test(.router) { client in
            #expect(try await client.post("a", #"{"action": "set", "args": [5]}"#, plugin: "hostile").status == .ok)
            #expect(try await client.post("b", #"{"action": "set", "args": [7]}"#, plugin: "hostile").status == .ok)
            let crashed = try await client.post("a", #"{"action": "crash"}"#, plugin: "hostile")
            #expect(crashed.status == .internalServerError)
            #expect(crashed.text.hasPrefix(#"{"error":"plugin hostile: 'crash' failed: the plugin "#), "\(crashed.text)")
            #expect(!crashed.text.contains("\n"))
            // The other instance is untouched; the crashed one was restored and goes on.
            #expect(try await client.get("/v1/machines/hostile/b").text.contains(#""state":{"value":7}"#))
            let after = try await client.post("a", #"{"action": "set", "args": [6]}"#, plugin: "hostile")
            #expect(after.status == .ok, "\(after.text)")
            #expect(try await client.post("c", #"{"action": "increment"}"#).status == .ok)
        }
    }
}

@Suite struct WasmInstanceTests {
    @Test func sandboxedInstancesServeTheSameAPI() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let path = "\(root)/.build/wasm/plugins/counter.wasm"
        try #require(FileManager.default.fileExists(atPath: path), "\(path) is missing: run `make wasm-build` first")
        let wasm = try PluginType.load(path: path, isolation: .none, options: .init())
        let server = ActomatonServer(catalog: PluginCatalog([wasm]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"))
        try await server.makeApplication().test(.router) { client throws in
            #expect(try await client.post("a", #"{"action": "add", "args": [5]}"#).text.contains(#""seq":1,"action":"add","state":{"count":5}"#))
            #expect(try await client.post("b", #"{"action": "increment"}"#).text.contains(#""state":{"count":1}"#))
            #expect(try await client.get("/v1/machines/counter/a").text.contains(#""state":{"count":5}"#))
            #expect(try await client.get("/v1/plugins").text.contains(#""sandbox":"wasm""#))
        }
    }
}

import Foundation
