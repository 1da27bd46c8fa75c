import ActomatonHost
@testable import ActomatonService
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import ServiceLifecycle
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

/// The service's configuration for a test, before the test's own changes: the defaults, but
/// for two clocks that a loaded machine (the whole suite on two cores) lets run out while a
/// test waits — a connection idle for a minute is cut (HummingbirdTesting's client connects
/// once, at the start, and never again), and a WebSocket client that answers no ping is cut
/// after two intervals (HummingbirdWSClient answers them only while its handler reads; a
/// ``LoopbackConnection`` never does). Tests of these clocks set them.
func testConfiguration(_ configure: (inout ServiceConfiguration) -> Void) -> ServiceConfiguration {
    var configuration = ServiceConfiguration()
    configuration.connectionIdleTimeout = .seconds(3600)
    configuration.webSocketPingInterval = .seconds(3600)
    configure(&configuration)
    return configuration
}

/// A server over the counter with `configure`d limits, on a loopback address.
func makeServer(tokens: TokenTable? = nil, time: TestTime = TestTime(), _ configure: (inout ServiceConfiguration) -> Void = { _ in }) -> ActomatonServer {
    let configuration = testConfiguration(configure)
    return ActomatonServer(catalog: PluginCatalog([counterType]), tokens: tokens, listen: try! ListenAddress("127.0.0.1:0"),
                           configuration: configuration, now: time.read)
}

/// Runs a real server over the counter (or `plugins`, with a `journal` and `journalChanges`)
/// with `configure`d limits on a loopback port, gives it to `body` with its port, then shuts
/// it down gracefully. HummingbirdTesting's live server drops the application's connection
/// limit; this one is the server `serve --listen` runs.
func withRunningServer<Value: Sendable>(plugins: [PluginType] = [counterType], journal: ServiceJournal? = nil,
                                        journalChanges: (any JournalChangeSignal)? = nil, logger: Logger = Logger(label: "test"),
                                        _ configure: (inout ServiceConfiguration) -> Void = { _ in },
                                        _ body: (ActomatonServer, Int) async throws -> Value) async throws -> Value {
    let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
    let configuration = testConfiguration(configure)
    let server = ActomatonServer(catalog: PluginCatalog(plugins), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                 configuration: configuration, logger: logger, journal: journal, journalChanges: journalChanges,
                                 onListening: { port in portSink.yield(port) })
    let group = ServiceGroup(configuration: .init(services: [server], logger: Logger(label: "test")))
    let running = Task { try await group.run() }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next() else { throw CancellationError() }
    do {
        let value = try await body(server, port)
        await group.triggerGracefulShutdown()
        try await running.value
        return value
    } catch {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
        throw error
    }
}

/// What a WebSocket client gets when the server closes the watch at `path`: the handshake's
/// status line, the close frame's code and reason, and how many frames came before it (`nil`
/// when no close came within `Duration.answerDeadline`). A
/// raw client (``LoopbackConnection``): HummingbirdWSClient sometimes misses a close frame
/// sent right after the handshake and waits for ever.
func webSocketClose(port: Int, _ path: String, headers: [String] = []) async throws -> (status: String, code: Int, reason: String, framesBefore: Int)? {
    try await overLoopback { () throws -> (status: String, code: Int, reason: String, framesBefore: Int)? in
        let connection = try LoopbackConnection(port: port)
        guard let head = try connection.webSocketHandshake(path, headers: headers, within: .answerDeadline),
              let close = try connection.webSocketClose(within: .answerDeadline) else { return nil }
        return (head.components(separatedBy: "\r\n")[0], close.code, close.reason, close.framesBefore)
    }
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
