import HTTPTypes
import NIOCore

/// Sends a request for an instance another host of the cluster owns on to that host, and
/// brings its answer back (`ActomatonCluster`'s `ClusterForwarder`, over keep-alive
/// connections between hosts).
public protocol RequestForwarder: Sendable {
    /// Sends `request` to the host at `owner` (`http://10.0.0.6:8080`) and returns its answer;
    /// throws when that host cannot be reached or does not answer in time.
    func forward(_ request: ForwardedRequest, to owner: String) async throws -> ForwardedResponse
}

/// A request as it is forwarded: the path (with its query), the headers that matter to the
/// owner (the token, the `Idempotency-Key`, the content type) and the body.
public struct ForwardedRequest: Sendable {
    /// The header that marks a forwarded request with the URL of the host that forwarded it: a
    /// host never forwards such a request again (503 instead), so requests cannot go in circles.
    public static let forwardedByHeader = HTTPField.Name("Actomaton-Forwarded-By")!

    /// The method.
    public var method: HTTPRequest.Method
    /// The path and query, as the client sent them.
    public var path: String
    /// The headers passed on.
    public var headers: HTTPFields
    /// The body.
    public var body: ByteBuffer

    /// Creates a request to forward.
    public init(method: HTTPRequest.Method, path: String, headers: HTTPFields, body: ByteBuffer) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }
}

/// The owner's answer to a forwarded request.
public struct ForwardedResponse: Sendable {
    /// The status code.
    public var status: Int
    /// The headers passed back (content type, `Idempotent-Replayed`).
    public var headers: HTTPFields
    /// The body.
    public var body: ByteBuffer

    /// Creates an answer.
    public init(status: Int, headers: HTTPFields, body: ByteBuffer) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Why a forward failed: one line, and whether the owner may have received the request.
///
/// A forwarder throws it; any other error counts as one after which the request may have been
/// received. The service answers 503 (retry) only when it was not sent; 502 when the owner
/// answered with what is not an answer of this API (too long, not HTTP); and 504 otherwise (no
/// answer in time): in both, the owner may have applied an action it never answered.
public struct RequestForwardingError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in one line.
    public let description: String
    /// Whether the request may have reached the owner (it was sent, or partly).
    public let mayHaveReachedTheOwner: Bool
    /// Whether the owner answered, with what could not be read as an answer.
    public let ownerAnswered: Bool

    /// Creates the error.
    public init(_ description: String, mayHaveReachedTheOwner: Bool, ownerAnswered: Bool = false) {
        self.description = description
        self.mayHaveReachedTheOwner = mayHaveReachedTheOwner || ownerAnswered
        self.ownerAnswered = ownerAnswered
    }
}
