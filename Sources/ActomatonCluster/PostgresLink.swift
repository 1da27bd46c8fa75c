import Dispatch
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// One connection to the cluster's database, used by blocking calls from threads of the
/// host's own (the journal's writer, the lease keeper, a reader's thread), never from the
/// concurrency pool: each call waits for the server's answer, at most ``answerTimeout``. A
/// broken connection, or one that did not answer in time, is made again on the next call.
/// Calls are serialized.
final class PostgresLink: @unchecked Sendable {
    /// How long connecting may take.
    static let connectTimeout = TimeAmount.seconds(5)
    /// How long a call waits for the server's answer before it drops the connection and fails,
    /// by default: 15 s, three times the longest lock wait a host asks for. Without it, a query
    /// sent on a connection the server had just closed (a restart) was never answered, and the
    /// host hung for good with its lease renewed: its instances unavailable, SIGTERM ignored.
    static let defaultAnswerTimeout = TimeAmount.seconds(15)

    let address: PostgresAddress
    private let name: String
    private let lock = Mutex(())
    /// Guarded by `lock`.
    private var connection: PostgresConnection?
    private var closed = false
    private let logger: Logger
    private let idleInTransactionTimeout: Duration?
    private let lockTimeout: Duration?
    /// How long a call waits for the server's answer (``defaultAnswerTimeout``).
    let answerTimeout: TimeAmount
    /// When the last answer came (`lock` held).
    private var lastAnswer = NIODeadline.now()

