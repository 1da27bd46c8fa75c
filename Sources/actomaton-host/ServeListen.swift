import ActomatonCluster
import ActomatonHost
import ActomatonService
import ArgumentParser
import HostCommandLine
import Logging
#if canImport(Glibc)
import Glibc

/// `RLIMIT_NOFILE`, as `getrlimit` takes it here.
private let openFilesResource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#elseif canImport(Musl)
import Musl

/// `RLIMIT_NOFILE`, as `getrlimit` takes it here.
private let openFilesResource = RLIMIT_NOFILE
#endif

/// `serve --listen` and its limits: the host as a network service (``ActomatonServer``).
struct NetworkOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Serve the HTTP and WebSocket API on HOST:PORT instead of reading lines "
                                + "(a loopback address unless --tokens is given).", valueName: "host:port"))
    var listen: String?

    @Option(help: ArgumentHelp("The tokens file: lines `TOKEN scope…` (read:PLUGIN, send:PLUGIN, read:*, send:*, *, admin); "
                                + "it must belong to you or root and be readable by no one else (chmod 600).", valueName: "file"))
    var tokens: String?

    @Option(name: .customLong("allow-host"),
            help: ArgumentHelp("A host name (or address) requests may address without --tokens besides this machine's: a reverse "
                                + "proxy's on this machine, an alias of 127.0.0.1. Repeatable, at most \(ServiceConfiguration.maxAllowedHosts).",
                               valueName: "name"))
    var allowHost: [String] = []

    @Option(help: ArgumentHelp("Serve HTTPS and WSS with this PEM certificate chain (with --tls-key).", valueName: "file"))
    var tlsCertificate: String?

    @Option(help: ArgumentHelp("The PEM private key of --tls-certificate; readable by no one else (chmod 600).", valueName: "file"))
    var tlsKey: String?

    @Option(help: ArgumentHelp("The largest request body, at most 64M (K, M suffixes allowed; default: 64K).", valueName: "size"),
            transform: parseSize)
    var maxBodySize: Int64 = Int64(ServiceConfiguration().maxBodySize)

    @Option(help: ArgumentHelp("The largest size of a request's header fields, Host included, at most 64K (K suffix allowed; "
                                + "default: 16K).", valueName: "size"),
            transform: parseSize)
    var maxHeaderSize: Int64 = Int64(ServiceConfiguration().maxHeaderSize)

    @Option(help: ArgumentHelp("The most connections open at a time (1 to 1000000); more wait to be accepted.", valueName: "count"))
    var maxConnections = ServiceConfiguration().maxConnections

    @Option(help: ArgumentHelp("Seconds a connection may wait between requests, or take to send a request (head and body; "
                                + "408 past it), before it is closed (a WebSocket, once open, is not idle).", valueName: "seconds"))
    var connectionIdleTimeout = 60

    @Option(help: ArgumentHelp("The most instances in memory, all plugins together (1 to 100000000).", valueName: "count"))
    var maxInstances = ServiceConfiguration().maxInstances

    @Option(help: ArgumentHelp("The most instances of one plugin, 1 to 100000000 (default: 100000 with --listen; 256 when reading lines, where "
                                + "each instance may be a worker process).", valueName: "count"))
    var maxInstancesPerPlugin: Int?

    @Option(help: ArgumentHelp("The most worker processes at a time, one per instance in memory of a plugin that runs in "
                                + "one (1 to 1000000): past it, the least recently used idle instance is passivated.", valueName: "count"))
    var maxWorkers = ServiceConfiguration().maxWorkers

    @Option(help: ArgumentHelp("The most delayed and repeating actions all instances may have running or waiting together "
                                + "(1 to 100000000; each takes about 5 KB): an action asking for more fails (422), as past --max-effects.", valueName: "count"))
    var maxEffectsTotal = ServiceConfiguration().maxEffectsTotal

    @Option(help: ArgumentHelp("The most bytes of names and strings all instances' delayed and repeating actions may carry together "
                                + "(1M to 1T; default: 1G).", valueName: "size"), transform: parseSize)
    var maxEffectBytesTotal = Int64(ServiceConfiguration().maxEffectBytesTotal)

    @Option(help: ArgumentHelp("The most actions a second all instances' delayed and repeating actions may send together, in bursts "
                                + "of as many (0 for no limit; at most 1000000000): past it a timer's action waits for its slot, "
                                + "and a repeating one skips the ticks it missed.", valueName: "count"))
    var maxTimerActionsPerSecond = ServiceConfiguration().maxTimerActionsPerSecond

    @Option(help: ArgumentHelp("The most WebSocket watchers of one instance (1 to 1000000).", valueName: "count"))
    var maxWatchersPerInstance = ServiceConfiguration().maxWatchersPerInstance

    @Option(help: ArgumentHelp("The most watchers of the whole service, 1 to 1000000 (default: --max-connections less a "
                                + "quarter of them, at least 1 and at most 64, which stay for requests and health checks).", valueName: "count"))
    var maxWatchers: Int?

    @Option(help: ArgumentHelp("The most transitions buffered for a watcher before it is closed as too slow (1 to 1000000).", valueName: "count"))
    var watcherBuffer = ServiceConfiguration().watcherBuffer

    @Option(help: ArgumentHelp("The most bytes of transitions buffered for a watcher before it is closed as too slow "
                                + "(1K to 1G; K, M and G suffixes allowed; default: 1M).", valueName: "size"),
            transform: parseSize)
    var watcherBufferBytes = Int64(ServiceConfiguration().watcherBufferBytes)

    @Option(help: ArgumentHelp("Seconds a watcher closed by the service (too slow, its instance deleted, a shutdown) has to take "
                                + "what is buffered and the close before its connection is cut; in a cluster, also how long a "
                                + "watcher fed from the journal may take nothing of what is written to it.", valueName: "seconds"))
    var watcherCloseTimeout: Int = 10

    @Option(help: ArgumentHelp("How many of an instance's last transitions are kept for a watcher that reconnects with ?after=SEQ "
                                + "(0 to 1000000; 0: none; none kept across a passivation or a restart).", valueName: "count"))
    var watchHistory = ServiceConfiguration().watchHistory

    @Option(help: ArgumentHelp("The most bytes of an instance's kept transitions, their states counted; the oldest go first "
                                + "(1K to 1G; K, M and G suffixes allowed; default: 1M).", valueName: "size"),
            transform: parseSize)
    var watchHistoryBytes = Int64(ServiceConfiguration().watchHistoryBytes)

    @Option(help: ArgumentHelp("The most bytes all instances' kept transitions may take together, counted as --watch-history-bytes counts "
                                + "them, shared fairly: past it, instances over their share are cut down for one under it, "
                                + "and one at its share lets its own oldest go (1K to 1T; default: 256M).",
                               valueName: "size"),
            transform: parseSize)
    var watchHistoryTotalBytes = Int64(ServiceConfiguration().watchHistoryTotalBytes)

    @Option(help: ArgumentHelp("The most bytes passivated instances may keep in memory together, their snapshots and states (without "
                                + "--state; with it they keep none): past it, an idle instance stays in memory, and a new one that needs "
                                + "its room is 429 (1M to 1T; K, M, G and T suffixes allowed; default: 1G).", valueName: "size"),
            transform: parseSize)
    var maxPassivatedBytes = Int64(ServiceConfiguration().maxPassivatedBytes)

    @Option(help: ArgumentHelp("The most keys one page of GET /v1/machines/PLUGIN lists, at most 100000; also the default limit.",
                                valueName: "count"))
    var maxPageSize = ServiceConfiguration().maxPageSize

    @Option(help: ArgumentHelp("Requests per second one token may send, in bursts of up to as many (a token bucket; 0: no limit; at most 1000000000).", valueName: "count"))
    var maxRequestsPerSecond = ServiceConfiguration().maxRequestsPerSecond

    @Option(help: ArgumentHelp("Failed authentications one client address (an IPv6 address's /64) may make in a minute; "
                                + "past it, its requests are 429 until time gives them back (0: no limit; at most 1000000000).", valueName: "count"))
    var maxFailedAuthenticationsPerMinute = ServiceConfiguration().maxFailedAuthenticationsPerMinute

    @Option(help: ArgumentHelp("How long, in seconds, a response to a request with an Idempotency-Key is kept for retries.",
                                valueName: "seconds"))
    var idempotencyWindow: Int = 24 * 3600

    @Option(help: ArgumentHelp("The most idempotency keys kept at a time (1 to 100000000).", valueName: "count"))
    var maxIdempotencyKeys = ServiceConfiguration().maxIdempotencyKeys

    @Option(help: ArgumentHelp("The most idempotency keys one token may have kept, 1 to 100000000 (default: an equal share, "
                                + "--max-idempotency-keys divided by the number of tokens).", valueName: "count"))
    var maxIdempotencyKeysPerToken: Int?

    @Option(help: ArgumentHelp("The most bytes the answers kept for idempotency keys may take in memory, each token a share as of the "
                                + "keys: with --state the rest are kept only in the journal; without, a new key is 429 past it "
                                + "(1M to 1T; K, M, G and T suffixes allowed; default: 256M).", valueName: "size"),
            transform: parseSize)
    var maxIdempotencyBytes = Int64(ServiceConfiguration().maxIdempotencyBytes)

    @Option(help: ArgumentHelp("Seconds an instance may be idle (no request, watcher or pending timer) before it is passivated: "
                                + "its state kept as bytes, its machine freed, restored by the next request.", valueName: "seconds"))
    var idleTimeout: Int = 300

    @Option(help: ArgumentHelp("Seconds a graceful shutdown (SIGTERM, SIGINT, SIGHUP) may take before what is left is cancelled.",
                                valueName: "seconds"))
    var shutdownTimeout: Int = 10

    @Option(help: ArgumentHelp("The lowest level of log lines printed: trace, debug (a line per request), info, notice, warning, error, critical.",
                                valueName: "level"))
    var logLevel: String = "info"

    /// The longest any of the seconds flags may be: 30 days. Past about 292 years in
    /// nanoseconds, a time overflowed and trapped the service (at start, at a shutdown, or when
    /// it closed a watcher).
    static let maxSeconds = 30 * 24 * 3600

    /// The count flags, their values (an unset optional one as its lowest) and their ranges. A
    /// count past these asks for more than a host has (memory, descriptors); with no bound,
    /// `--watcher-buffer` near `Int.max` overflowed the sum with a resuming watcher's backlog,
    /// and the first such watcher crashed the service.
    private var counts: [(name: String, value: Int, range: ClosedRange<Int>)] {
        [("--max-connections", maxConnections, 1...1_000_000), ("--max-instances", maxInstances, 1...100_000_000),
         ("--max-instances-per-plugin", maxInstancesPerPlugin ?? 1, 1...100_000_000), ("--max-workers", maxWorkers, 1...1_000_000),
         ("--max-effects-total", maxEffectsTotal, 1...100_000_000), ("--max-timer-actions-per-second", maxTimerActionsPerSecond, 0...1_000_000_000),
         ("--max-watchers-per-instance", maxWatchersPerInstance, 1...1_000_000), ("--watcher-buffer", watcherBuffer, 1...1_000_000),
         ("--max-idempotency-keys", maxIdempotencyKeys, 1...100_000_000),
         ("--max-idempotency-keys-per-token", maxIdempotencyKeysPerToken ?? 1, 1...100_000_000),
         ("--max-requests-per-second", maxRequestsPerSecond, 0...1_000_000_000),
         ("--max-failed-authentications-per-minute", maxFailedAuthenticationsPerMinute, 0...1_000_000_000)]
    }

    func validate() throws {
        for (name, value, range) in counts where !range.contains(value) {
            throw ValidationError(countRangeMessage(name, range))
        }
        for (name, value) in [("--idempotency-window", idempotencyWindow), ("--shutdown-timeout", shutdownTimeout),
                              ("--idle-timeout", idleTimeout), ("--watcher-close-timeout", watcherCloseTimeout),
                              ("--connection-idle-timeout", connectionIdleTimeout)] where !(1...Self.maxSeconds).contains(value) {
            throw ValidationError("\(name) must be from 1 to \(Self.maxSeconds) seconds (30 days)")
        }
        if let maxWatchers, !(1...1_000_000).contains(maxWatchers) { throw ValidationError("--max-watchers must be from 1 to 1000000") }
        guard (0...1_000_000).contains(watchHistory) else { throw ValidationError("--watch-history must be from 0 to 1000000") }
        for (name, value) in [("--watch-history-bytes", watchHistoryBytes), ("--watcher-buffer-bytes", watcherBufferBytes)]
        where !(1 << 10...1 << 30).contains(value) {
            throw ValidationError("\(name) must be from 1K to 1G (1024 to 1073741824 bytes)")
        }
        guard (1 << 20...1 << 40).contains(maxEffectBytesTotal) else {
            throw ValidationError("--max-effect-bytes-total must be from 1M to 1T (1048576 to 1099511627776 bytes)")
        }
        guard (1 << 20...1 << 40).contains(maxIdempotencyBytes) else {
            throw ValidationError("--max-idempotency-bytes must be from 1M to 1T (1048576 to 1099511627776 bytes)")
        }
        guard (1 << 20...1 << 40).contains(maxPassivatedBytes) else {
            throw ValidationError("--max-passivated-bytes must be from 1M to 1T (1048576 to 1099511627776 bytes)")
        }
        guard (1 << 10...1 << 40).contains(watchHistoryTotalBytes) else {
            throw ValidationError("--watch-history-total-bytes must be from 1K to 1T (1024 to 1099511627776 bytes)")
        }
        guard (1...100_000).contains(maxPageSize) else { throw ValidationError("--max-page-size must be from 1 to 100000") }
        guard maxBodySize <= 64 << 20 else { throw ValidationError("--max-body-size must be at most 64M") }
        guard (1...(64 << 10)).contains(maxHeaderSize) else { throw ValidationError("--max-header-size must be from 1 to 64K") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level takes trace, debug, info, notice, warning, error or critical") }
        if !allowHost.isEmpty, tokens != nil {
            throw ValidationError("--allow-host is for a service without --tokens: with tokens, a request's token decides, whatever it addresses")
        }
        guard allowHost.count <= ServiceConfiguration.maxAllowedHosts else {
            throw ValidationError("--allow-host is given \(allowHost.count) times; at most \(ServiceConfiguration.maxAllowedHosts)")
        }
        for name in allowHost where ServiceConfiguration.allowedHostName(name) == nil {
            throw ValidationError("--allow-host '\(TerminalText.escaping(String(name.prefix(80))))' is not a host name or address (letters, digits, '-' and '.', "
                                  + "or an IP address; no port, no path)")
        }
    }

    var configuration: ServiceConfiguration {
        var configuration = ServiceConfiguration()
        configuration.maxBodySize = Int(maxBodySize)
        configuration.maxHeaderSize = Int(maxHeaderSize)
        configuration.maxConnections = maxConnections
        configuration.connectionIdleTimeout = .seconds(connectionIdleTimeout)
        configuration.maxInstances = maxInstances
        configuration.maxInstancesPerPlugin = maxInstancesPerPlugin ?? configuration.maxInstancesPerPlugin
        configuration.maxWorkers = maxWorkers
        configuration.maxEffectsTotal = maxEffectsTotal
        configuration.maxEffectBytesTotal = Int(maxEffectBytesTotal)
        configuration.maxTimerActionsPerSecond = maxTimerActionsPerSecond
        configuration.maxWatchersPerInstance = maxWatchersPerInstance
        configuration.maxWatchers = maxWatchers
        configuration.watcherBuffer = watcherBuffer
        configuration.watcherBufferBytes = Int(watcherBufferBytes)
        configuration.watchHistory = watchHistory
        configuration.watchHistoryBytes = Int(watchHistoryBytes)
        configuration.watchHistoryTotalBytes = Int(watchHistoryTotalBytes)
        configuration.maxPassivatedBytes = Int(maxPassivatedBytes)
        configuration.watcherCloseTimeout = .seconds(watcherCloseTimeout)
        configuration.maxRequestsPerSecond = maxRequestsPerSecond
        configuration.maxFailedAuthenticationsPerMinute = maxFailedAuthenticationsPerMinute
        configuration.maxPageSize = maxPageSize
        configuration.idempotencyWindow = .seconds(idempotencyWindow)
        configuration.maxIdempotencyKeys = maxIdempotencyKeys
        configuration.maxIdempotencyKeysPerToken = maxIdempotencyKeysPerToken
        configuration.maxIdempotencyBytes = Int(maxIdempotencyBytes)
        configuration.shutdownTimeout = .seconds(shutdownTimeout)
        configuration.idleTimeout = .seconds(idleTimeout)
        configuration.allowedHosts = allowHost
        return configuration
    }
}

