import ActomatonHost
import ActomatonPluginContract
import Crypto

/// What a token may do: one scope of a `--tokens` file line.
public enum AccessScope: Sendable, Hashable, CustomStringConvertible {
    /// `read:PLUGIN`, or `read:*` (any plugin, `nil`): read instances, list keys, watch.
    case read(plugin: String?)
    /// `send:PLUGIN`, or `send:*` (any plugin, `nil`): send actions.
    case send(plugin: String?)
    /// `*`: read and send on any plugin.
    case any
    /// `admin`: delete instances.
    case admin

    /// Reads one scope; `nil` when it is none of the forms above.
    init?(_ text: Substring) {
        switch text {
        case "*": self = .any
        case "admin": self = .admin
        default:
            // A plugin is `*` or a name a manifest may have: nothing else can name one.
            func plugin(after prefix: Substring) -> String?? {
                let name = text.dropFirst(prefix.count)
                if name == "*" { return .some(nil) }
                return ManifestValidator.isValidName(String(name)) ? .some(String(name)) : nil
            }
            if text.hasPrefix("read:"), let plugin = plugin(after: "read:") {
                self = .read(plugin: plugin)
            } else if text.hasPrefix("send:"), let plugin = plugin(after: "send:") {
                self = .send(plugin: plugin)
            } else {
                return nil
            }
        }
    }

    /// The scope as a tokens file writes it.
    public var description: String {
        switch self {
        case let .read(plugin): "read:\(plugin ?? "*")"
        case let .send(plugin): "send:\(plugin ?? "*")"
        case .any: "*"
        case .admin: "admin"
        }
    }
}

/// What a request needs from its token (see ``AccessRequirement/of(method:path:)``).
public enum AccessRequirement: Sendable, Hashable {
    /// Nothing: `/healthz`, `/readyz`, and the pages a browser opens (`GET /`,
    /// `/inspector/…`, `/play/…`), which hold no data and ask for a token to fetch any.
    case none
    /// Any valid token: `/metrics`, `/v1/plugins`, `/v1/openapi.yaml`, unknown paths.
    case anyToken
    /// `read:PLUGIN` (or `read:*`, or `*`).
    case read(String)
    /// `send:PLUGIN` (or `send:*`, or `*`).
    case send(String)
    /// `admin`.
    case admin

    /// What a request with `method` to `path` needs.
    ///
    /// The path is split as the router splits it, a run of `/` taken as one: read any other
    /// way, `/v1/machines//counter/k` hid its plugin from the check while the router served it.
    public static func of(method: String, path: some StringProtocol) -> AccessRequirement {
        let parts = path.split(separator: "/")
        if parts.count == 1, parts[0] == "healthz" || parts[0] == "readyz" { return .none }
        if method == "GET" || method == "HEAD", parts.isEmpty || (parts.count > 1 && (parts[0] == "inspector" || parts[0] == "play")) { return .none }
        // "v1", "machines", plugin, [key, [watch]]
        guard parts.count >= 3, parts[0] == "v1", parts[1] == "machines" else { return .anyToken }
        return of(method: method, plugin: String(parts[2]))
    }

    /// What a request with `method` about one of `plugin`'s instances needs: what the router
    /// read from the path, when it matched a route with a plugin in it.
    public static func of(method: String, plugin: String) -> AccessRequirement {
        switch method {
        case "POST": .send(plugin)
        case "DELETE": .admin
        default: .read(plugin)
        }
    }
}

/// One token of a tokens file: its line, and its scopes.
public struct AccessToken: Sendable, Hashable {
    /// The line of the tokens file it is on: it names the token in logs without its secret.
    public let line: Int
    /// The first 8 bytes of the SHA-256 digest of its secret, in hexadecimal: it names the token
    /// where a name must be the same on every host and after a restart, whatever line the token
    /// is on (an idempotency key's journaled receipt), without saying the secret.
    public let identity: String
    /// What it may do.
    public let scopes: [AccessScope]
    fileprivate let secret: [UInt8]

    /// The identity of a token whose secret is `secret`.
    static func identity(of secret: [UInt8]) -> String {
        SHA256.hash(data: secret).prefix(8).map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
    }

    /// Whether the scopes cover `requirement`.
    public func allows(_ requirement: AccessRequirement) -> Bool {
        switch requirement {
        case .none, .anyToken:
            return true
        case let .read(plugin):
            return scopes.contains { scope in
                switch scope {
                case .any: true
                case let .read(allowed): allowed == nil || allowed == plugin
                default: false
                }
            }
        case let .send(plugin):
            return scopes.contains { scope in
                switch scope {
                case .any: true
                case let .send(allowed): allowed == nil || allowed == plugin
                default: false
                }
            }
        case .admin:
            return scopes.contains(.admin)
        }
    }
}

/// Why a tokens file was refused; one line, naming the file (and the line).
public struct TokenFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The error, as one line.
    public let description: String

    init(_ path: String, _ message: String) {
        description = "\(path): \(message)"
    }
}

/// The tokens of a `--tokens` file: `TOKEN scope scope…` per line, `#` starting a comment at
/// the start of a line or of a word (within a token, it is one of its characters).
///
/// Limits: the file is at most ``maxFileSize`` bytes and ``maxTokens`` tokens; a token is
/// ``minTokenLength`` to ``maxTokenLength`` bytes of visible ASCII. The file passes the checks a
/// plugin file does (owner root or the host's user, not writable by others, nor any directory
/// above it) and must not be readable by group or others.
public struct TokenTable: Sendable {
    /// The largest tokens file read, in bytes.
    public static let maxFileSize: Int64 = 1 << 20
    /// The most tokens in a file.
    public static let maxTokens = 10_000
    /// The shortest token, in bytes: shorter ones can be guessed.
    public static let minTokenLength = 16
    /// The longest token, in bytes.
    public static let maxTokenLength = 256

