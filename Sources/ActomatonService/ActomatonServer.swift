#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ActomatonHost
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

/// `actomaton-host serve --listen`: the HTTP and WebSocket API over an ``InstanceRegistry``,
/// as a swift-service-lifecycle `Service`.
///
/// ```swift
/// let server = ActomatonServer(catalog: catalog, tokens: nil, listen: try ListenAddress("127.0.0.1:8080"))
/// let group = ServiceGroup(configuration: .init(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
/// try await group.run()
/// ```
///
/// On graceful shutdown (SIGTERM, SIGINT, SIGHUP) it stops taking requests (503), closes every watcher
/// with 1001, waits for the requests in flight, then stops the HTTP server (which stops
/// accepting connections and closes them as their requests end). What is not done within
/// ``ServiceConfiguration/shutdownTimeout`` is cancelled.
public final class ActomatonServer: Service, Sendable {
    /// The limits.
    public let configuration: ServiceConfiguration
    /// The instances.
    public let registry: InstanceRegistry
    /// The metrics `GET /metrics` serves.
    public let metrics: ServiceMetrics
    /// Whether requests are taken, and how many are in flight.
    public let lifecycle = ServiceLifecycleState()
    /// Where it listens.
    public let listen: ListenAddress
    private let tokens: TokenTable?
    private let logger: Logger
    let idempotency: IdempotencyCache
    /// The actions and deletions of each instance, in the order they came.
    let arrivals = ArrivalOrder()
    private let limiter: RateLimiter<Int>
    private let failedAuthentications: RateLimiter<ClientAddress>
    private let onListening: @Sendable (Int) async -> Void
    private let tls: ServiceTLS?
    private let forwarder: (any RequestForwarder)?
    /// The host names a request without tokens may address besides this machine's
    /// (``ServiceConfiguration/allowedHosts``; in a cluster, the host of this host's
    /// `--advertise` URL).
    private let allowedHosts: Set<String>
    private let journalChanges: (any JournalChangeSignal)?
    private let journalWatchers = JournalWatcherCount()
    /// The service's watchers, against `--max-watchers`.
    let watcherBudget: WatcherBudget

    /// Creates a server.
    ///
    /// - Parameters:
    ///   - catalog: The plugins it runs instances of.
    ///   - tokens: The tokens requests must carry; `nil` for none (then `listen` must be loopback:
    ///     see ``ListenAddress/checkExposure(hasTokens:)``).
    ///   - listen: Where it listens.
    ///   - configuration: The limits.
    ///   - logger: Where requests (debug) and errors (warning) are logged.
    ///   - now: The time for rate limits and idempotency windows; tests pass a fixed one.
    ///   - pluginLog: Where plugins' `host->log` lines go, each after its instance's address
    ///     (`counter/room-1: …`); by default to `logger`, at the info level. Failures no request
    ///     answers (a timer's action), and what an instance brought back from the journal could
    ///     not bring back, go to `logger` at the warning level.
    ///   - journal: Where instances are journaled (`--state`), if anywhere; the instances it
    ///     holds come back, each on its first request. The caller closes it once the server stopped.
    ///   - tls: The certificate and key to serve HTTPS and WSS with; `nil` for plain HTTP.
    ///   - forwarder: In a cluster (a journal with a placement), what sends requests for
    ///     instances other hosts own on to them; without one they are answered 421 with the owner.
    ///   - journalChanges: In a cluster, what wakes the watchers this host serves from the
    ///     journal for instances other hosts own; without one such a watch is answered 421.
    ///   - onListening: Told the port once the server listens.
    public init(
        catalog: PluginCatalog,
        tokens: TokenTable?,
        listen: ListenAddress,
        configuration: ServiceConfiguration = .init(),
        logger: Logger = Logger(label: "actomaton-host"),
        now: @escaping @Sendable () -> Duration = { ContinuousClock.now - ServiceClock.start },
        pluginLog: (@Sendable (String) -> Void)? = nil,
        journal: ServiceJournal? = nil,
        tls: ServiceTLS? = nil,
        forwarder: (any RequestForwarder)? = nil,
        journalChanges: (any JournalChangeSignal)? = nil,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) {
        self.tls = tls
        self.forwarder = forwarder
        self.journalChanges = journalChanges
        for name in configuration.allowedHosts where LocalRequests.allowedHostName(name) == nil {
            logger.warning("allowedHosts: \(ServiceError.quoted(name)) is not a host name or address; left out")
        }
        allowedHosts = Set(configuration.allowedHosts.compactMap(LocalRequests.allowedHostName))
            .union(journal?.placement.flatMap { LocalRequests.host(ofURL: $0.advertisedURL) }.map { [$0] } ?? [])
        self.configuration = configuration
        watcherBudget = WatcherBudget(limit: configuration.watcherLimit)
        self.tokens = tokens
        self.listen = listen
        self.logger = logger
        self.onListening = onListening
        let metrics = ServiceMetrics(journaled: journal != nil, clustered: journal?.placement != nil)
        self.metrics = metrics
        // A plugin's text is escaped: a log line stays one line, and cannot drive a terminal.
        let pluginLog = pluginLog ?? { line in logger.info("\(TerminalText.escaping(line))") }
        registry = InstanceRegistry(catalog: catalog, limits: configuration.registryLimits, metrics: metrics, log: pluginLog, now: now,
                                    journal: journal, errorLog: { line in logger.warning("\(TerminalText.escaping(line))") })
        idempotency = IdempotencyCache(window: configuration.idempotencyWindow, maxKeys: configuration.maxIdempotencyKeys,
                                       maxKeysPerToken: configuration.idempotencyKeysPerToken(tokens: tokens?.tokens.count),
                                       maxBytes: configuration.maxIdempotencyBytes, answersJournaled: journal != nil, now: now)
        if let journal {
            idempotency.restore(journal.receipts, wallNow: ServiceClock.wallMilliseconds())
            journal.journal.observeCommits { duration, records in metrics.journalCommitted(duration: duration, records: records) }
        }
        limiter = RateLimiter(rate: configuration.maxRequestsPerSecond, now: now)
        failedAuthentications = RateLimiter(rate: configuration.maxFailedAuthenticationsPerMinute, per: .seconds(60),
                                            maxKeys: ServiceConfiguration.maxFailingClients, now: now)
    }

