import ActomatonHost
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Without tokens, the service takes requests from this machine only: its listen address is
/// loopback (``ListenAddress/checkExposure(hasTokens:)``), and — since a browser on this machine
/// is on loopback too — no request made by a web page of another site.
///
/// A page of any site could otherwise drive every instance: a cross-site `fetch` sends a
/// `text/plain` POST without asking first (its action applied, its answer unread), and a page
/// whose domain name the attacker points at 127.0.0.1 (DNS rebinding) is, to the browser, of
/// the same origin as the service, and reads its answers too. So a request must name this
/// machine in its `Host` — `localhost` (or a name under `.localhost`, which browsers keep on
/// loopback), an address of `127.0.0.0/8`, or `::1`; in a cluster, also the host of this
/// host's `--advertise` URL; and any name `--allow-host` gives (a reverse proxy's on this
/// machine, an alias in `/etc/hosts`) — and a request a page sent (one with an `Origin` field) must come
/// from a page of this machine. Refused: 403, one line. What needs no token where tokens are
/// used (`/healthz`, `/readyz`, the inspector's pages) is not checked: it says nothing a page
/// could use.
enum LocalRequests {
    /// Why a request is refused, or `nil`: its `Host` (`authority`, as in `127.0.0.1:8080` or
    /// `[::1]:8080`) and `Origin` (`http://localhost:3000`), either absent; `alsoAllowed`, the
    /// host names this host is also reached by (`--allow-host`'s, as ``allowedHostName(_:)``
    /// gives them; in a cluster, its advertised URL's, as ``host(ofURL:)`` gives it: in
    /// lowercase, without a final dot).
    static func refusal(authority: String?, origin: String?, alsoAllowed: Set<String> = []) -> String? {
        if let authority, !isLocal(host: host(ofAuthority: authority[...]), alsoAllowed: alsoAllowed) {
            return "the service has no tokens (--tokens), so it answers only requests addressed to this machine (a Host of localhost, "
                + "127.0.0.1, [::1] or a name --allow-host gives); this one was addressed to \(ServiceError.quoted(authority))"
        }
        if let origin, !isLocal(origin: origin, alsoAllowed: alsoAllowed) {
            return "the service has no tokens (--tokens), so pages of other sites may not use it; this request came from a page of "
                + ServiceError.quoted(origin)
        }
        return nil
    }

    /// The host of `HOST`, `HOST:PORT` or `[IPV6]:PORT`.
    static func host(ofAuthority authority: Substring) -> Substring {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return authority }
            return authority[authority.index(after: authority.startIndex)..<close]
        }
        guard let colon = authority.lastIndex(of: ":") else { return authority }
        return authority[..<colon]
    }

    /// Whether `origin` (`SCHEME://HOST[:PORT]`, as browsers send it) is a page of this machine;
    /// `null` (a sandboxed page, a file) is not.
    private static func isLocal(origin: String, alsoAllowed: Set<String>) -> Bool {
        guard let separator = origin.range(of: "://") else { return false }
        let authority = origin[separator.upperBound...]
        guard !authority.isEmpty, !authority.contains("/") else { return false }
        return isLocal(host: host(ofAuthority: authority), alsoAllowed: alsoAllowed)
    }

    /// Whether `host` names this machine.
    static func isLocal(host: Substring, alsoAllowed: Set<String> = []) -> Bool {
        // What nearly every request names, without a copy.
        if host == "127.0.0.1" || host == "localhost" { return true }
        let name = normalized(host)
        if !alsoAllowed.isEmpty, alsoAllowed.contains(name.contains(":") ? canonicalIPv6(name) ?? name : name) { return true }
        return name == "localhost" || name.hasSuffix(".localhost") || ListenAddress.isLoopback(host: name)
    }

    /// The host of an `http://HOST[:PORT]` URL (a cluster's `--advertise`), in lowercase and
    /// without a final dot, as a request's host is compared; or `nil`.
    static func host(ofURL url: String) -> String? {
        guard let separator = url.range(of: "://") else { return nil }
        let authority = url[separator.upperBound...].prefix { $0 != "/" }
        let host = self.host(ofAuthority: authority)
        return host.isEmpty ? nil : normalized(host)
    }

    /// See ``ServiceConfiguration/allowedHostName(_:)``.
    static func allowedHostName(_ text: String) -> String? {
        var name = text
        if name.hasPrefix("["), name.hasSuffix("]") {
            name = String(name.dropFirst().dropLast())
            guard name.contains(":") else { return nil }
        }
        if name.contains(":") { return canonicalIPv6(name) }
        name = normalized(name[...])
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard !name.isEmpty, name.utf8.count <= 253,
              labels.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 63 }),
              name.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                  || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        return name
    }

    /// The IPv6 address `text` in its canonical text (RFC 5952: lowercase, the longest run of
    /// zeros compressed, as browsers write it), or `nil` when it is none.
    private static func canonicalIPv6(_ text: String) -> String? {
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        var characters = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &characters, socklen_t(characters.count)) != nil else { return nil }
        return String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `host` in lowercase, without a final dot (`LocalHost.` is `localhost`).
    private static func normalized(_ host: Substring) -> String {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }
}
