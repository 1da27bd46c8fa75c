import ActomatonHost
@testable import ActomatonService
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOSSL
import Testing

/// `--tls-certificate` and `--tls-key`: the API over HTTPS, and every bad file refused with one
/// line naming it.
@Suite struct TLSTests {
    /// A self-signed certificate and its key (openssl), in a fresh directory; the key mode 0600.
    func makeCertificate(in directory: String, name: String = "server", days: Int = 1) throws -> (certificate: String, key: String) {
        let certificate = "\(directory)/\(name).pem"
        let key = "\(directory)/\(name).key"
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
                             "-out", certificate, "-days", "\(days)", "-subj", "/CN=localhost"]
        openssl.standardError = FileHandle.nullDevice
        openssl.standardOutput = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        #expect(openssl.terminationStatus == 0)
        chmod(key, 0o600)
        chmod(certificate, 0o644)
        return (certificate, key)
    }

    @Test func theAPIIsServedOverHTTPS() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = try makeCertificate(in: directory)
        let tls = try ServiceTLS.load(certificate: files.certificate, key: files.key)
        let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"), tls: tls)
        // curl, not the test client: its 15-s deadline ran out once in a full run on a loaded
        // machine, the handler waiting for the concurrency pool.
        try await server.makeApplication().test(.ahc(.https)) { client in
            let port = try #require(client.port)
            let (status, body) = try await offThePool { () throws -> (String, String) in
                let curl = Process()
                curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
                curl.arguments = ["-sk", "--max-time", "300", "-w", "\n%{http_code}", "-X", "POST", "-H", "Content-Type: application/json",
                                  "-d", #"{"action": "add", "args": [3]}"#, "https://localhost:\(port)/v1/machines/counter/secure"]
                let output = Pipe()
                curl.standardOutput = output
                try curl.run()
                let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                curl.waitUntilExit()
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
                return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n"))
            }
            #expect(status == "200", "\(body)")
            #expect(body.contains(#""state":{"count":3}"#))
        }
    }

    @Test func badCertificatesAndKeysAreRefusedWithOneLine() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = try makeCertificate(in: directory)
        let other = try makeCertificate(in: directory, name: "other")

        chmod(files.key, 0o640)
        #expect(throws: ServiceTLSError(files.key, "group or other users can read or write the private key (mode 640); run `chmod 600` on it")) {
            try ServiceTLS.load(certificate: files.certificate, key: files.key)
        }
        chmod(files.key, 0o600)
        #expect(throws: ServiceTLSError(other.key, "it is not the private key of the certificate in \(files.certificate)")) {
            try ServiceTLS.load(certificate: files.certificate, key: other.key)
        }
        let garbage = "\(directory)/garbage.pem"
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: garbage))
        chmod(garbage, 0o600)
        #expect(throws: ServiceTLSError.self) { try ServiceTLS.load(certificate: garbage, key: files.key) }
        #expect(throws: ServiceTLSError.self) { try ServiceTLS.load(certificate: files.certificate, key: garbage) }
        #expect(throws: ServiceTLSError.self) { try ServiceTLS.load(certificate: "\(directory)/none.pem", key: files.key) }
        // At the size limit and one past it.
        let big = "\(directory)/big.pem"
        try Data(repeating: UInt8(ascii: "a"), count: Int(ServiceTLS.maxFileSize) + 1).write(to: URL(fileURLWithPath: big))
        chmod(big, 0o600)
        let error = #expect(throws: ServiceTLSError.self) { try ServiceTLS.load(certificate: big, key: files.key) }
        #expect(error?.message == "the certificate file is \(ServiceTLS.maxFileSize + 1) bytes, more than the limit of \(ServiceTLS.maxFileSize) bytes",
                "\(String(describing: error))")
        // Regression (audit): a key owned by another user was "refusing to load a plugin file"
        // and an over-long file's line named --max-plugin-size, which does not raise it; an
        // encrypted key was only "not a PEM private key".
        chown(files.key, 65534, 65534)
        let owned = #expect(throws: ServiceTLSError.self) { try ServiceTLS.load(certificate: files.certificate, key: files.key) }
        #expect(owned?.message == "the private key belongs to another user (uid 65534); it must belong to root or to the user running the host",
                "\(String(describing: owned))")
        chown(files.key, getuid(), getgid())
        let encrypted = "\(directory)/encrypted.pem"
        try Data("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI\n-----END ENCRYPTED PRIVATE KEY-----\n".utf8)
            .write(to: URL(fileURLWithPath: encrypted))
        chmod(encrypted, 0o600)
        let locked = #expect(throws: ServiceTLSError.self) { try ServiceTLS.load(certificate: files.certificate, key: encrypted) }
        #expect(locked?.message.hasPrefix("it is an encrypted private key, and the host asks for no passphrase") == true, "\(String(describing: locked))")
    }

    /// Regression: an expired certificate was taken without a word, and every client then
    /// failed its handshake. It is one line at start-up; one not valid yet, or about to expire,
    /// is taken with a warning.
    @Test func anExpiredCertificateIsRefusedAndOneNotYetValidOrExpiringWarned() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = try makeCertificate(in: directory, days: 30)
        let certificate = try #require(try NIOSSLCertificate.fromPEMFile(files.certificate).first)
        let (notBefore, notAfter) = (Int(certificate.notValidBefore), Int(certificate.notValidAfter))
        let expiry = ServiceTLS.utcText(notAfter)
        // At its last valid second: taken (it expires within the warning's days).
        let last = try ServiceTLS.load(certificate: files.certificate, key: files.key, now: notAfter)
        #expect(last.warnings == ["\(files.certificate): the certificate expires on \(expiry)"])
        // One second past it: refused.
        #expect(throws: ServiceTLSError(files.certificate, "the certificate expired on \(expiry); clients would refuse it")) {
            try ServiceTLS.load(certificate: files.certificate, key: files.key, now: notAfter + 1)
        }
        // Before it is valid: taken, with a warning about the clock.
        let early = try ServiceTLS.load(certificate: files.certificate, key: files.key, now: notBefore - 1)
        #expect(early.warnings == ["\(files.certificate): the certificate is not valid until \(ServiceTLS.utcText(notBefore)) "
                                   + "(is this machine's clock right?); clients will refuse it until then"])
        #expect(try ServiceTLS.load(certificate: files.certificate, key: files.key, now: notBefore).warnings.isEmpty)
        // Far from expiring: no warning.
        #expect(try ServiceTLS.load(certificate: files.certificate, key: files.key,
                                    now: notAfter - ServiceTLS.expiryWarningDays * 86_400).warnings.isEmpty)
        #expect(ServiceTLS.utcText(0) == "1970-01-01 00:00:00 UTC" && ServiceTLS.utcText(1_795_000_000) == "2026-11-18 11:06:40 UTC")
    }
}
