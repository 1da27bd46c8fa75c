#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where the service listens: `HOST:PORT`, `[IPV6]:PORT`, from `--listen`.
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host: an IPv4 or IPv6 address, or `localhost`.
    public var host: String
    /// The port, 0 to 65535 (0 picks a free one).
    public var port: Int

    /// Reads `HOST:PORT`; throws one line saying what is wrong.
    public init(_ text: String) throws(ListenAddressError) {
        guard let colon = text.lastIndex(of: ":") else { throw .init("--listen takes HOST:PORT, as in 127.0.0.1:8080; got '\(text)'") }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw .init("--listen takes a port from 0 to 65535 after the colon; got '\(text)'")
        }
        guard host == "localhost" || Self.isIPv4(host) || Self.isIPv6(host) else {
            throw .init("--listen takes an IP address or localhost before the port; got '\(host)'")
        }
        self.host = host
        self.port = port
    }

    /// Whether only this machine can connect: `localhost`, `127.0.0.0/8` or `::1`.
    public var isLoopback: Bool { Self.isLoopback(host: host) }

    /// Whether `host` is `localhost`, an address of `127.0.0.0/8`, or `::1`.
    static func isLoopback(host: String) -> Bool {
        if host == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { bytes in bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1 }
        }
        return false
    }

    /// Refuses an address others can reach when the service has no tokens.
    public func checkExposure(hasTokens: Bool) throws(ListenAddressError) {
        guard !hasTokens, !isLoopback else { return }
        throw .init("refusing to listen on \(self) without --tokens: anyone who can reach it could send actions to every instance; "
                    + "pass --tokens FILE, or listen on a loopback address such as 127.0.0.1")
    }

    /// `host:port`, with brackets around an IPv6 host.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    private static func isIPv4(_ host: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1
    }

    private static func isIPv6(_ host: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, host, &address) == 1
    }
}

/// Why a `--listen` address was refused; one line.
public struct ListenAddressError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The error, as one line.
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension ListenAddress {
    /// `host:port` as messages print it, the port given (one the system chose, for port 0); an
    /// IPv6 host in brackets.
    public static func display(host: String, port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
