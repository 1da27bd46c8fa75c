import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// One connection to the cluster's database, used by blocking calls from threads of the
/// host's own (the journal's writer, the lease keeper, a reader's thread), never from the
/// concurrency pool: each call waits for the server's answer. A broken connection is made
/// again on the next call. Calls are serialized.
final class PostgresLink: @unchecked Sendable {
    /// How long connecting may take.
    static let connectTimeout = TimeAmount.seconds(5)

    let address: PostgresAddress
    private let name: String
    private let lock = Mutex(())
    /// Guarded by `lock`.
    private var connection: PostgresConnection?
    private var closed = false
    private let logger: Logger

    /// A link to `address`; connects on its first call. `name` says which of the host's
    /// links it is, in the server's `application_name`.
    init(_ address: PostgresAddress, name: String) {
        self.address = address
        self.name = name
        var logger = Logger(label: "actomaton-cluster")
        logger.logLevel = .critical
        self.logger = logger
    }

    deinit {
        close()
    }

    /// Runs `queries` in order on one connection, sent together (pipelined), and returns their
    /// results; the first failure is thrown once all have answered.
    @discardableResult
    func run(_ queries: [PostgresQuery]) throws(ClusterError) -> [PostgresQueryResult] {
        try lock.withLock { _ throws(ClusterError) in
            let connection = try connected()
            let futures = queries.map { connection.query($0, logger: logger) }
            var results: [PostgresQueryResult] = []
            var failure: (any Error)?
            for future in futures {
                do {
                    results.append(try future.wait())
                } catch {
                    if failure == nil { failure = error }
                }
            }
            if let failure {
                if connection.isClosed { self.connection = nil }
                throw Self.clusterError(failure)
            }
            return results
        }
    }

    /// Runs one query and returns its result.
    @discardableResult
    func run(_ query: PostgresQuery) throws(ClusterError) -> PostgresQueryResult {
        try run([query])[0]
    }

    /// Runs `body` inside one transaction: `BEGIN`, what `body` runs, `COMMIT`; a `ROLLBACK`
    /// when `body` throws (the error rethrown).
    func transaction<T>(_ body: (PostgresLink.Transaction) throws -> T) throws -> T {
        try lock.withLock { _ in
            let connection = try connected()
            let transaction = Transaction(connection: connection, logger: logger)
            do {
                _ = try connection.query("BEGIN", logger: logger).wait()
                let value = try body(transaction)
                _ = try connection.query("COMMIT", logger: logger).wait()
                return value
            } catch {
                if connection.isClosed {
                    self.connection = nil
                } else {
                    _ = try? connection.query("ROLLBACK", logger: logger).wait()
                }
                if let error = error as? ClusterError { throw error }
                if error is PSQLError { throw Self.clusterError(error) }
                throw error
            }
        }
    }

    /// The queries of one transaction, on its connection.
    struct Transaction {
        fileprivate let connection: PostgresConnection
        fileprivate let logger: Logger

        /// Runs `queries`, pipelined, and returns their results.
        @discardableResult
        func run(_ queries: [PostgresQuery]) throws(ClusterError) -> [PostgresQueryResult] {
            let futures = queries.map { connection.query($0, logger: logger) }
            var results: [PostgresQueryResult] = []
            var failure: (any Error)?
            for future in futures {
                do {
                    results.append(try future.wait())
                } catch {
                    if failure == nil { failure = error }
                }
            }
            if let failure { throw PostgresLink.clusterError(failure) }
            return results
        }

        /// Runs one query.
        @discardableResult
        func run(_ query: PostgresQuery) throws(ClusterError) -> PostgresQueryResult {
            try run([query])[0]
        }
    }

    /// Closes the connection; later calls fail.
    func close() {
        lock.withLock { _ in
            closed = true
            if let connection { _ = try? connection.close().wait() }
            connection = nil
        }
    }

    /// The open connection, made when there is none (`lock` held).
    private func connected() throws(ClusterError) -> PostgresConnection {
        guard !closed else { throw .unreachable("the connection was closed") }
        if let connection, !connection.isClosed { return connection }
        var configuration = PostgresConnection.Configuration(
            host: address.host, port: address.port, username: address.user, password: address.password,
            database: address.database, tls: .disable)
        configuration.options.connectTimeout = Self.connectTimeout
        configuration.options.additionalStartupParameters = [("application_name", "actomaton-host \(name)")]
        let eventLoop = PostgresConnection.defaultEventLoopGroup.any()
        do {
            let connection = try PostgresConnection.connect(on: eventLoop, configuration: configuration, id: 1, logger: logger).wait()
            self.connection = connection
            return connection
        } catch {
            throw .unreachable("\(address): \(Self.message(of: error))")
        }
    }

    /// A query's failure as a cluster error: the server's message, or what broke.
    static func clusterError(_ error: any Error) -> ClusterError {
        if let error = error as? ClusterError { return error }
        if let error = error as? PSQLError, error.code != .server {
            return .unreachable(message(of: error))
        }
        return .queryFailed(message(of: error))
    }

    /// The server's message (and its SQLSTATE), or the connection's failure, in one line.
    static func message(of error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let info = error.serverInfo, let message = info[.message] {
            return info[.sqlState].map { "\(message) (SQLSTATE \($0))" } ?? message
        }
        if let underlying = error.underlying { return "\(error.code): \(underlying)" }
        return "\(error.code)"
    }

    /// Whether `error` is the server's refusal with SQLSTATE `state`.
    static func isServerError(_ error: any Error, state: String) -> Bool {
        (error as? PSQLError)?.serverInfo?[.sqlState] == state
    }
}
