import ActomatonHost
import HummingbirdTLS
import NIOSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The service's TLS: a certificate chain and its private key, read from PEM files
/// (`serve --listen … --tls-certificate FILE --tls-key FILE`).
///
/// Both files get the checks a plugin file does (owner root or the host's user, not writable by
/// others, nor any directory above them), at most ``maxFileSize`` bytes each; the key must not
/// be readable by group or others. The pair is tried at load, so a key that does not match
/// the certificate is one line at start-up, not a failed handshake later; so is a certificate
/// of the chain that has expired, which every client would refuse. One not valid yet (this
/// machine's clock may be wrong) or expiring within ``expiryWarningDays`` days is taken, with
/// a line in ``warnings``.
public struct ServiceTLS: Sendable {
    /// The largest certificate or key file read, in bytes.
    public static let maxFileSize: Int64 = 1 << 20
    /// How many days before a certificate expires ``warnings`` says so: 7.
    public static let expiryWarningDays = 7
    /// What an operator should know about the certificates, one line each, `PATH: …`: one not
    /// valid yet, or expiring soon.
    public let warnings: [String]

    /// The server's TLS configuration.
    let configuration: TLSConfiguration

    /// Reads and checks the certificate chain at `certificate` and the private key at `key`.
    ///
    /// - Parameters:
    ///   - certificate: A PEM file holding the certificate chain, the server's first.
    ///   - key: A PEM file holding the private key.
    ///   - now: The time the certificates' validity is checked at, in seconds since 1970: now.
    public static func load(certificate: String, key: String, now: Int = time(nil)) throws(ServiceTLSError) -> ServiceTLS {
        let chain: [NIOSSLCertificate]
        do {
            let (bytes, _) = try TrustedFile.read(certificate, maxSize: maxFileSize)
            chain = try NIOSSLCertificate.fromPEMBytes(bytes)
        } catch let error as PluginLoadError {
            throw ServiceTLSError(certificate, ServiceFileProblem.describe(error.reason, of: "the certificate file"))
        } catch {
            throw ServiceTLSError(certificate, "it is not a PEM certificate chain")
        }
        guard !chain.isEmpty else { throw ServiceTLSError(certificate, "it holds no PEM certificate") }
        var warnings: [String] = []
        for (index, member) in chain.enumerated() {
            let which = index == 0 ? "the certificate" : "certificate \(index + 1) of the chain"
            let (notBefore, notAfter) = (Int(member.notValidBefore), Int(member.notValidAfter))
            if notAfter < now {
                throw ServiceTLSError(certificate, "\(which) expired on \(utcText(notAfter)); clients would refuse it")
            }
            if notBefore > now {
                warnings.append("\(certificate): \(which) is not valid until \(utcText(notBefore)) (is this machine's clock right?); "
                                + "clients will refuse it until then")
            } else if notAfter - now < expiryWarningDays * 86_400 {
                warnings.append("\(certificate): \(which) expires on \(utcText(notAfter))")
            }
        }
        let privateKey: NIOSSLPrivateKey
        do {
            let (bytes, permissions) = try TrustedFile.read(key, maxSize: maxFileSize)
            guard permissions & 0o077 == 0 else {
                throw ServiceTLSError(key, "group or other users can read or write the private key (mode \(String(permissions, radix: 8))); "
                                      + "run `chmod 600` on it")
            }
            if bytes.count < 1 << 20, String(decoding: bytes, as: UTF8.self).contains("ENCRYPTED") {
                throw ServiceTLSError(key, "it is an encrypted private key, and the host asks for no passphrase: decrypt it "
                                      + "(`openssl pkey -in KEY -out PLAIN`) into a file only you can read")
            }
            privateKey = try NIOSSLPrivateKey(bytes: bytes, format: .pem)
        } catch let error as ServiceTLSError {
            throw error
        } catch let error as PluginLoadError {
            throw ServiceTLSError(key, ServiceFileProblem.describe(error.reason, of: "the private key"))
        } catch {
            throw ServiceTLSError(key, "it is not a PEM private key")
        }
        let configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) },
                                                                     privateKey: .privateKey(privateKey))
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw ServiceTLSError(key, "it is not the private key of the certificate in \(certificate)")
        }
        return ServiceTLS(warnings: warnings, configuration: configuration)
    }

    /// `2026-11-26 12:00:00 UTC`.
    static func utcText(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "\(seconds) s after 1970" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) UTC"
    }
}

/// Why a certificate or key file was refused: one line naming the file.
public struct ServiceTLSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file.
    public let path: String
    /// What is wrong with it.
    public let message: String

    init(_ path: String, _ message: String) {
        self.path = path
        self.message = message
    }

    /// `PATH: message`.
    public var description: String { "\(path): \(message)" }
}
