import ActomatonCluster
import ActomatonHost
import ActomatonService
import ArgumentParser
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `serve --listen --state postgres://…`: how this host joins a cluster of hosts sharing one
/// PostgreSQL database.
struct ClusterOptions: ParsableArguments {
    @Option(help: ArgumentHelp("With --state postgres://…: the URL the other hosts reach this one at "
                                + "(http://HOST:PORT), to forward requests for the instances it owns.", valueName: "url"))
    var advertise: String?

    @Option(help: ArgumentHelp("With --state postgres://…: how long this host's lease on its instances lasts without a "
                                + "renewal (renewed every third of it); after it, other hosts take them over. Whole seconds, 1 to 3600.", valueName: "seconds"))
    var leaseTTL: Int = 10
}

/// A host that joined a cluster: its membership, journal and forwarder, closed in order at
/// the end.
struct ClusterMembership {
    let host: ClusterHost
    let journal: PluginJournal
    let forwarder: ClusterForwarder
    let notifications: JournalNotifications

    /// Joins the cluster whose database `state` names; exits with one line when it cannot.
    static func join(state: String, options: ClusterOptions, journalOptions: JournalOptions) throws -> ClusterMembership {
        do {
            try PostgresJournalStore.check(journalOptions)
            let address = try PostgresAddress(state)
            guard let advertise = options.advertise else {
                throw ClusterError.badOption("--state postgres://… needs --advertise URL: how the other hosts reach this one")
            }
            let host = try ClusterHost(address: address, advertise: advertise, leaseTTL: .seconds(options.leaseTTL))
            let journal: PluginJournal
            do {
                journal = try PluginJournal(store: PostgresJournalStore(host: host), options: journalOptions) { error in
                    writeLine("error: \(error); stopping: no request after the last one answered was acknowledged", to: 2)
                    _exit(1)
                }
            } catch {
                host.stop()
                throw error
            }
            emit("joined the cluster at \(address) as host \(host.id) (\(advertise)), lease \(options.leaseTTL)s")
            return ClusterMembership(host: host, journal: journal, forwarder: ClusterForwarder(),
                                     notifications: JournalNotifications(address: address))
        } catch {
            printError(error)
            // An option the cluster cannot take is a bad command line, as everywhere else (64).
            if case .badOption? = error as? ClusterError { throw ExitCode.validationFailure }
            throw ExitCode.failure
        }
    }

    /// Drops from `registry` the instances another host took over (a fenced commit, or a
    /// lease found lapsed), as they happen.
    func dropTakenOver(from registry: InstanceRegistry, metrics: ServiceMetrics, logger: Logger) {
        journal.observeFencing { names in
            metrics.fencingRefused(names.count)
            Task { await registry.drop(Array(names), why: .movedToAnotherHost) }
        }
        host.onTimersAdopted { names in
            Task {
                for address in names.compactMap(InstanceRegistry.address(journaledAs:)) {
                    _ = try? await registry.instance(at: address, creating: false)
                }
            }
        }
        host.onOverShare { count in
            Task { await registry.shed(count) }
        }
        host.onLeaseLost { names in
            logger.warning("this host's lease lapsed before it was renewed; dropping its \(names.count) instances")
            Task { await registry.drop(names, why: .movedToAnotherHost) }
        }
    }

    /// Writes what is queued, gives every instance up and leaves the cluster.
    func leave() {
        notifications.stop()
        journal.close()
        host.stop()
        forwarder.shutdown()
    }
}

/// `actomaton-host cluster`: the hosts that share one PostgreSQL database.
struct Cluster: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Hosts that share one PostgreSQL database (serve --listen --state postgres://…).",
        subcommands: [ClusterStatusCommand.self])
}

/// `actomaton-host cluster status --state postgres://…`.
struct ClusterStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show the cluster's hosts, their leases, and how many instances each owns.")

    @Option(help: ArgumentHelp("The cluster's database: postgres://USER@HOST:PORT/DATABASE (the password from PGPASSWORD "
                                + "or a password file, never here).", valueName: "url"))
    var state: String

    func run() throws {
        do {
            let store = try PostgresJournalStore(readingAt: try PostgresAddress(state))
            defer { store.close(clean: true) }
            for line in try ClusterStatus.read(from: store).lines { emit(line) }
        } catch {
            printError(error)
            throw ExitCode.failure
        }
    }
}
