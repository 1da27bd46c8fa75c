import NIOCore

/// Who a request comes from, for the limit on failed authentications: an IPv4 address, or the
/// /64 network of an IPv6 address (one client is commonly given a whole /64, and could
/// otherwise take a fresh address for each guess). An IPv4 client of a dual-stack listener
/// arrives as an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`): it counts as its IPv4
/// address, not as the /64 every IPv4 client would share.
struct ClientAddress: Hashable, Sendable {
    /// The address's bytes (4 for IPv4, the first 8 for IPv6); empty when it is not known
    /// (a Unix socket, a test's channel).
    let bytes: [UInt8]

    init(_ address: SocketAddress?) {
        switch address {
        case let .v4(address)?:
            bytes = withUnsafeBytes(of: address.address.sin_addr) { Array($0) }
        case let .v6(address)?:
            let all = withUnsafeBytes(of: address.address.sin6_addr) { Array($0) }
            let mapped = all.prefix(10).allSatisfy { $0 == 0 } && all[10] == 0xFF && all[11] == 0xFF
            bytes = mapped ? Array(all.suffix(4)) : Array(all.prefix(8))
        default:
            bytes = []
        }
    }
}