extension Serve {
    /// `serve --listen`: loads the directory's plugins as machine types and serves them until
    /// SIGTERM, SIGINT or SIGHUP.
    func runService(listen text: String, isolation: PluginIsolation) async throws {
        let listen: ListenAddress
        var tokens: TokenTable?
        var tls: ServiceTLS?
        var connections: (count: Int, warning: String?)
        do {
            // The address and the flags' fit are checked by `validateListening()`.
            listen = try ListenAddress(text)
            let explicit = CommandLine.arguments.contains { $0 == "--max-connections" || $0.hasPrefix("--max-connections=") }
            connections = try Self.makeRoomForConnections(network.maxConnections, explicit: explicit)
            if let path = network.tokens { tokens = try TokenTable.load(path: path) }
            if let certificate = network.tlsCertificate, let key = network.tlsKey {
                tls = try ServiceTLS.load(certificate: certificate, key: key)
            }
        } catch {
            printError(error)
            throw ExitCode.failure
        }
        let level = Logger.Level(rawValue: network.logLevel) ?? .info
        LoggingSystem.bootstrap { label in ServiceLogHandler(label: label, level: level) }
        let logger = Logger(label: "actomaton-host")
        // The library's own error lines (a snapshot after an action that failed) go to the log too.
        HostErrorLines.route { line in
            logger.warning("\(TerminalText.escaping(line.hasPrefix("error: ") ? String(line.dropFirst(7)) : line))")
        }
        for warning in tls?.warnings ?? [] { logger.warning("\(TerminalText.escaping(warning))") }
        if let warning = connections.warning { logger.warning("\(warning)") }
        let loaded: (catalog: PluginCatalog, problems: [String])
        do {
            loaded = try PluginCatalog.load(directory: plugins, isolation: isolation, options: loading.loadOptions)
        } catch {
            printError(error)
            throw ExitCode.failure
        }
        for problem in loaded.problems { printError(Message(problem)) }
        // The directory is read once: a service without a plugin could only answer 404.
        if loaded.catalog.names.isEmpty {
            let why = loaded.problems.isEmpty ? "it has no plugin file (.so or .wasm)" : "every plugin file in it was refused"
            printError(Message("no plugin to serve in \(plugins): \(why); serve --listen reads its plugins once, at start"))
            throw ExitCode.failure
        }
        for name in loaded.catalog.names {
            let type = loaded.catalog.types[name]!
            emit("loaded plugin \(name) \(type.plugin.manifest.version) from \(type.path)")
        }
        var configuration = network.configuration
        configuration.maxConnections = connections.count
        configuration.maxEffects = machines.maxEffects
        // With --state: one journal for every instance, each under `plugin/key` (in a cluster's
        // shared database with --state postgres://…).
        var membership: ClusterMembership?
        let journal: PluginJournal?
        if let state = persistence.state, PostgresAddress.isAddress(state) {
            membership = try ClusterMembership.join(state: state, options: cluster, journalOptions: try persistence.journalOptions())
            journal = membership?.journal
        } else {
            journal = try persistence.openJournal(printer: TransitionPrinter(print: { _ in }))
        }
        var serviceJournal: ServiceJournal?
        do {
            serviceJournal = try journal.map { journal throws(PluginJournalError) in
                try ServiceJournal(journal, placement: membership?.host, maxReceipts: configuration.maxIdempotencyKeys,
                                   maxAnswerBytes: configuration.maxIdempotencyBytes)
            }
        } catch {
            printError(error)
            membership?.leave()
            throw ExitCode.failure
        }
        if let serviceJournal, membership == nil {
            emit("journal \(serviceJournal.journal.path): \(serviceJournal.instances.count) instances to bring back")
        }
        let secured = tls == nil ? "" : " (TLS)"
        let server = ActomatonServer(catalog: loaded.catalog, tokens: tokens, listen: listen, configuration: configuration,
                                     logger: logger, journal: serviceJournal, tls: tls,
                                     forwarder: membership?.forwarder, journalChanges: membership?.notifications, onListening: { port in
            emit("listening on \(ListenAddress.display(host: listen.host, port: port))\(secured)")
        })
        // Its receipts are the idempotency cache's now: not held a second time, uncounted, for
        // as long as the service runs (review).
        serviceJournal = nil
        membership?.dropTakenOver(from: server.registry, metrics: server.metrics, logger: logger)
        // However it ends, what was appended is committed and the file left tidy: once, by
        // the service's end or by the watchdog.
        let closing = RunOnce { [membership] in if let membership { membership.leave() } else { journal?.close() } }
        ServeShutdownWatchdog.install(signals: ActomatonServer.shutdownSignalNumbers, timeout: configuration.shutdownTimeout, logger: logger) {
            closing.run()
        }
        var failure: (any Error)?
        do { try await server.runUntilSignalled() } catch { failure = error }
        ServeShutdownWatchdog.serviceEnded()
        closing.run()
        PluginLogLines.sayWhatWasLeftOut()
        if let failure {
            printError(failure)
            throw ExitCode.failure
        }
        emit("stopped")
    }
}

