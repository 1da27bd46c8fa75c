/// What `actomaton-host inspect` says about a diagram: how many nodes its DOT text declares or
/// uses, and sizes written with thousands separators.
public enum DiagramText {
    /// How many distinct node IDs `dot` (Graphviz DOT) names in node and edge statements, in
    /// its subgraphs included: attribute statements (`graph`, `node`, `edge`), attribute lists
    /// and assignments (`rankdir=LR`), subgraph names and ports are not nodes. A best effort
    /// for text that is not DOT: it never fails, it counts what looks like IDs.
    public static func nodeCount(of dot: String) -> Int {
        nodeIDs(in: dot).count
    }

    /// The distinct node IDs of `dot`, in order of first appearance (see ``nodeCount(of:)``);
    /// a quoted ID without its quotes, its escaped quotes unescaped.
    public static func nodeIDs(in dot: String) -> [String] {
        var scanner = DOTTokens(Array(dot.utf8))
        let tokens = scanner.all()
        var ids: [String] = []
        var seen: Set<String> = []
        var index = 0
        // The graph's own header: everything up to its first `{`.
        while index < tokens.count, tokens[index] != DOTToken.punctuation(UInt8(ascii: "{")) { index += 1 }
        index += 1
        func next(_ offset: Int = 1) -> DOTToken? { index + offset < tokens.count ? tokens[index + offset] : nil }
        while index < tokens.count {
            switch tokens[index] {
            case .punctuation(UInt8(ascii: "[")):
                var depth = 0
                repeat {
                    if tokens[index] == DOTToken.punctuation(UInt8(ascii: "[")) { depth += 1 }
                    if tokens[index] == DOTToken.punctuation(UInt8(ascii: "]")) { depth -= 1 }
                    index += 1
                } while index < tokens.count && depth > 0
            case let .identifier(word, quoted: false) where ["graph", "node", "edge"].contains(word.lowercased()):
                index += 1
            case let .identifier(word, quoted: false) where word.lowercased() == "subgraph":
                index += 1
                if case .identifier? = next(0) { index += 1 }
            case let .identifier(name, _):
                if next() == DOTToken.punctuation(UInt8(ascii: "=")) {
                    index += 3
                    continue
                }
                if seen.insert(name).inserted { ids.append(name) }
                index += 1
                // A port and a compass point: `node:port:n`.
                while index + 1 < tokens.count, tokens[index] == DOTToken.punctuation(UInt8(ascii: ":")) { index += 2 }
            default:
                index += 1
            }
        }
        return ids
    }

    /// `value` with a comma every three digits: `1,234`.
    public static func grouped(_ value: Int) -> String {
        let digits = Array(String(value.magnitude))
        var text = ""
        for (position, digit) in digits.enumerated() {
            if position > 0, (digits.count - position) % 3 == 0 { text.append(",") }
            text.append(digit)
        }
        return value < 0 ? "-" + text : text
    }
}

/// One token of DOT text.
private enum DOTToken: Equatable {
    /// An ID: a name, a numeral, a quoted string (without its quotes) or an HTML string.
    case identifier(String, quoted: Bool)
    /// `{ } [ ] ; , = :` or an edge operator (`-` for both `->` and `--`).
    case punctuation(UInt8)
}

/// Splits DOT text into tokens, skipping comments (`//`, `/* */`, and `#` lines).
private struct DOTTokens {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    mutating func all() -> [DOTToken] {
        var tokens: [DOTToken] = []
        while let token = next() { tokens.append(token) }
        return tokens
    }

    private func at(_ offset: Int) -> UInt8? { index + offset < bytes.count ? bytes[index + offset] : nil }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        byte >= 0x80 || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
            || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    mutating func next() -> DOTToken? {
        while let byte = at(0) {
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                index += 1
            case UInt8(ascii: "#"):
                while let byte = at(0), byte != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where at(1) == UInt8(ascii: "/"):
                while let byte = at(0), byte != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where at(1) == UInt8(ascii: "*"):
                index += 2
                while at(0) != nil, !(at(0) == UInt8(ascii: "*") && at(1) == UInt8(ascii: "/")) { index += 1 }
                index = min(index + 2, bytes.count)
            case UInt8(ascii: "\""):
                index += 1
                var text: [UInt8] = []
                while let byte = at(0), byte != UInt8(ascii: "\"") {
                    if byte == UInt8(ascii: "\\"), at(1) == UInt8(ascii: "\"") {
                        text.append(UInt8(ascii: "\""))
                        index += 2
                    } else {
                        text.append(byte)
                        index += 1
                    }
                }
                index = min(index + 1, bytes.count)
                return .identifier(String(decoding: text, as: UTF8.self), quoted: true)
            case UInt8(ascii: "<"):
                let start = index
                var depth = 0
                repeat {
                    if at(0) == UInt8(ascii: "<") { depth += 1 }
                    if at(0) == UInt8(ascii: ">") { depth -= 1 }
                    index += 1
                } while at(0) != nil && depth > 0
                return .identifier(String(decoding: bytes[start..<index], as: UTF8.self), quoted: true)
            case UInt8(ascii: "-") where at(1) == UInt8(ascii: ">") || at(1) == UInt8(ascii: "-"):
                index += 2
                return DOTToken.punctuation(UInt8(ascii: "-"))
            case _ where Self.isNameByte(byte) || byte == UInt8(ascii: "-"):
                let start = index
                index += 1
                while let byte = at(0), Self.isNameByte(byte) { index += 1 }
                return .identifier(String(decoding: bytes[start..<index], as: UTF8.self), quoted: false)
            default:
                index += 1
                return .punctuation(byte)
            }
        }
        return nil
    }
}