    /// The tokens, in file order.
    public let tokens: [AccessToken]
    /// Each token's index in ``tokens``, by the SHA-256 digest of its secret.
    private let indexByDigest: [SHA256.Digest: Int]

    private init(tokens: [AccessToken], indexByDigest: [SHA256.Digest: Int]) {
        self.tokens = tokens
        self.indexByDigest = indexByDigest
    }

    /// Reads and checks the tokens file at `path`.
    public static func load(path: String) throws(TokenFileError) -> TokenTable {
        let bytes: [UInt8]
        let permissions: UInt32
        do {
            (bytes, permissions) = try TrustedFile.read(path, maxSize: maxFileSize)
        } catch {
            throw TokenFileError(path, ServiceFileProblem.describe(error.reason, of: "the tokens file"))
        }
        guard permissions & 0o077 == 0 else {
            throw TokenFileError(path, "group or other users can read or write the tokens file (mode \(String(permissions, radix: 8))); "
                                 + "run `chmod 600` on it")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw TokenFileError(path, "the tokens file is not valid UTF-8") }
        return try parse(text, path: path)
    }

    /// Reads the lines of a tokens file; `path` names it in errors.
    ///
    /// Lines end with `\n` or `\r\n`; words are separated by spaces and tabs. Any other control
    /// character is refused with the line's number: a `\r` alone must not join two lines (a
    /// file written with `\r\n` was read as one line, and the next line's token's scopes went
    /// to the first token).
    public static func parse(_ text: String, path: String) throws(TokenFileError) -> TokenTable {
        var tokens: [AccessToken] = []
        var indexByDigest: [SHA256.Digest: Int] = [:]
        for (index, ended) in text.lineBytes().enumerated() {
            let number = index + 1
            if let control = ended.first(where: { ($0 < 0x20 && $0 != UInt8(ascii: "\t")) || $0 == 0x7F }) {
                throw TokenFileError(path, "line \(number): a control character (byte \(TerminalText.hexByte(control))) is in the line; "
                                     + "lines end with \\n or \\r\\n, words are separated by spaces or tabs")
            }
            if number == 1, ended.starts(with: [0xEF, 0xBB, 0xBF]) {
                throw TokenFileError(path, "line 1 starts with a UTF-8 byte order mark (EF BB BF), which is not part of a token: "
                                     + "save the file without it")
            }
            // A `#` begins a comment at the start of a word only: a token may hold one (`#`
            // anywhere cut the token, and a valid one was refused as too short).
            var commentStart = ended.endIndex
            var previous = UInt8(ascii: " ")
            for index in ended.indices {
                let byte = ended[index]
                if byte == UInt8(ascii: "#"), previous == UInt8(ascii: " ") || previous == UInt8(ascii: "\t") {
                    commentStart = index
                    break
                }
                previous = byte
            }
            let line = Substring(String(decoding: ended[..<commentStart], as: UTF8.self))
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let secret = words.first else { continue }
            guard (minTokenLength...maxTokenLength).contains(secret.utf8.count) else {
                throw TokenFileError(path, "line \(number): a token is \(minTokenLength) to \(maxTokenLength) bytes, got \(secret.utf8.count)")
            }
            guard secret.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw TokenFileError(path, "line \(number): a token is visible ASCII characters only")
            }
            var scopes: [AccessScope] = []
            for word in words.dropFirst() {
                guard let scope = AccessScope(word) else {
                    throw TokenFileError(path, "line \(number): unknown scope '\(word)' (known: read:PLUGIN, send:PLUGIN, read:*, send:*, *, admin)")
                }
                scopes.append(scope)
            }
            guard !scopes.isEmpty else { throw TokenFileError(path, "line \(number): the token has no scope") }
            let bytes = Array(secret.utf8)
            let digest = SHA256.hash(data: bytes)
            if indexByDigest[digest] != nil { throw TokenFileError(path, "line \(number): the same token is on an earlier line") }
            guard tokens.count < maxTokens else { throw TokenFileError(path, "more than \(maxTokens) tokens") }
            indexByDigest[digest] = tokens.count
            tokens.append(AccessToken(line: number, identity: AccessToken.identity(of: bytes), scopes: scopes, secret: bytes))
        }
        // Every request would be 401: a mistake (the wrong file, an unsaved one), not a choice.
        guard !tokens.isEmpty else { throw TokenFileError(path, "holds no token: every request would be refused (401)") }
        return TokenTable(tokens: tokens, indexByDigest: indexByDigest)
    }

    /// The token whose secret is `presented`, or `nil`, in time that says nothing about how
    /// close a guess came: the token is found by the SHA-256 digest of what was presented (a
    /// guess one byte off has an unrelated digest), then compared whole, in time that depends
    /// only on the lengths. Each token was compared in turn: with the 10,000 a file may hold, a
    /// request took 3.7 ms to authenticate, and requests/s fell 24 times.
    public func authenticate(_ presented: some StringProtocol) -> AccessToken? {
        let bytes = Array(presented.utf8)
        guard bytes.count <= Self.maxTokenLength, let index = indexByDigest[SHA256.hash(data: bytes)] else { return nil }
        let token = tokens[index]
        var difference = token.secret.count ^ bytes.count
        for position in 0..<Self.maxTokenLength {
            let a = position < token.secret.count ? token.secret[position] : 0
            let b = position < bytes.count ? bytes[position] : 0
            difference |= Int(a ^ b)
        }
        return difference == 0 ? token : nil
    }
}
