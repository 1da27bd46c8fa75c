/// A path segment the router matched, as the client meant it: its percent-encoding decoded.
///
/// A client that encodes every path segment (`encodeURIComponent`, the inspector's own pages)
/// writes a key `room:1` as `room%3A1`: the router's parameter is the raw segment, and the key
/// was refused as a character no key holds. Decoded first, then checked as any key or plugin
/// name: `%2F` becomes a `/`, which neither holds, so it names no other route.
enum PathParameter {
    /// `raw` with each `%XX` (two hexadecimal digits) replaced by its byte; `raw` itself when it
    /// has no `%`. Throws 400 for a `%` without two hexadecimal digits after it, or bytes that
    /// are not UTF-8.
    static func decoded(_ raw: String) throws(ServiceError) -> String {
        // Its length is the HTTP parser's to bound; the key's and plugin's checks bound what it decodes to.
        guard raw.utf8.contains(UInt8(ascii: "%")) else { return raw }
        guard let bytes = decodedBytes(raw) else {
            throw .badRequest("a path segment has a % not followed by two hexadecimal digits")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .badRequest("a path segment is not UTF-8 once its percent-encoding is decoded")
        }
        return text
    }

    /// Whether `raw` (a path segment or a query, as it came) has a `%` not followed by two
    /// hexadecimal digits.
    static func hasBrokenEscape(_ raw: some StringProtocol) -> Bool {
        raw.utf8.contains(UInt8(ascii: "%")) && decodedBytes(raw) == nil
    }

    /// The bytes of `raw` with each `%XX` decoded; `nil` for a `%` without two hexadecimal
    /// digits after it.
    private static func decodedBytes(_ raw: some StringProtocol) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(raw.utf8.count)
        var iterator = raw.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next()?.hexadecimalDigitValue, let low = iterator.next()?.hexadecimalDigitValue else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}

extension UInt8 {
    /// The value of this byte as a hexadecimal digit (`0`–`9`, `a`–`f`, `A`–`F`), or `nil`.
    var hexadecimalDigitValue: UInt8? {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): self - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): self - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): self - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
