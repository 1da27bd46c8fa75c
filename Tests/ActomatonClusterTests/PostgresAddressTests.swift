import Foundation
import Testing
@testable import ActomatonCluster

/// `--state postgres://…`: the address, and where its password comes from.
@Suite("Cluster: the PostgreSQL address and its password")
struct PostgresAddressTests {
    @Test func anAddressIsReadWithItsDefaults() async throws {
        let full = try PostgresAddress("postgres://app@db.example:6543/actomaton", environment: [:])
        #expect(full.user == "app" && full.host == "db.example" && full.port == 6543 && full.database == "actomaton")
        #expect(full.password == nil)
        let bare = try PostgresAddress("postgresql://localhost", environment: [:])
        #expect(bare.user == "postgres" && bare.port == 5432 && bare.database == "postgres")
        let ipv6 = try PostgresAddress("postgres://u@[::1]:5433/d", environment: [:])
        #expect(ipv6.host == "::1" && ipv6.port == 5433)
        #expect(ipv6.description == "postgres://u@[::1]:5433/d")
        #expect(PostgresAddress.isAddress("postgres://x") && !PostgresAddress.isAddress("state.db"))
    }

    @Test func aPasswordOnTheCommandLineIsRefused() {
        #expect(throws: ClusterError.self) { try PostgresAddress("postgres://app:secret@db/actomaton", environment: [:]) }
        do {
            _ = try PostgresAddress("postgres://app:secret@db/actomaton", environment: [:])
        } catch {
            #expect("\(error)".contains("PGPASSWORD"))
            #expect(!"\(error)".contains("secret"))
        }
    }

    @Test func badAddressesAreRefusedWithOneLine() {
        for text in ["postgres://", "postgres://@h/d", "postgres://h:0/d", "postgres://h:65536/d", "postgres://h:x/d",
                     "postgres://h/d?sslmode=disable", "postgres://h/a/b", "postgres://[::1/d", "mysql://h/d"] {
            #expect(throws: ClusterError.self, "\(text)") { try PostgresAddress(text, environment: [:]) }
        }
        let limit = "postgres://h/" + String(repeating: "d", count: PostgresAddress.maxLength - 13)
        #expect(limit.utf8.count == PostgresAddress.maxLength)
        #expect(throws: Never.self) { try PostgresAddress(limit, environment: [:]) }
        #expect(throws: ClusterError.self) { try PostgresAddress(limit + "d", environment: [:]) }
    }

    @Test func thePasswordComesFromTheEnvironmentOrAPasswordFile() async throws {
        let direct = try PostgresAddress("postgres://app@db:5432/main", environment: ["PGPASSWORD": "from-env", "HOME": "/nonexistent"])
        #expect(direct.password == "from-env")
        #expect(!direct.description.contains("from-env"))
        let directory = NSTemporaryDirectory() + "actomaton-pgpass-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/pgpass"
        try """
            # comment
            other:5432:main:app:wrong
            db:5432:main:app:pass\\:with\\\\colon
            *:*:*:app:fallback
            """.write(toFile: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        #expect(try PostgresAddress("postgres://app@db:5432/main", environment: ["PGPASSFILE": file]).password == "pass:with\\colon")
        #expect(try PostgresAddress("postgres://app@elsewhere:1/x", environment: ["PGPASSFILE": file]).password == "fallback")
        #expect(try PostgresAddress("postgres://nobody@db/main", environment: ["PGPASSFILE": file]).password == nil)
        // ~/.pgpass, when PGPASSFILE is not set.
        try FileManager.default.copyItem(atPath: file, toPath: directory + "/.pgpass")
        #expect(try PostgresAddress("postgres://app@db:5432/main", environment: ["HOME": directory]).password == "pass:with\\colon")
        // Lines ending in \r\n are lines (a `Character` holds "\r\n" whole: the file was one line, and no password was found).
        let crlf = directory + "/pgpass-crlf"
        try "other:5432:main:app:wrong\r\ndb:5432:main:app:right\r\n".write(toFile: crlf, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: crlf)
        #expect(try PostgresAddress("postgres://app@db:5432/main", environment: ["PGPASSFILE": crlf]).password == "right")
        #expect(try PostgresAddress("postgres://app@other:5432/main", environment: ["PGPASSFILE": crlf]).password == "wrong")
        // A file others may read is refused, as libpq refuses it; a named file that is missing too.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        #expect(throws: ClusterError.self) { try PostgresAddress("postgres://app@db/main", environment: ["PGPASSFILE": file]) }
        #expect(throws: ClusterError.self) { try PostgresAddress("postgres://app@db/main", environment: ["PGPASSFILE": file + ".missing"]) }
        #expect(try PostgresAddress("postgres://app@db/main", environment: ["HOME": directory + "/none"]).password == nil)
    }
}