    /// The router: the API's routes behind error, logging, draining and access middleware.
    public func makeRouter() -> Router<ServiceRequestContext> {
        // Every GET route answers HEAD too: the same status and fields, no body.
        let router = Router(context: ServiceRequestContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: NoSniffMiddleware())
        router.add(middleware: ServiceErrorMiddleware(maxBodySize: configuration.maxBodySize))
        router.add(middleware: HeaderLimitMiddleware(maxHeaderSize: configuration.maxHeaderSize))
        router.add(middleware: EmptySegmentMiddleware())
        router.add(middleware: LogRequestsMiddleware(.debug))
        router.add(middleware: DrainMiddleware(lifecycle: lifecycle))
        router.add(middleware: AccessMiddleware(tokens: tokens, limiter: limiter, rate: configuration.maxRequestsPerSecond,
                                                    failedAuthentications: failedAuthentications,
                                                    failureRate: configuration.maxFailedAuthenticationsPerMinute,
                                                    allowedHosts: allowedHosts))
        ServiceRoutes(registry: registry, configuration: configuration, metrics: metrics, lifecycle: lifecycle, idempotency: idempotency,
                      arrivals: arrivals, forwarder: forwarder, journalChanges: journalChanges, journalWatchers: journalWatchers, watcherBudget: watcherBudget)
            .add(to: router)
        InspectorRoutes().add(to: router)
        DiagramRoute(catalog: registry.catalog).add(to: router)
        return router
    }

    /// The Hummingbird application: HTTP/1.1 with WebSocket upgrades, at most
    /// ``ServiceConfiguration/maxConnections`` connections at a time, each closed when it idles
    /// (or takes to send a request's head) past ``ServiceConfiguration/connectionIdleTimeout``.
    /// Throws when the TLS configuration cannot make a context (``ServiceTLS/load(certificate:key:now:)``
    /// already tried it).
    public func makeApplication() throws -> some ApplicationProtocol {
        let router = makeRouter()
        let onListening = self.onListening
        let http = GuardedServerChannel.builder(router: router, idleTimeout: configuration.connectionIdleTimeout,
                                                maxBodySize: configuration.maxBodySize,
                                                webSocketPingInterval: configuration.webSocketPingInterval)
        return Application(
            router: router,
            server: try tls.map { try .tls(http, tlsConfiguration: $0.configuration) } ?? http,
            configuration: ApplicationConfiguration(
                address: .hostname(listen.host, port: listen.port), serverName: nil,
                availableConnectionsDelegate: MaximumAvailableConnections(configuration.maxConnections)),
            onServerRunning: ConnectionLimit.onServerRunning(onListening),
            logger: logger
        )
    }

    /// Brings back the instances the journal held with delayed or repeating actions pending, so
    /// that their timers run without a request (``InstanceRegistry/resumeTimedInstances()``);
    /// logs how many, and a warning for each left passivated. ``run()`` does it as the server
    /// starts. Returns how many were brought back.
    @discardableResult
    public func resumeTimedInstances() async -> Int {
        let (resumed, left) = await registry.resumeTimedInstances()
        if resumed > 0 { logger.info("brought back \(resumed) instance\(resumed == 1 ? "" : "s") with pending timers from the journal") }
        for (address, why) in left {
            logger.warning("\(TerminalText.escaping(address.description)): its pending timers wait for its first request: \(TerminalText.escaping(why))")
        }
        return resumed
    }

