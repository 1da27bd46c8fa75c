import Foundation
import PostgresNIO
import Synchronization
@testable import ActomatonCluster

/// A private PostgreSQL server for the tests: made with Debian's `initdb` in a temporary
/// directory, started with `pg_ctl` on a loopback port (as the `postgres` user when the tests
/// run as root, for PostgreSQL refuses to run as root), trusting loopback connections, and
/// stopped when the test process ends. Each test asks for a database of its own.
///
/// When PostgreSQL is not installed, every test that needs it fails with one line saying so
/// (`make deps` installs it); none is skipped.
final class PostgresTestServer: Sendable {
    let port: Int
    let directory: String
    private let binaries: String
    private let runAsPostgres: Bool
    private let databases = Mutex(0)

    /// The one server of this test process, started at its first use on a thread of its own.
    private static let shared = Task { try await onThread { try PostgresTestServer() } }

    /// The shared server, or the reason it could not start.
    static func start() async throws -> PostgresTestServer {
        try await shared.value
    }

    private init() throws(PostgresTestServerError) {
        guard let binaries = Self.findBinaries() else {
            throw PostgresTestServerError("PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin or on PATH): run make deps")
        }
        self.binaries = binaries
        runAsPostgres = getuid() == 0
        directory = NSTemporaryDirectory() + "actomaton-pg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if runAsPostgres {
            try Self.run("/bin/chown", ["postgres:postgres", directory])
        }
        try Self.run(binaries + "/initdb", ["-D", directory + "/data", "-U", "actomaton", "--auth=trust", "--locale=C", "-E", "UTF8",
                                            "--no-sync"], asPostgres: runAsPostgres)
        var lastError = PostgresTestServerError("the server did not start")
        for _ in 0..<5 {
            let port = Self.freePort()
            do {
                try Self.run(binaries + "/pg_ctl", [
                    "-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "60",
                    "-o", "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200",
                    "start",
                ], asPostgres: runAsPostgres)
                self.port = port
                Self.stopAtExit(binaries: binaries, directory: directory, asPostgres: runAsPostgres)
                return
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// A new, empty database on the server, and its address.
    func makeDatabase() throws -> PostgresAddress {
        let number = databases.withLock { count in
            count += 1
            return count
        }
        let name = "test_\(number)"
        let admin = try PostgresAddress("postgres://actomaton@127.0.0.1:\(port)/postgres", environment: [:])
        let link = PostgresLink(admin, name: "test")
        defer { link.close() }
        try link.run(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        return try PostgresAddress("postgres://actomaton@127.0.0.1:\(port)/\(name)", environment: [:])
    }

    // MARK: Processes

    private static func findBinaries() -> String? {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let directory = "/usr/lib/postgresql/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: directory + "/initdb") { return directory }
        }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            if FileManager.default.isExecutableFile(atPath: "\(directory)/initdb") { return String(directory) }
        }
        return nil
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not show.
    private static let closeFrom: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32 = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            fatalError("this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later is needed)")
        }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Runs `executable` (as the `postgres` user when `asPostgres`) and waits for it; throws
    /// with the end of what it printed when it fails. Blocks: called on threads of the tests' own.
    static func run(_ executable: String, _ arguments: [String], asPostgres: Bool = false) throws(PostgresTestServerError) {
        let argv = asPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        // A file, not a pipe: the server pg_ctl starts may hold a pipe open for its life.
        let outputPath = NSTemporaryDirectory() + "actomaton-pg-output-\(UUID().uuidString)"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of the tests' process: a server holding the write end of another test's
        // pipe kept that test's reader from ever seeing its end (a hung make test).
        _ = closeFrom(&actions, 3)
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, &cArguments, environ)
        guard spawned == 0 else { throw PostgresTestServerError("cannot run \(argv[0]): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw PostgresTestServerError("\(executable) \(arguments.joined(separator: " ")) failed (status \(status)): \(text.suffix(600))")
        }
    }

    /// A loopback port nothing listens on now.
    private static func freePort() -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func stopAtExit(binaries: String, directory: String, asPostgres: Bool) {
        serverToStop.withLock { $0 = (binaries, directory, asPostgres) }
        atexit {
            guard let (binaries, directory, asPostgres) = serverToStop.withLock({ $0 }) else { return }
            try? PostgresTestServer.run(binaries + "/pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"], asPostgres: asPostgres)
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
}

private let serverToStop = Mutex<(String, String, Bool)?>(nil)

/// Why the test server could not be had, in one line.
struct PostgresTestServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
