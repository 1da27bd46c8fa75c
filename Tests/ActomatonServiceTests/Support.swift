import ActomatonHost
@testable import ActomatonService
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// The directory of the built plugins: the test binary's own (`swift build` puts the `.so`
/// products beside it), or `ACTOMATON_PLUGIN_DIR`.
let pluginDirectory: String = {
    if let directory = ProcessInfo.processInfo.environment["ACTOMATON_PLUGIN_DIR"] { return directory }
    return URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
}()

/// The path of a built plugin product, e.g. `plugin("CounterPlugin")`.
func plugin(_ product: String) -> String {
    let path = "\(pluginDirectory)/lib\(product).so"
    precondition(FileManager.default.fileExists(atPath: path), "\(path) is missing: run `swift build` first")
    return path
}

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

/// Waits, by yielding (never sleeping), until `condition` holds; `false` if it does not within
/// 20,000 yields and `seconds` of wall-clock time.
func eventually(within seconds: Int = 10, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    var checks = 0
    while checks < 20_000 || ContinuousClock.now < deadline {
        if await condition() { return true }
        await Task.yield()
        checks += 1
    }
    return await condition()
}

/// Runs `body`, which blocks (a child process, its pipes), on a thread of its own, and waits for
/// it without holding a thread of the concurrency pool. The pool has one thread per core, and
/// tests run in parallel on it: a test blocking a pool thread (a `.wasm` build took minutes on
/// a loaded machine) stalled every other test's tasks, and tests with a real-time deadline
/// failed. At most one body per core runs at a time (``blockingWorkSlots``), as when they held
/// pool threads: dozens of child processes at once made each one too slow.
func offThePool<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            blockingWorkSlots.wait()
            defer { blockingWorkSlots.signal() }
            continuation.resume(with: Result(catching: body))
        }.start()
    }
}

/// The slots of ``offThePool(_:)``: one per core.
let blockingWorkSlots = DispatchSemaphore(value: ProcessInfo.processInfo.activeProcessorCount)

/// A fresh temporary directory, mode 0700.
func temporaryDirectory() throws -> String {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("actomaton-service-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    return url.path
}
