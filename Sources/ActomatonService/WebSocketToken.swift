import HTTPTypes

/// A token carried as a WebSocket subprotocol, for browsers, which cannot set `Authorization`
/// on a WebSocket: `Sec-WebSocket-Protocol: actomaton.v1, actomaton.token.HEX`.
enum WebSocketToken {
    static let protocolHeader = HTTPField.Name("Sec-WebSocket-Protocol")!
    /// The subprotocol the watch route speaks, and answers with when a client offers it.
    static let watchProtocol = "actomaton.v1"
    static let prefix = "actomaton.token."

    /// The secret of the `actomaton.token.HEX` subprotocol, decoded; `nil` when none is offered.
    /// Throws 401 for one that is not an even count of hexadecimal digits, or is longer than a
    /// token can be.
    static func secret(in headers: HTTPFields) throws(ServiceError) -> String? {
        for field in headers[fields: protocolHeader] {
            for item in field.value.split(separator: ",") {
                let name = item.trimmingPrefixWhitespace()
                guard name.hasPrefix(prefix) else { continue }
                let digits = Array(name.dropFirst(prefix.count).utf8)
                guard !digits.isEmpty, digits.count % 2 == 0, digits.count <= 2 * TokenTable.maxTokenLength else {
                    throw .unauthorized("the token is not valid")
                }
                var bytes: [UInt8] = []
                bytes.reserveCapacity(digits.count / 2)
                for index in stride(from: 0, to: digits.count, by: 2) {
                    guard let high = digits[index].hexadecimalDigitValue, let low = digits[index + 1].hexadecimalDigitValue else {
                        throw .unauthorized("the token is not valid")
                    }
                    bytes.append(high << 4 | low)
                }
                return String(decoding: bytes, as: UTF8.self)
            }
        }
        return nil
    }

    /// The headers of a watch route's upgrade: `actomaton.v1` when the client offered it (a
    /// browser drops a connection whose answer names no protocol it offered).
    static func upgradeHeaders(for headers: HTTPFields) -> HTTPFields {
        let offered = headers[fields: protocolHeader].contains { field in
            field.value.split(separator: ",").contains { $0.trimmingPrefixWhitespace() == watchProtocol }
        }
        return offered ? [protocolHeader: watchProtocol] : [:]
    }
}

extension Substring {
    /// The text without its leading spaces and tabs.
    fileprivate func trimmingPrefixWhitespace() -> Substring {
        drop { $0 == " " || $0 == "\t" }
    }
}
