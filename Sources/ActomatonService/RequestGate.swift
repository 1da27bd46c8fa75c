import ActomatonHost
import Logging
import NIOCore
import NIOHTTP1

/// Sits right after the HTTP parser: refuses what the parser, or the WebSocket upgrade that
/// follows, cannot handle — with a status, after the answers to the requests before it, then
/// closing the connection.
///
/// Every refusal carries `{"error": "one line"}`, as the service's other errors do, and is
/// logged at warning as the routes' errors are (it was not logged at all).
///
/// - A request the parser refuses is answered 400 (431 for a head past its limits). The
///   requests pipelined before it are answered first: answering at once cut off the answer
///   to a request already applied.
/// - An `Upgrade` to anything but WebSocket is ignored (the header dropped): NIO's upgrade
///   handler lost the request's head when no upgrader matched, and closed without an answer
///   (`curl --http2` offers `h2c`). So is one to a path no WebSocket route serves (the request
///   is answered as the plain request it also is: a handshake to `/healthz` was a bare 400),
///   and a list that offers WebSocket among others is read as WebSocket alone (`websocket,
///   h2c` was a bare 400).
/// - After a request that closes its connection (`Connection: close`, or HTTP/1.0 without
///   keep-alive), what the client sends is dropped: a request pipelined after it was answered
///   with an unasked-for 400 before the close.
/// - A request that says `Expect: 100-continue` is answered `100 Continue` at once when every
///   request before it is answered (a client waited a second for it before sending its body),
///   or 413 at once when its `Content-Length` is over the body limit.
/// - A WebSocket handshake without its key, or without `Connection: Upgrade`, is 400; one of
///   another version is 426 with `Sec-WebSocket-Version: 13`. Those too lost their head.
///
/// - A request must arrive whole, its body included, within the connection's idle timeout of
///   its head: one whose body trickled in (a byte a second) held its connection for days.
///   Past it, 408 and a close.
/// - A connection with every request answered is closed once idle for the same timeout
///   (Hummingbird's own idle timer also cut a request whose body was still coming, without an
///   answer).
/// - An HTTP/1.1 request without a `Host` header field, or with more than one, is 400 (RFC
///   9112, 3.2).
/// - An HTTP/1.0 request without `Connection: keep-alive` has its connection closed after its
///   answer, as HTTP/1.0 has it (the client reads to the end of the stream).
///
/// - A request passed on in part whose rest will not come — refused (400 for a body that
///   broke off, 408 for one that did not arrive in time), or its connection closed — ends with
///   ``RequestCutShort`` for its body's reader, not with an end: Hummingbird reads a stream
///   that ends as a body that ends, and the part that came was applied while the client was
///   told 400 or 408. An answer the route writes after the refusal's is dropped.
///
/// Once a WebSocket handshake is passed on, the connection may become a WebSocket: the gate
/// then passes everything on untouched.
final class RequestGate: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// A WebSocket handshake went on: what passes now may be frames.
    private var passingThrough = false
    /// Requests passed on, and whether the last one was passed on whole.
    private var requests = 0
    private var lastRequestComplete = true
    /// Responses written whole.
    private var responses = 0
    /// Set once a request is refused: the status to answer with (`nil`: none, only a close),
    /// and how many responses to wait for first.
    private var refusal: (status: HTTPResponseStatus?, after: Int)?
    /// The number of the request after whose answer the connection closes (HTTP/1.0).
    private var closeAfter: Int?
    /// How long a request may take to arrive whole, from its head.
    private let requestTimeout: TimeAmount
    /// Armed when a read ends with a request in part.
    private var requestDeadline: Scheduled<Void>?
    /// Armed when every request is answered.
    private var idleDeadline: Scheduled<Void>?

    /// The largest body a request may have (`--max-body-size`), for `Expect: 100-continue`.
    private let maxBodySize: Int

    /// Where refusals are logged.
    private let logger: Logger
    /// The method and target of the request being read, for the log; `nil` between requests
    /// (a head the parser refused was not read).
    private var lastRequestHead: (method: HTTPMethod, uri: String)?

    /// The request being read as the log names it: its method and path (cut and escaped), or
    /// "a request".
    private var lastRequestLine: String {
        guard let (method, uri) = lastRequestHead else { return "a request" }
        let path = uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        return "\(method) \(TerminalText.escaping(path.utf8.count > 256 ? path.prefix(utf8Bytes: 256) + "…" : path))"
    }

    init(requestTimeout: TimeAmount, maxBodySize: Int = .max, logger: Logger = Logger(label: "actomaton-host")) {
        self.requestTimeout = requestTimeout
        self.maxBodySize = maxBodySize
        self.logger = logger
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        requestDeadline?.cancel()
        idleDeadline?.cancel()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !passingThrough { cutShortIfInPart(context) }
        context.fireChannelInactive()
    }

    /// Whether the request in part was told it is cut short.
    private var toldCutShort = false

    /// Tells the reader of the request passed on in part, if any, that its rest will not come.
    private func cutShortIfInPart(_ context: ChannelHandlerContext) {
        guard !lastRequestComplete, !toldCutShort else { return }
        toldCutShort = true
        context.fireErrorCaught(RequestCutShort())
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if passingThrough {
            context.fireChannelRead(data)
            return
        }
        // After a refusal, or the request that closes the connection, what follows is dropped.
        guard refusal == nil else { return }
        if let closeAfter, requests >= closeAfter, lastRequestComplete { return }
        switch unwrapInboundIn(data) {
        case let .head(head):
            lastActivity = .now()
            lastRequestIsHead = head.method == .HEAD
            lastRequestHead = (head.method, head.uri)
            // Most requests have none of the fields looked at below but Host: one pass finds
            // which are there, rather than a lookup by canonical form for each (which splits and
            // copies the values); the log's line is made only for a refusal.
            let fields = HeadFields(head.headers)
            if head.version.major == 1, head.version.minor >= 1, fields.hostCount(head.headers) != 1 {
                // RFC 9112, 3.2: a server must answer 400 to one without, or with several.
                refuse(context, status: .badRequest, line: "an HTTP/1.1 request needs one Host header field", toHead: lastRequestIsHead)
                return
            }
            // RFC 9112, 3.2: and to one whose Host is not a host and port (`127.0.0.1:8080@x`
            // was read as 127.0.0.1, and served).
            if let host = fields.host, !Self.isHostField(host) {
                refuse(context, status: .badRequest, line: "the Host header field \(ServiceError.quoted(host)) is not a host with an optional port",
                       toHead: lastRequestIsHead)
                return
            }
            var head = head
            // RFC 9112, 3.2.2: a target in absolute form names the host, not the Host field (the
            // check of a request from this machine read the field, and served
            // `GET http://elsewhere/v1/plugins` addressed to 127.0.0.1).
            if !head.uri.utf8.starts(with: "/".utf8), let (authority, target) = Self.absoluteForm(head.uri) {
                guard Self.isHostField(authority) else {
                    refuse(context, status: .badRequest, line: "the request's target names no host with an optional port", toHead: lastRequestIsHead)
                    return
                }
                head.headers.replaceOrAdd(name: "host", value: authority)
                head.uri = target
            }
            if fields.hasCoding, let (status, line) = Self.codingRefusal(head.headers) {
                refuse(context, status: status, line: line, toHead: lastRequestIsHead)
                return
            }
            // RFC 9110, 9.3.6: the service is no proxy. Routed, the answer went out without its
            // length or body (an answer to CONNECT has none, as the encoder writes it) on a
            // connection left open: the client waited for the rest until the idle timeout.
            if head.method == .CONNECT {
                refuse(context, status: .notImplemented, line: "the service is not a proxy: it does not implement CONNECT", toHead: false)
                return
            }
            let protocols = fields.hasUpgrade ? head.headers[canonicalForm: "upgrade"].map { $0.lowercased() } : []
            if !protocols.isEmpty {
                if !protocols.contains("websocket") || !Self.isWebSocketRoute(head.uri) {
                    head.headers.remove(name: "upgrade")
                } else if let (status, line) = Self.webSocketRefusal(head) {
                    refuse(context, status: status, line: line, toHead: lastRequestIsHead,
                           headers: status == .upgradeRequired ? [("Sec-WebSocket-Version", "13")] : [])
                    return
                } else {
                    head.headers.replaceOrAdd(name: "upgrade", value: "websocket")
                    passingThrough = true
                }
            }
            if !passingThrough, fields.hasExpect, head.version.major == 1, head.version.minor >= 1,
               head.headers[canonicalForm: "expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > maxBodySize {
                    refuse(context, status: .payloadTooLarge, line: "the request body is \(length) bytes, over the limit of "
                               + "\(maxBodySize) (--max-body-size)", toHead: lastRequestIsHead)
                    return
                }
                if responses == requests {
                    context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .continue))), promise: nil)
                }
            }
            requests += 1
            lastRequestComplete = false
            if !head.isKeepAlive, closeAfter == nil { closeAfter = requests }
            context.fireChannelRead(wrapInboundOut(.head(head)))
        case .body:
            context.fireChannelRead(data)
        case .end:
            lastRequestComplete = true
            lastRequestHead = nil
            requestDeadline?.cancel()
            requestDeadline = nil
            context.fireChannelRead(data)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Only a request still in part after a read costs a timer.
        if !passingThrough, refusal == nil, !lastRequestComplete, requestDeadline == nil {
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
            requestDeadline = context.eventLoop.scheduleTask(in: requestTimeout) {
                handler.value.requestDeadline = nil
                let gate = handler.value
                gate.refuse(boundContext.value, status: .requestTimeout,
                            line: "the request did not arrive whole within \(seconds(.nanoseconds(gate.requestTimeout.nanoseconds))) of its head, "
                                + "the limit (--connection-idle-timeout)", toHead: gate.lastRequestIsHead)
            }
        }
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !passingThrough, let parsing = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        // What follows a request that closes the connection is dropped, not refused: the parser
        // calls it an error.
        if parsing == .closedConnection, closeAfter != nil { return }
        // The client closed in the middle of a request (or after a 408 for its head): there is
        // no one to answer, and nothing to log at warning.
        // RFC 9110, 9.1: a method the server does not know is 501.
        let status: HTTPResponseStatus = switch parsing {
        case .headerOverflow: .requestHeaderFieldsTooLarge
        case .invalidMethod: .notImplemented
        default: .badRequest
        }
        refuse(context, status: status, line: Self.line(for: parsing), logged: parsing != .invalidEOFState)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if passingThrough {
            context.write(data, promise: promise)
            return
        }
        if answered, refusal?.status != nil {
            // The refused request's route answering its cut-short body: the refusal answered it.
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        responses += 1
        lastActivity = .now()
        if closeAfter != nil || refusal != nil {
            // A close waits for the answer to be written.
            let written = promise ?? context.eventLoop.makePromise()
            lastAnswerWritten = written.futureResult
            context.write(data, promise: written)
        } else {
            context.write(data, promise: promise)
        }
        if let closeAfter, responses >= closeAfter, refusal == nil {
            refusal = (nil, closeAfter)
        }
        answerIfDue(context)
        if idleDeadline == nil { armIdleCheck(context.channel, in: requestTimeout) }
    }

    /// When the connection last read a request's head or wrote an answer's end.
    private var lastActivity = NIODeadline.now()

    /// Checks, after `delay`, whether the connection has idled for the timeout since its last
    /// activity — every request answered, its answers written — and closes it if so; else
    /// checks again. One timer per connection, not one per request.
    private func armIdleCheck(_ channel: any Channel, in delay: TimeAmount) {
        let handler = NIOLoopBound(self, eventLoop: channel.eventLoop)
        idleDeadline = channel.eventLoop.scheduleTask(in: delay) {
            let gate = handler.value
            gate.idleDeadline = nil
            guard gate.refusal == nil, !gate.passingThrough else { return }
            let busy = gate.responses < gate.requests || !gate.lastRequestComplete || !channel.isWritable
            let idle = NIODeadline.now() - gate.lastActivity
            if !busy && idle >= gate.requestTimeout {
                channel.close(promise: nil)
            } else {
                gate.armIdleCheck(channel, in: busy ? gate.requestTimeout : gate.requestTimeout - idle)
            }
        }
    }

    /// The last answer's write, for a close to wait on.
    private var lastAnswerWritten: EventLoopFuture<Void>?

    /// Refuses with `status` and `{"error": line}` once the requests passed on whole are
    /// answered — without the body when the refused request is a `HEAD` (`toHead`). A request
    /// whose body broke off is the one refused, unless it was answered already: then only a
    /// close.
    private func refuse(_ context: ChannelHandlerContext, status: HTTPResponseStatus, line: String, toHead: Bool = false,
                        headers: [(String, String)] = [], logged: Bool = true) {
        guard refusal == nil else { return }
        let whole = lastRequestComplete ? requests : requests - 1
        refusal = (responses > whole ? nil : status, whole)
        refusalLine = line
        refusalIsToHead = toHead
        extraHeaders = headers
        if let status = refusal?.status {
            logger.log(level: logged ? .warning : .debug, "\(lastRequestLine): \(status.code) \(line)")
        }
        answerIfDue(context)
        cutShortIfInPart(context)
    }

    private var refusalLine = ""
    private var refusalIsToHead = false
    /// Whether the last request head read was a `HEAD`'s.
    private var lastRequestIsHead = false
    private var extraHeaders: [(String, String)] = []
    private var answered = false

    private func answerIfDue(_ context: ChannelHandlerContext) {
        guard let refusal, !answered, responses >= refusal.after else { return }
        answered = true
        let channel = context.channel
        guard let status = refusal.status else {
            context.flush()
            if let lastAnswerWritten {
                lastAnswerWritten.whenComplete { _ in channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
            return
        }
        let body = ByteBuffer(string: ServiceError.jsonLine(refusalLine))
        var headers = HTTPHeaders([("Connection", "close"), ("Content-Type", "application/json"),
                                   ("X-Content-Type-Options", "nosniff"), ("Content-Length", String(body.readableBytes))])
        headers.add(contentsOf: extraHeaders)
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        // RFC 9110, 9.3.2: the answer to a HEAD has the fields of the answer to a GET, no body.
        if !refusalIsToHead { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    /// The line a request the parser refused with `error` is answered with.
    static func line(for error: HTTPParserError) -> String {
        let why = switch error {
        case .headerOverflow: "its head is longer than 80 KiB or has more than 1,000 fields, the HTTP parser's limits"
        case .invalidContentLength, .unexpectedContentLength: "its Content-Length is not one decimal number"
        case .invalidMethod: "its method is not one HTTP defines (methods are case-sensitive: GET, not get)"
        case .invalidVersion: "its version is not HTTP/1.0 or HTTP/1.1"
        case .invalidURL, .invalidPath, .invalidQueryString, .invalidFragment, .invalidHost, .invalidPort: "its target is not a valid URI"
        case .invalidHeaderToken, .invalidCharactersUsed: "a header field holds a character HTTP does not allow"
        case .invalidChunkSize: "a chunk's size is not a hexadecimal number"
        case .lfExpected, .invalidConstant, .strictModeAssertion: "its framing is not HTTP/1.1's (a line end or a constant is wrong)"
        default: "the HTTP parser refused it (\(error))"
        }
        return "the request is not valid HTTP/1.1: \(why)"
    }

    /// The status and line for a request whose body has a coding the service does not undo, or
    /// `nil`: a transfer coding but `chunked` (501, RFC 9112, 6.1), or a content coding but
    /// `identity` (415, RFC 9110, 15.5.16). Both were ignored: `Transfer-Encoding: gzip, chunked`
    /// was read as chunked and its body applied as it came, and a gzipped body was refused as
    /// text that is not UTF-8.
    static func codingRefusal(_ headers: HTTPHeaders) -> (HTTPResponseStatus, String)? {
        func codings(_ name: String) -> [String] {
            headers[canonicalForm: name].map { $0.lowercased() }.filter { !$0.isEmpty }
        }
        let transfer = codings("transfer-encoding")
        if !transfer.isEmpty, transfer != ["chunked"] {
            return (.notImplemented, "the service takes no transfer coding but chunked; this request's is "
                        + ServiceError.quoted(transfer.joined(separator: ", ")))
        }
        let content = codings("content-encoding")
        if !content.isEmpty, content != ["identity"] {
            return (.unsupportedMediaType, "the service takes bodies with no content coding; this request's is "
                        + ServiceError.quoted(content.joined(separator: ", ")))
        }
        return nil
    }

    /// Whether `value` is a Host field's value (RFC 9110, 7.2): a host — an IP literal in
    /// brackets, or a name or IPv4 address of the characters a URI's host may have — then
    /// optionally `:` and digits; or nothing.
    static func isHostField(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        func isPort(_ part: ArraySlice<UInt8>) -> Bool { part.count <= 5 && part.allSatisfy(isDigit) }
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")), close > 1 else { return false }
            let inside = bytes[1..<close]
            guard inside.allSatisfy({ isDigit($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0 | 0x20) || $0 == UInt8(ascii: ":")
                || $0 == UInt8(ascii: ".") }) else { return false }
            let rest = bytes[(close + 1)...]
            return rest.isEmpty || (rest.first == UInt8(ascii: ":") && isPort(rest.dropFirst()))
        }
        let colon = bytes.lastIndex(of: UInt8(ascii: ":"))
        let host = bytes[..<(colon ?? bytes.endIndex)]
        if let colon, !isPort(bytes[(colon + 1)...]) { return false }
        // RFC 3986, 3.2.2: a reg-name's unreserved, sub-delims and percent signs.
        return host.allSatisfy { byte in
            isDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || "-._~!$&'()*+,;=%".utf8.contains(byte)
        }
    }

    /// The authority and the origin-form target (`/path?query`) of a target in absolute form
    /// (`http://host:port/path?query`), or `nil` for a target in another form.
    static func absoluteForm(_ uri: String) -> (authority: String, target: String)? {
        let lowered = uri.prefix(8).lowercased()
        let schemeLength = lowered.hasPrefix("http://") ? 7 : lowered.hasPrefix("https://") ? 8 : 0
        guard schemeLength > 0 else { return nil }
        let rest = uri.dropFirst(schemeLength)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let remainder = rest[authorityEnd...]
        let target = remainder.hasPrefix("/") ? String(remainder) : "/" + remainder
        return (String(rest[..<authorityEnd]), target)
    }

    /// Whether `key` is 16 bytes in base64: 22 characters of its alphabet, then `==`.
    static func isWebSocketKey(_ key: Substring) -> Bool {
        let bytes = Array(key.utf8)
        guard bytes.count == 24, bytes[22] == UInt8(ascii: "="), bytes[23] == UInt8(ascii: "=") else { return false }
        return bytes[..<22].allSatisfy { byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
        }
    }

    /// Whether a WebSocket route serves `uri`: `/v1/machines/{plugin}/{key}/watch`, with or
    /// without a query.
    static func isWebSocketRoute(_ uri: String) -> Bool {
        let path = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        return segments.count == 6 && segments[0].isEmpty && segments[1] == "v1" && segments[2] == "machines"
            && !segments[3].isEmpty && !segments[4].isEmpty && segments[5] == "watch"
    }

    /// Why a WebSocket handshake cannot be passed on, or `nil`: not a `GET`, no key, no
    /// `Connection: Upgrade` (400), another version than 13 (426).
    static func webSocketRefusal(_ head: HTTPRequestHead) -> (status: HTTPResponseStatus, line: String)? {
        guard head.method == .GET else {
            // RFC 6455, 4.1: `HEAD` with the handshake's fields became a watcher.
            return (.badRequest, "a WebSocket handshake is a GET request")
        }
        let connection = head.headers[canonicalForm: "connection"].map { $0.lowercased() }
        guard connection.contains("upgrade"), head.headers.first(name: "sec-websocket-key")?.isEmpty == false else {
            return (.badRequest, "a WebSocket handshake needs Connection: Upgrade and a Sec-WebSocket-Key")
        }
        // RFC 6455, 4.2.1: one key, 16 bytes in base64 (24 characters, the last two `=`).
        let keys = head.headers[canonicalForm: "sec-websocket-key"]
        guard keys.count == 1, let key = keys.first, isWebSocketKey(key) else {
            return (.badRequest, "a WebSocket handshake's Sec-WebSocket-Key is 16 bytes in base64 (24 characters)")
        }
        guard head.headers[canonicalForm: "sec-websocket-version"] == ["13"] else {
            return (.upgradeRequired, "the service speaks WebSocket version 13 only (Sec-WebSocket-Version: 13)")
        }
        return nil
    }
}

/// What the reader of a request's body gets when the rest of the request will not come: the
/// request is not applied.
struct RequestCutShort: Error, CustomStringConvertible {
    var description: String { "the request was cut short before its end" }
}

/// The header fields ``RequestGate`` looks at, found in one pass over a request head's fields.
struct HeadFields {
    /// How many `Host` fields there are, and the first one's value.
    private(set) var hostFields = 0
    private(set) var host: String?
    /// Whether there is a `Transfer-Encoding` or `Content-Encoding` field.
    private(set) var hasCoding = false
    /// Whether there is an `Upgrade` field.
    private(set) var hasUpgrade = false
    /// Whether there is an `Expect` field.
    private(set) var hasExpect = false

    init(_ headers: HTTPHeaders) {
        for (name, value) in headers {
            switch name.utf8.count {
            case 4 where Self.name(name, is: "host"):
                hostFields += 1
                if host == nil { host = value }
            case 6 where Self.name(name, is: "expect"):
                hasExpect = true
            case 7 where Self.name(name, is: "upgrade"):
                hasUpgrade = true
            case 16 where Self.name(name, is: "content-encoding"), 17 where Self.name(name, is: "transfer-encoding"):
                hasCoding = true
            default:
                break
            }
        }
    }

    /// How many hosts the `Host` fields name, as `headers[canonicalForm: "host"]` counts them
    /// (a value is a comma-separated list; an empty one names none).
    func hostCount(_ headers: HTTPHeaders) -> Int {
        if hostFields == 1, let host, !host.utf8.contains(UInt8(ascii: ",")), host.utf8.contains(where: { $0 != 0x20 && $0 != 0x09 }) { return 1 }
        return headers[canonicalForm: "host"].count
    }

    /// Whether `name` is `lowercased` in any case (ASCII).
    private static func name(_ name: String, is lowercased: StaticString) -> Bool {
        let target = UnsafeBufferPointer(start: lowercased.utf8Start, count: lowercased.utf8CodeUnitCount)
        return name.utf8.elementsEqual(target) { byte, expected in
            (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte) == expected
        }
    }
}
