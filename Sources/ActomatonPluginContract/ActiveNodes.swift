import ActomatonPluginABI

/// The names of a plugin's diagram nodes that are active in a state, as its `active` function
/// writes them (since ABI version 2): UTF-8 names separated by `\n`, a final `\n` allowed,
/// nothing for none. Parsed here, once, for every runtime (in process, in a worker, in the
/// WebAssembly sandbox), without trusting the bytes.
public enum ActiveNodes {
    /// The most names: `ACTOMATON_MAX_ACTIVE_NODES`.
    public static let maxCount = Int(ACTOMATON_MAX_ACTIVE_NODES)
    /// The most bytes in one name: `ACTOMATON_MAX_NODE_NAME_LENGTH`.
    public static let maxNameBytes = Int(ACTOMATON_MAX_NODE_NAME_LENGTH)
    /// The most bytes the function may write in all: `ACTOMATON_MAX_ACTIVE_SIZE`, room for
    /// ``maxCount`` names of ``maxNameBytes`` bytes, each with its `\n`.
    public static let maxBytes = Int(ACTOMATON_MAX_ACTIVE_SIZE)

    /// Why the bytes are not a list of active nodes: one line.
    public struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
        /// The reason, one line.
        public let description: String

        /// A problem described by `description`.
        public init(_ description: String) {
            self.description = description
        }
    }

    /// The names in `bytes`; throws when there are more than ``maxCount``, or a name is empty,
    /// longer than ``maxNameBytes``, not UTF-8 or holds a control character (U+0000–U+001F,
    /// U+007F–U+009F). `bytes` longer than ``maxBytes`` are refused before anything else.
    public static func parse(_ bytes: some Collection<UInt8>) throws(Problem) -> [String] {
        guard bytes.count <= maxBytes else {
            throw Problem("the active nodes are \(bytes.count) bytes, more than the limit of \(maxBytes)")
        }
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        guard lines.count <= maxCount else {
            throw Problem("the plugin named \(lines.count) active nodes, more than the limit of \(maxCount)")
        }
        var names: [String] = []
        names.reserveCapacity(lines.count)
        for (index, line) in lines.enumerated() {
            guard line.count <= maxNameBytes else {
                throw Problem("active node \(index + 1) is \(line.count) bytes, more than the limit of \(maxNameBytes)")
            }
            guard let name = String(validating: line, as: UTF8.self) else {
                throw Problem("active node \(index + 1) is not valid UTF-8")
            }
            names.append(name)
        }
        try check(names)
        return names
    }

    /// Checks names that arrived one by one (in a worker's frame): at most ``maxCount``, each
    /// 1...``maxNameBytes`` bytes without a control character (a `\n` included).
    public static func check(_ names: [String]) throws(Problem) {
        guard names.count <= maxCount else {
            throw Problem("the plugin named \(names.count) active nodes, more than the limit of \(maxCount)")
        }
        for (index, name) in names.enumerated() {
            let number = index + 1
            guard !name.isEmpty else { throw Problem("active node \(number) is empty") }
            guard name.utf8.count <= maxNameBytes else {
                throw Problem("active node \(number) is \(name.utf8.count) bytes, more than the limit of \(maxNameBytes)")
            }
            if let control = name.unicodeScalars.first(where: isControl) {
                throw Problem("active node \(number) holds the control character U+\(hex(control.value))")
            }
        }
    }

    /// `names` as an `active` function writes them: separated by `\n`.
    public static func encode(_ names: [String]) -> [UInt8] {
        Array(names.joined(separator: "\n").utf8)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

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