    /// A link to `address`; connects on its first call. `name` says which of the host's
    /// links it is, in the server's `application_name`. With `idleInTransactionTimeout`, the
    /// server ends the session of a transaction left idle that long (a host paused in the
    /// middle of a commit), which frees the rows it locked for the host that takes over.
    /// With `lockTimeout`, a statement that waits longer than that for a row's lock fails
    /// (SQLSTATE 55P03) instead of waiting out the answer timeout.
    init(_ address: PostgresAddress, name: String, idleInTransactionTimeout: Duration? = nil, lockTimeout: Duration? = nil,
         answerTimeout: TimeAmount = PostgresLink.defaultAnswerTimeout) {
        self.address = address
        self.name = name
        self.idleInTransactionTimeout = idleInTransactionTimeout
        self.lockTimeout = lockTimeout
        self.answerTimeout = answerTimeout
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
            do throws(ClusterError) {
                return try Transaction(link: self, connection: connection).run(queries)
            } catch {
                if Self.connectionIsLost(connection, by: error) { dropConnection(connection) }
                throw error
            }
        }
    }

    /// Whether `error` (from a call on `connection`) left the connection unusable: closed, or
    /// failed below SQL (PostgresNIO may say the client closed it before `isClosed` says so; the
    /// connection was kept, and the next call, a commit's one retry among them, failed the same
    /// way: a flaky test under load).
    private static func connectionIsLost(_ connection: PostgresConnection, by error: any Error) -> Bool {
        if connection.isClosed { return true }
        if case .unreachable? = error as? ClusterError { return true }
        return false
    }

    /// Runs one query and returns its result.
    @discardableResult
    func run(_ query: PostgresQuery) throws(ClusterError) -> PostgresQueryResult {
        try run([query])[0]
    }

    /// A transaction that failed before its `COMMIT` was sent: nothing of it was written, and it
    /// may be run again (on a new connection when the connection was lost).
    struct NotCommitted: Error {
        /// Why it failed.
        let cause: ClusterError
    }

    /// A transaction whose `COMMIT` was sent and whose answer was lost with the connection (the
    /// server ended the session, restarted, or did not answer in time): it may have been
    /// written, or may still be (a slow commit's session lives on). Only the server can say
    /// which: `txid_status` of the transaction's ID.
    struct CommitOutcomeUnknown: Error {
        /// Why the answer was lost.
        let cause: ClusterError
    }

    /// Runs `body` inside one transaction: `BEGIN`, what `body` runs, `COMMIT`; a `ROLLBACK`
    /// when `body` throws (the error rethrown). A query that fails before the `COMMIT` is sent
    /// throws ``NotCommitted`` (the server ended an idle transaction, or restarted, or refused a
    /// statement); a `COMMIT` whose answer was lost with its connection throws
    /// ``CommitOutcomeUnknown``; another failed `COMMIT` throws its error.
    func transaction<T>(_ body: (PostgresLink.Transaction) throws -> T) throws -> T {
        try lock.withLock { _ in
            let connection: PostgresConnection
            do throws(ClusterError) {
                connection = try connected()
            } catch {
                // Nothing was sent: a server restarting, or out of connection slots.
                throw NotCommitted(cause: error)
            }
            let transaction = Transaction(link: self, connection: connection, checksIdleTime: true)
            var committing = false
            do {
                try Transaction(link: self, connection: connection).run("BEGIN")
                let value = try body(transaction)
                try transaction.checkIdleTime()
                committing = true
                try Transaction(link: self, connection: connection).run("COMMIT")
                return value
            } catch {
                if self.connection !== connection || Self.connectionIsLost(connection, by: error) {
                    dropConnection(connection)
                } else {
                    _ = try? transaction.run("ROLLBACK")
                }
                if let error = error as? ClusterError {
                    if !committing { throw NotCommitted(cause: error) }
                    if case .unreachable = error { throw CommitOutcomeUnknown(cause: error) }
                    throw error
                }
                if error is PSQLError { throw Self.clusterError(error) }
                throw error
            }
        }
    }

    /// The queries of one transaction, on its connection.
    struct Transaction {
        fileprivate let link: PostgresLink
        fileprivate let connection: PostgresConnection
        /// Whether a statement is first checked against the server's idle-in-transaction
        /// timeout: inside a transaction, once `BEGIN` was answered.
        fileprivate var checksIdleTime = false

        /// Throws, without sending anything, when the transaction was left idle (this process
        /// paused, or stalled) long enough for the server to have ended its session: a statement
        /// sent then on the closing connection was never answered (PostgresNIO), and the host
        /// waited out the whole answer timeout, 15 s, with every commit behind it (`make
        /// test-cluster`: failovers of 17-19 s after SIGSTOP). The connection is dropped.
        func checkIdleTime() throws(ClusterError) {
            guard checksIdleTime, let timeout = link.idleInTransactionTimeout else { return }
            // Measured here, the idle time is at most what the server measured: past most of
            // its timeout, the session may be gone already.
            let idle = NIODeadline.now() - link.lastAnswer
            let limit = TimeAmount.nanoseconds(Int64(timeout / .nanoseconds(1)))
            guard idle.nanoseconds >= limit.nanoseconds / 10 * 8 else { return }
            link.dropConnection(connection)
            throw .unreachable("\(link.address): the transaction was left idle \(PostgresLink.seconds(idle)) s, about as long as the "
                               + "server keeps one (\(PostgresLink.seconds(limit)) s); the connection was dropped")
        }

        /// Runs `queries`, pipelined, and returns their results; the first failure is thrown
        /// once all have answered, or when the server did not answer within
        /// ``PostgresLink/answerTimeout`` (the connection is dropped).
        @discardableResult
        func run(_ queries: [PostgresQuery]) throws(ClusterError) -> [PostgresQueryResult] {
            try checkIdleTime()
            // Closed by the server (its session ended) and seen here: a query sent on it would
            // never be answered.
            if connection.isClosed {
                link.dropConnection(connection)
                throw .unreachable("\(link.address): the server closed the connection")
            }
            let deadline = NIODeadline.now() + link.answerTimeout
            let futures = queries.map { connection.query($0, logger: link.logger) }
            var results: [PostgresQueryResult] = []
            var failure: (any Error)?
            for future in futures {
                do {
                    results.append(try link.answer(future, by: deadline, on: connection))
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
            if let connection {
                let closing: EventLoopFuture<Void> = connection.close()
                _ = try? answer(closing, by: .now() + Self.connectTimeout, on: connection)
            }
            connection = nil
        }
    }

    /// What `future` brings, once it does, before `deadline`; past it, the connection is dropped
    /// (`lock` held: the next call makes a new one) and the wait throws.
    fileprivate func answer<T: Sendable>(_ future: EventLoopFuture<T>, by deadline: NIODeadline, on connection: PostgresConnection) throws -> T {
        guard let outcome = Self.outcome(of: future, within: max(deadline - .now(), .zero)) else {
            dropConnection(connection)
            throw ClusterError.unreachable("\(address): the database did not answer within \(Self.seconds(answerTimeout)) s; "
                                           + "the connection was dropped")
        }
        lastAnswer = .now()
        return try outcome.get()
    }

    /// Drops `connection` (`lock` held): the next call makes a new one.
    fileprivate func dropConnection(_ connection: PostgresConnection) {
        Self.drop(connection)
        if self.connection === connection { self.connection = nil }
    }

    /// Closes `connection` without waiting, and keeps it until it is closed (a connection must
    /// not be released open).
    private static func drop(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// `amount` in seconds, for messages.
    fileprivate static func seconds(_ amount: TimeAmount) -> String {
        amount.nanoseconds % 1_000_000_000 == 0 ? "\(amount.nanoseconds / 1_000_000_000)" : "\(Double(amount.nanoseconds) / 1e9)"
    }

    /// What `future` brings, or `nil` when it brought nothing within `timeout`.
    private static func outcome<T: Sendable>(of future: EventLoopFuture<T>, within timeout: TimeAmount) -> Result<T, any Error>? {
        let settled = DispatchSemaphore(value: 0)
        let result = Mutex<Result<T, any Error>?>(nil)
        future.whenComplete { outcome in
            result.withLock { $0 = outcome }
            settled.signal()
        }
        guard settled.wait(timeout: .now() + .nanoseconds(Int(timeout.nanoseconds))) == .success else { return nil }
        return result.withLock { $0 }
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
        if let idleInTransactionTimeout {
            let milliseconds = max(idleInTransactionTimeout / .milliseconds(1), 1)
            configuration.options.additionalStartupParameters.append(("idle_in_transaction_session_timeout", "\(Int64(milliseconds))"))
        }
        if let lockTimeout {
            configuration.options.additionalStartupParameters.append(("lock_timeout", "\(Int64(max(lockTimeout / .milliseconds(1), 1)))"))
        }
        let eventLoop = PostgresConnection.defaultEventLoopGroup.any()
        let connecting = PostgresConnection.connect(on: eventLoop, configuration: configuration, id: 1, logger: logger)
        // The connect timeout covers the handshake; this, a server that accepts and never
        // answers the startup message.
        let timeout = Self.connectTimeout + answerTimeout
        guard let outcome = Self.outcome(of: connecting, within: timeout) else {
            connecting.whenSuccess { Self.drop($0) }
            throw .unreachable("\(address): the database did not answer within \(Self.seconds(timeout)) s")
        }
        do {
            let connection = try outcome.get()
            self.connection = connection
            return connection
        } catch {
            throw .unreachable("\(address): \(Self.message(of: error))")
        }
    }

    /// A query's failure as a cluster error: the server's message, or what broke.
    static func clusterError(_ error: any Error) -> ClusterError {
        if let error = error as? ClusterError { return error }
        if let error = error as? NotCommitted { return error.cause }
        if let error = error as? PSQLError, error.code != .server || endsTheConnection(error) {
            return .unreachable(message(of: error))
        }
        return .queryFailed(message(of: error))
    }

    /// Whether the server's error ends the session: its classes 08 (connection exception) and
    /// 57 (operator intervention: a restart, a shutdown, `pg_terminate_backend`). Read as a
    /// failed query, the connection was kept, and a commit's retry ran on it and failed again:
    /// 2 of 3 hosts stopped at a 0.2 s restart of the server.
    static func endsTheConnection(_ error: PSQLError) -> Bool {
        guard let state = error.serverInfo?[.sqlState] else { return false }
        // 57014 is a cancelled statement: the session goes on.
        return state.hasPrefix("08") || (state.hasPrefix("57") && state != "57014")
    }

    /// Whether a transaction that failed with `error` before its `COMMIT` may succeed if run
    /// again later: the server out of reach (restarting, out of connection slots), or a row's
    /// lock held by another session past the lock timeout (55P03), a deadlock (40P01) or a
    /// serialization failure (40001).
    static func isTransient(_ error: ClusterError) -> Bool {
        switch error {
        case .unreachable: true
        case let .queryFailed(message): ["55P03", "40P01", "40001"].contains { message.hasSuffix("(SQLSTATE \($0))") }
        default: false
        }
    }

    /// The server's message (and its SQLSTATE), or the connection's failure, in one line.
    static func message(of error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let info = error.serverInfo, let message = info[.message] {
            return info[.sqlState].map { "\(message) (SQLSTATE \($0))" } ?? message
        }
        // A PSQLError's own description is a generic sentence ("to prevent accidental leakage"):
        // its code and cause say what happened.
        if let underlying = error.underlying { return "\(error.code): \(message(of: underlying))" }
        return "\(error.code)"
    }

    /// Whether `error` is the server's refusal with SQLSTATE `state`.
    static func isServerError(_ error: any Error, state: String) -> Bool {
        (error as? PSQLError)?.serverInfo?[.sqlState] == state
    }
}
