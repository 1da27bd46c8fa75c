import ActomatonHost
import HummingbirdTLS
import NIOSSL

/// The service's TLS: a certificate chain and its private key, read from PEM files
/// (`serve --listen … --tls-certificate FILE --tls-key FILE`).
///
/// Both files get the checks a plugin file does (owner root or the host's user, not writable by
/// others, nor any directory above them), at most ``maxFileSize`` bytes each; the key must not
/// be readable by group or others. The pair is tried at load, so a key that does not match
/// the certificate is one line at start-up, not a failed handshake later.
public struct ServiceTLS: Sendable {
    /// The largest certificate or key file read, in bytes.
    public static let maxFileSize: Int64 = 1 << 20

    /// The server's TLS configuration.
    let configuration: TLSConfiguration

    /// Reads and checks the certificate chain at `certificate` and the private key at `key`.
    ///
    /// - Parameters:
    ///   - certificate: A PEM file holding the certificate chain, the server's first.
    ///   - key: A PEM file holding the private key.
    public static func load(certificate: String, key: String) throws(ServiceTLSError) -> ServiceTLS {
        let chain: [NIOSSLCertificate]
        do {
            let (bytes, _) = try TrustedFile.read(certificate, maxSize: maxFileSize)
            chain = try NIOSSLCertificate.fromPEMBytes(bytes)
        } catch let error as PluginLoadError {
            throw ServiceTLSError(certificate, error.reason.description)
        } catch {
            throw ServiceTLSError(certificate, "it is not a PEM certificate chain")
        }
        guard !chain.isEmpty else { throw ServiceTLSError(certificate, "it holds no PEM certificate") }
        let privateKey: NIOSSLPrivateKey
        do {
            let (bytes, permissions) = try TrustedFile.read(key, maxSize: maxFileSize)
            guard permissions & 0o077 == 0 else {
                throw ServiceTLSError(key, "group or other users can read or write the private key (mode \(String(permissions, radix: 8))); "
                                      + "run `chmod 600` on it")
            }
            privateKey = try NIOSSLPrivateKey(bytes: bytes, format: .pem)
        } catch let error as ServiceTLSError {
            throw error
        } catch let error as PluginLoadError {
            throw ServiceTLSError(key, error.reason.description)
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
        return ServiceTLS(configuration: configuration)
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
