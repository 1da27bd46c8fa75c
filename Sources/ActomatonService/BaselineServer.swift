import Hummingbird
import HummingbirdCore
import Logging
import Synchronization

/// The load benchmark's baseline (`make server-bench`): a plain Hummingbird server whose one
/// route, `POST /v1/machines/{plugin}/{key}`, reads the body and increments one counter.
///
/// It runs on the same framework, HTTP configuration and connection limit as
/// ``ActomatonServer``, so the ratio of the two measures what the service adds: checking the
/// request, the instance registry, the machine, the plugin call, the transition's JSON.
public enum BaselineServer {
    /// Serves until the task is cancelled or the process is signalled.
    ///
    /// - Parameters:
    ///   - listen: Where it listens.
    ///   - maxConnections: The most connections open at a time.
    ///   - onListening: Told the port once the server listens.
    public static func run(listen: ListenAddress, maxConnections: Int = ServiceConfiguration().maxConnections,
                           onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let count = Atomic<Int>(0)
        let router = Router()
        router.post("/v1/machines/:plugin/:key") { request, _ -> Response in
            _ = try await request.body.collect(upTo: ServiceConfiguration().maxBodySize)
            let value = count.add(1, ordering: .relaxed).newValue
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"count":\#(value)}"#)))
        }
        var logger = Logger(label: "actomaton-baseline")
        logger.logLevel = .warning
        let application = Application(
            router: router,
            configuration: ApplicationConfiguration(
                address: .hostname(listen.host, port: listen.port), serverName: nil,
                availableConnectionsDelegate: MaximumAvailableConnections(maxConnections)),
            onServerRunning: ConnectionLimit.onServerRunning(onListening),
            logger: logger)
        try await application.runService()
    }
}