    /// Runs the server until graceful shutdown, then shuts it down as the type's summary says.
    public func run() async throws {
        defer {
            // Said once every request has ended: those the end of the shutdown's time cut off.
            let cutOff = lifecycle.cutOff
            if cutOff > 0 {
                let line = "--shutdown-timeout (\(seconds(configuration.shutdownTimeout))) ran out: \(cutOff) requests in flight were cut off "
                    + "(503; an action still waiting for its turn was not applied)"
                logger.warning("\(line)")
            }
        }
        let application = try makeApplication()
        // The application runs in a group of its own, so that it is told to shut down only
        // once this service has drained.
        let inner = ServiceGroup(configuration: .init(services: [application], logger: logger))
        // Passivates idle instances, checking a few times per idle timeout, until the server ends.
        let registry = self.registry
        let period = max(configuration.idleTimeout / 4, .milliseconds(100))
        let sweeper = Task {
            while !Task.isCancelled {
                do { try await Task.sleep(for: period) } catch { break }
                await registry.passivateIdle()
            }
        }
        defer { sweeper.cancel() }
        // Beside the listening server: a request for one of them meanwhile gets the same instance.
        let resumer = Task { await self.resumeTimedInstances() }
        defer { resumer.cancel() }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                // Detached: a service group run inside a service is told of the outer graceful
                // shutdown at once (a task-local), and would close the watchers' connections
                // (1000, no reason) while the drain closes them with 1001. It is told only
                // after the drain, below; cancellation still reaches it.
                let application = Task.detached { try await inner.run() }
                try await withTaskCancellationHandler { try await application.value } onCancel: { application.cancel() }
                return true
            }
            group.addTask {
                try await gracefulShutdown()
                await self.drain()
                await inner.triggerGracefulShutdown()
                return false
            }
            // Until the application ends: when it fails, or once drained and shut down.
            while let applicationEnded = try await group.next(), !applicationEnded {}
            group.cancelAll()
        }
    }

    /// The signals that shut the service down gracefully: SIGTERM, SIGINT, and SIGHUP (a
    /// closed terminal; it ended the process at once, leaving its journal's log behind) —
    /// but SIGINT or SIGHUP when the process was started ignoring it (a background job's
    /// SIGINT, `nohup`'s SIGHUP): it stays ignored.
    public static var shutdownSignals: [UnixSignal] { shutdownSignalPairs.map(\.signal) }

    /// The numbers of ``shutdownSignals``.
    public static var shutdownSignalNumbers: [Int32] { shutdownSignalPairs.map(\.number) }

    /// Each of ``shutdownSignals`` with its number.
    private static var shutdownSignalPairs: [(number: Int32, signal: UnixSignal)] {
        [(SIGTERM, UnixSignal.sigterm)] + [(SIGINT, UnixSignal.sigint), (SIGHUP, .sighup)].filter { !SystemCall.ignores(signal: $0.0) }
    }

    /// Runs the server in a service group of its own that shuts it down gracefully on one of
    /// ``shutdownSignals``, and cancels what is left after ``ServiceConfiguration/shutdownTimeout``.
    ///
    /// - Throws: ``ServiceRunError`` when it cannot listen (the address is in use, or not this
    ///   machine's), or another error the server stopped with.
    public func runUntilSignalled() async throws {
        var group = ServiceGroupConfiguration(services: [self], gracefulShutdownSignals: ActomatonServer.shutdownSignals, logger: logger)
        group.maximumGracefulShutdownDuration = configuration.shutdownTimeout
        do {
            try await ServiceGroup(configuration: group).run()
        } catch let error as IOError {
            // Binding is the only socket call the service makes before it listens.
            throw ServiceRunError(description: "cannot listen on \(ListenAddress.display(host: listen.host, port: listen.port)): "
                                  + String(cString: strerror(error.errnoCode)))
        }
    }

    /// Stops taking requests, closes every watcher with 1001 and waits for the requests in
    /// flight, and for the watchers fed from the journal to end (each closes with 1001 once it
    /// has read the journal; the application's own shutdown would close it with 1000).
    public func drain() async {
        lifecycle.beginDraining()
        logger.info("shutting down: \(lifecycle.inFlight) requests in flight")
        await registry.endAllWatchers(.shuttingDown)
        // The watchers fed from the journal look at the lifecycle when woken.
        journalChanges?.wakeAll()
        await lifecycle.waitUntilIdle()
        let fedFromTheJournal = journalWatchers.total
        if fedFromTheJournal > 0 {
            logger.info("shutting down: waiting for \(fedFromTheJournal) watchers fed from the journal to take their close")
        }
        await journalWatchers.waitUntilNone()
    }
}

/// Why the service could not run, in one line: `cannot listen on 127.0.0.1:8080: Address already in use`.
public struct ServiceRunError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The line.
    public var description: String
}

/// The service's time origin, for rate limits and idempotency windows.
public enum ServiceClock {
    /// When the process first asked.
    public static let start = ContinuousClock.now

    /// The wall clock, in milliseconds since 1970: when journaled receipts expire.
    public static func wallMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
