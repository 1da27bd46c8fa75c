import ActomatonHost
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where a cluster's shared database is: `postgres://USER@HOST:PORT/DATABASE` (`postgresql://`
/// too), as `--state` takes it.
///
/// The password never comes from the command line, where every user of the machine can read
/// it: an address that holds one is refused. It comes from the environment's `PGPASSWORD`, or
/// from a password file in PostgreSQL's own format (`host:port:database:user:password`, `*`
/// matching anything) named by `PGPASSFILE` or at `~/.pgpass`, which must be readable by its
/// owner only — as `psql` reads them. No password at all is fine for a server that trusts
/// loopback connections.
public struct PostgresAddress: Sendable, Hashable, CustomStringConvertible {
    /// The most bytes an address may have.
    public static let maxLength = 1024
    /// The most bytes a password file may have.
    public static let maxPasswordFileSize = 64 * 1024

    /// The user the host connects as.
    public var user: String
    /// The server's host name or address.
    public var host: String
    /// The server's port.
    public var port: Int
    /// The database.
    public var database: String
    /// The password, from the environment or a password file; never printed.
    public var password: String?

    /// Whether `text` is meant as a PostgreSQL address (it starts with `postgres://` or
    /// `postgresql://`), rather than a file's path.
    public static func isAddress(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// Reads `text`; the password from `environment` or its password file.
    ///
    /// - Parameters:
    ///   - text: `postgres://USER@HOST:PORT/DATABASE`; the port defaults to 5432, the user to
    ///     `postgres`, the database to the user's name.
    ///   - environment: Where `PGPASSWORD`, `PGPASSFILE` and `HOME` are read (the process's by default).
    /// - Throws: ``ClusterError`` with one line saying what is wrong.
    public init(_ text: String, environment: [String: String]? = nil) throws(ClusterError) {
        guard text.utf8.count <= Self.maxLength else {
            throw .badAddress("the PostgreSQL address is \(text.utf8.count) bytes long; the limit is \(Self.maxLength)")
        }
        let scheme = text.hasPrefix("postgresql://") ? "postgresql://" : "postgres://"
        guard text.hasPrefix(scheme) else { throw .badAddress("'\(text)' is not a postgres://USER@HOST:PORT/DATABASE address") }
        var rest = Substring(text.dropFirst(scheme.count))
        guard !rest.contains("?"), !rest.contains("#") else {
            throw .badAddress("a PostgreSQL address takes no parameters here (postgres://USER@HOST:PORT/DATABASE)")
        }
        var user = "postgres"
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            guard !credentials.contains(":") else {
                throw .badAddress("a password does not belong in the address, where every user of the machine can read it: "
                    + "set PGPASSWORD, or put it in a password file (PGPASSFILE or ~/.pgpass)")
            }
            guard !credentials.isEmpty else { throw .badAddress("the address names an empty user before '@'") }
            user = String(credentials)
            rest = rest[rest.index(after: at)...]
        }
        var database = user
        if let slash = rest.firstIndex(of: "/") {
            let name = rest[rest.index(after: slash)...]
            if !name.isEmpty { database = String(name) }
            rest = rest[..<slash]
        }
        guard !database.contains("/") else { throw .badAddress("'\(database)' is not a database name") }
        var port = 5432
        var host = rest
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw .badAddress("an IPv6 host must be closed with ']'") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            rest = rest[rest.index(after: close)...]
            if let colon = rest.first, colon == ":" { port = try Self.port(rest.dropFirst()) } else if !rest.isEmpty {
                throw .badAddress("unexpected '\(rest)' after the host")
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            port = try Self.port(rest[rest.index(after: colon)...])
        }
        guard !host.isEmpty else { throw .badAddress("the PostgreSQL address names no host") }
        self.user = user
        self.host = String(host)
        self.port = port
        self.database = database
        let environment = environment ?? Self.processEnvironment()
        password = try Self.password(user: user, host: String(host), port: port, database: database, environment: environment)
    }

    private static func port(_ text: Substring) throws(ClusterError) -> Int {
        guard let port = Int(text), (1...65535).contains(port) else { throw .badAddress("'\(text)' is not a port (1 to 65535)") }
        return port
    }

    /// `postgres://USER@HOST:PORT/DATABASE`, without the password.
    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(user)@\(shownHost):\(port)/\(database)"
    }

    // MARK: The password

    private static func password(user: String, host: String, port: Int, database: String,
                                 environment: [String: String]) throws(ClusterError) -> String? {
        if let password = environment["PGPASSWORD"] { return password }
        let explicit = environment["PGPASSFILE"]
        guard let path = explicit ?? environment["HOME"].map({ "\($0)/.pgpass" }) else { return nil }
        guard let text = try readPasswordFile(path, required: explicit != nil) else { return nil }
        // A line's `\r` end dropped, as libpq does.
        for bytes in text.lineBytes(omittingEmpty: true) {
            let line = Substring(String(decoding: bytes, as: UTF8.self))
            guard !line.hasPrefix("#") else { continue }
            let fields = passwordFileFields(line)
            guard fields.count == 5 else { continue }
            let wanted = [host, String(port), database, user]
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    /// A line's fields, split at `:` with `\:` and `\\` escaped, as libpq reads them.
    private static func passwordFileFields(_ line: Substring) -> [String] {
        var fields: [String] = []
        var field = ""
        var escaped = false
        for character in line {
            if escaped {
                field.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" {
                fields.append(field)
                field = ""
            } else {
                field.append(character)
            }
        }
        fields.append(field)
        return fields
    }

    /// The password file's text; `nil` when there is none and none was asked for. Refused when
    /// others may read it, as libpq refuses it.
    private static func readPasswordFile(_ path: String, required: Bool) throws(ClusterError) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            if !required && errno == ENOENT { return nil }
            throw .badAddress("cannot read the password file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw .badAddress("the password file \(path) is not a regular file")
        }
        guard status.st_mode & 0o077 == 0 else {
            throw .badAddress("the password file \(path) may be read by others (chmod 600 \(path))")
        }
        guard status.st_size <= maxPasswordFileSize else {
            throw .badAddress("the password file \(path) is \(status.st_size) bytes; the limit is \(maxPasswordFileSize)")
        }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            filled += count
        }
        return String(decoding: bytes[..<filled], as: UTF8.self)
    }

    private static func processEnvironment() -> [String: String] {
        var values: [String: String] = [:]
        for name in ["PGPASSWORD", "PGPASSFILE", "HOME"] {
            if let value = getenv(name) { values[name] = String(cString: value) }
        }
        return values
    }
}
