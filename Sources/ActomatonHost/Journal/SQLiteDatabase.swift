import CSQLite

/// A SQLite connection, used by one thread at a time: the journal's own thin layer over the C API.
final class SQLiteDatabase: @unchecked Sendable {
    /// A SQLite failure: the result code and SQLite's message.
    struct Failure: Error, CustomStringConvertible {
        let code: Int32
        let message: String
        var description: String { message }
    }

    let handle: OpaquePointer
    /// Whether ``close()`` ran: statements then no longer finalize themselves.
    private(set) var isClosed = false

    /// How a database is opened.
    enum Access {
        /// Reading and writing; the file is created when missing.
        case readWrite(create: Bool)
        /// Reading only: nothing is written, not even a schema.
        case readOnly
    }

    /// Opens the database at `path`; a symbolic link is refused (`SQLITE_OPEN_NOFOLLOW`).
    init(path: String, access: Access) throws(Failure) {
        var handle: OpaquePointer?
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW
        switch access {
        case let .readWrite(create): flags |= SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
            sqlite3_close(handle)
            throw Failure(code: status, message: message)
        }
        self.handle = handle
        sqlite3_busy_timeout(handle, 5000)
    }

    deinit {
        close()
    }

    /// Finalizes every statement still prepared and closes the connection: once this returns,
    /// the file is no longer held (another connection can write it at once). Statements used
    /// afterwards fail with `SQLITE_MISUSE` instead of touching a closed handle.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        while let statement = sqlite3_next_stmt(handle, nil) { sqlite3_finalize(statement) }
        sqlite3_close(handle)
    }

    private func failure(_ status: Int32) -> Failure {
        Failure(code: status, message: String(cString: sqlite3_errmsg(handle)))
    }

    /// Runs SQL that returns no rows.
    func execute(_ sql: String) throws(Failure) {
        guard !isClosed else { throw Failure(code: SQLITE_MISUSE, message: "the database is closed") }
        let status = sqlite3_exec(handle, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw failure(status) }
    }

    /// Prepares one statement.
    func prepare(_ sql: String) throws(Failure) -> Statement {
        guard !isClosed else { throw Failure(code: SQLITE_MISUSE, message: "the database is closed") }
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else { throw failure(status) }
        return Statement(database: self, handle: statement)
    }

    /// The first column of the first row of `sql`, as an integer.
    func integer(_ sql: String) throws(Failure) -> Int64? {
        let statement = try prepare(sql)
        return try statement.step() ? statement.integer(0) : nil
    }

    /// The first column of the first row of `sql`, as text.
    func text(_ sql: String) throws(Failure) -> String? {
        let statement = try prepare(sql)
        return try statement.step() ? statement.text(0) : nil
    }

    /// A prepared statement.
    final class Statement {
        let database: SQLiteDatabase
        let handle: OpaquePointer

        init(database: SQLiteDatabase, handle: OpaquePointer) {
            self.database = database
            self.handle = handle
        }

        deinit {
            if !database.isClosed { sqlite3_finalize(handle) }
        }

        /// Ends the statement's run: a statement left on a row keeps a read transaction open,
        /// and an open read transaction stops every checkpoint (the write-ahead log then grows
        /// without bound).
        func reset() {
            if !database.isClosed { sqlite3_reset(handle) }
        }

        /// Binds `values` to the parameters, in order, after a reset.
        @discardableResult
        func bind(_ values: SQLiteValue...) -> Statement {
            guard !database.isClosed else { return self }
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
            for (index, value) in values.enumerated() {
                let position = Int32(index + 1)
                switch value {
                case .null: sqlite3_bind_null(handle, position)
                case let .integer(number): sqlite3_bind_int64(handle, position, number)
                case let .text(text): sqlite3_bind_text(handle, position, text, -1, csqlite_transient())
                case let .blob(bytes):
                    bytes.withUnsafeBytes { buffer in
                        _ = sqlite3_bind_blob(handle, position, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count), csqlite_transient())
                    }
                }
            }
            return self
        }

        /// Advances to the next row: `true` if there is one.
        func step() throws(Failure) -> Bool {
            guard !database.isClosed else { throw Failure(code: SQLITE_MISUSE, message: "the database is closed") }
            let status = sqlite3_step(handle)
            switch status {
            case SQLITE_ROW: return true
            case SQLITE_DONE: return false
            default: throw database.failure(status)
            }
        }

        /// Runs the statement to its end.
        func run() throws(Failure) {
            defer { reset() }
            while try step() {}
        }

        func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

        func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

        func text(_ column: Int32) -> String {
            guard let pointer = sqlite3_column_text(handle, column) else { return "" }
            let count = Int(sqlite3_column_bytes(handle, column))
            return String(decoding: UnsafeRawBufferPointer(start: pointer, count: count), as: UTF8.self)
        }

        /// The size in bytes of the text or blob in `column`, without copying it.
        func byteCount(_ column: Int32) -> Int { Int(sqlite3_column_bytes(handle, column)) }

        func blob(_ column: Int32) -> [UInt8] {
            let count = Int(sqlite3_column_bytes(handle, column))
            guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return [] }
            return Array(UnsafeRawBufferPointer(start: pointer, count: count))
        }
    }
}

/// A value bound to a statement's parameter.
enum SQLiteValue {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])
}