extension Serve {
    /// The descriptors kept, besides one per connection, for the rest: the listening socket,
    /// the journal and its log, plugin files, pipes and workers' channels.
    static let descriptorsBesideConnections = 256

    /// Raises the limit on open descriptors toward its hard limit, as far as `maxConnections`
    /// and ``descriptorsBesideConnections`` need, and returns the connections served: when the
    /// hard limit is below that, `--max-connections` given (`explicit`) is refused with one line,
    /// and the default lowered to fit, with a warning. A service out of descriptors could not
    /// accept a connection, and spun at 70% of a core with nothing logged and `/healthz`
    /// unanswered (`ulimit -n 64` and the default 1,024).
    static func makeRoomForConnections(_ maxConnections: Int, explicit: Bool) throws(Message) -> (count: Int, warning: String?) {
        var limit = rlimit()
        guard getrlimit(openFilesResource, &limit) == 0 else { return (maxConnections, nil) }
        var count = maxConnections
        var warning: String?
        if !explicit, limit.rlim_max <= rlim_t(descriptorsBesideConnections) {
            throw Message("this process may open at most \(limit.rlim_max) files (ulimit -Hn); the service needs more than "
                          + "\(descriptorsBesideConnections) for itself and one per connection: raise the limit")
        }
        if !explicit, limit.rlim_max < rlim_t(maxConnections + descriptorsBesideConnections) {
            count = max(Int(limit.rlim_max) - descriptorsBesideConnections, 1)
            warning = "--max-connections is \(count), not \(maxConnections): this process may open at most \(limit.rlim_max) files "
                + "(ulimit -Hn), \(descriptorsBesideConnections) of them kept for the rest"
        }
        let needed = rlim_t(count + descriptorsBesideConnections)
        guard limit.rlim_cur < needed else { return (count, warning) }
        guard limit.rlim_max >= needed else {
            throw Message("--max-connections \(count) needs \(needed) open files (one per connection and "
                          + "\(descriptorsBesideConnections) for the rest), but this process may open at most \(limit.rlim_max) "
                          + "(ulimit -Hn): lower --max-connections, or raise the limit")
        }
        limit.rlim_cur = needed
        guard setrlimit(openFilesResource, &limit) == 0 else {
            throw Message("--max-connections \(count) needs \(needed) open files, and the limit (ulimit -n) "
                          + "cannot be raised to it: \(String(cString: strerror(errno)))")
        }
        return (count, warning)
    }
}

