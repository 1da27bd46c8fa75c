import ActomatonHost
@testable import ActomatonService
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing
@_exported import ActomatonTestSupport

/// The C counter, in process.
let counterType: PluginType = try! PluginType.load(path: plugin("CounterPlugin"), isolation: .none, options: .init())

/// A fixed time: rate limits never refill, idempotency keys never expire, unless a test moves it.
final class TestTime: Sendable {
    let now = Mutex<Duration>(.seconds(1000))

    @Sendable func read() -> Duration { now.withLock { $0 } }

    func advance(by duration: Duration) { now.withLock { $0 += duration } }
}

/// A server over the counter with `configure`d limits, on a loopback address.
func makeServer(tokens: TokenTable? = nil, time: TestTime = TestTime(), _ configure: (inout ServiceConfiguration) -> Void = { _ in }) -> ActomatonServer {
    var configuration = ServiceConfiguration()
    configure(&configuration)
    return ActomatonServer(catalog: PluginCatalog([counterType]), tokens: tokens, listen: try! ListenAddress("127.0.0.1:0"),
                           configuration: configuration, now: time.read)
}

extension TestResponse {
    /// The body as text.
    var text: String { String(buffer: body) }
}

extension TestClientProtocol {
    /// POSTs `json` to `/v1/machines/counter/KEY`.
    func post(_ key: String, _ json: String, headers: HTTPFields = [:], plugin: String = "counter") async throws -> TestResponse {
        try await execute(uri: "/v1/machines/\(plugin)/\(key)", method: .post, headers: headers, body: ByteBuffer(string: json))
    }

    func get(_ uri: String, headers: HTTPFields = [:]) async throws -> TestResponse {
        try await execute(uri: uri, method: .get, headers: headers)
    }
}

/// A fresh temporary directory, mode 0700.
func temporaryDirectory() throws -> String {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("actomaton-service-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    return url.path
}