/// `make server-bench`'s baseline: a plain Hummingbird handler that increments a counter.
struct ServeBaseline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve-baseline", abstract: "The load benchmark's baseline: a plain HTTP handler that increments a counter.",
        shouldDisplay: false)

    @Option(help: ArgumentHelp("Where it listens (a loopback address).", valueName: "host:port"))
    var listen: String

    func run() async throws {
        let address: ListenAddress
        do {
            address = try ListenAddress(listen)
            try address.checkExposure(hasTokens: false)
        } catch {
            printError(error)
            throw ExitCode.failure
        }
        try await BaselineServer.run(listen: address) { port in
            emit("listening on \(ListenAddress.display(host: address.host, port: port))")
        }
    }
}

extension Serve {
    /// The flags only `serve --listen` reads: those of ``NetworkOptions`` and
    /// ``ClusterOptions``, but `--listen` and `--max-instances-per-plugin` (read in both modes).
    static let listenOnlyFlags: [String] = {
        let help = NetworkOptions.helpMessage(columns: 10_000) + "\n" + ClusterOptions.helpMessage(columns: 10_000)
        return help.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  --"), let name = line.dropFirst(2).split(separator: " ").first else { return nil }
            return String(name)
        }.filter { $0 != "--listen" && $0 != "--max-instances-per-plugin" }
    }()

    /// Refuses, as a bad command line (exit 64, before anything runs), a `--listen` address
    /// that is not one, one others can reach without `--tokens`, and TLS flags that do not fit:
    /// they were errors of the run (exit 1), after the journal was opened.
    func validateListening() throws {
        guard let text = network.listen else { return }
        do {
            let address = try ListenAddress(text)
            if network.tokens == nil { try address.checkExposure(hasTokens: false) }
        } catch {
            throw ValidationError("\(error)")
        }
        if (network.tlsCertificate == nil) != (network.tlsKey == nil) {
            throw ValidationError("--tls-certificate and --tls-key go together")
        }
        if network.tlsCertificate != nil, let state = persistence.state, PostgresAddress.isAddress(state) {
            throw ValidationError("--tls-certificate cannot be used in a cluster (--state postgres://…): hosts forward requests "
                                  + "to each other in plain HTTP; put TLS in front of the hosts instead")
        }
    }

    /// The flags only `serve` without `--listen` reads.
    static let linesOnlyFlags = ["--script", "--print"]

    /// Refuses a flag the chosen mode does not read (the audit: `--tokens /nonexistent` and
    /// `--lease-ttl 0` were accepted, without `--listen`, and silently ignored).
    ///
    /// - Parameter arguments: The command line's arguments.
    func refuseFlagsOfTheOtherMode(in arguments: [String]) throws {
        let listening = network.listen != nil
        // The cluster's flags, without a cluster: taken and ignored (`--lease-ttl -5` too).
        if listening, !(persistence.state.map(PostgresAddress.isAddress) ?? false),
           let given = arguments.first(where: { argument in ["--advertise", "--lease-ttl"].contains { argument == $0 || argument.hasPrefix($0 + "=") } }) {
            let name = given.split(separator: "=").first.map(String.init) ?? given
            throw ValidationError("\(name) is for a cluster of hosts: serve --listen with --state postgres://USER@HOST:PORT/DATABASE")
        }
        let foreign = listening ? Self.linesOnlyFlags : Self.listenOnlyFlags
        guard let given = arguments.first(where: { argument in foreign.contains { argument == $0 || argument.hasPrefix($0 + "=") } })
        else { return }
        let name = given.split(separator: "=").first.map(String.init) ?? given
        throw ValidationError(listening ? "\(name) is for serve reading lines, not for serve --listen"
                                        : "\(name) is for serve --listen only")
    }
}
