/// What the host reads of a diagram's DOT text: its nodes and their labels (how many for
/// `actomaton-host inspect`, which for the inspector's list), and sizes written with thousands
/// separators.
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
        nodes(in: dot).map(\.name)
    }

    /// The distinct nodes of `dot`, in order of first appearance (see ``nodeCount(of:)``), each
    /// with its label: its `label` attribute in a node statement, else its ID. A node drawn as
    /// a cluster's anchor (the core's statecharts draw a compound state `N` as the subgraph
    /// `cluster_N` with a hidden node `N`, labelled empty, inside) takes the cluster's label.
    /// What the inspector lists when Graphviz is not there to draw the diagram.
    public static func nodes(in dot: String) -> [DiagramNode] {
        var scanner = DOTTokens(Array(dot.utf8))
        let tokens = scanner.all()
        var nodes: [DiagramNode] = []
        var positions: [String: Int] = [:]
        var clusterLabels: [String: String] = [:]
        var braces: [String?] = []  // the subgraph each open brace belongs to
        var subgraph: String?  // a subgraph's name, until its brace
        var described: Int?  // the node an attribute list that follows describes
        var afterEdge = false
        var index = 0
        func token(_ offset: Int) -> DOTToken? { index + offset < tokens.count ? tokens[index + offset] : nil }
        func isPunctuation(_ token: DOTToken?, _ character: Unicode.Scalar) -> Bool {
            token == .punctuation(UInt8(ascii: character))
        }
        // The graph's own header: everything up to its first `{`.
        while index < tokens.count, !isPunctuation(tokens[index], "{") { index += 1 }
        while index < tokens.count {
            switch tokens[index] {
            case .punctuation(UInt8(ascii: "{")):
                braces.append(subgraph)
                subgraph = nil
                described = nil
                index += 1
            case .punctuation(UInt8(ascii: "}")):
                _ = braces.popLast()
                described = nil
                index += 1
            case .punctuation(UInt8(ascii: "-")):
                // An edge: its attributes are the edge's, not its ends'.
                described = nil
                afterEdge = true
                index += 1
            case .punctuation(UInt8(ascii: "[")):
                var depth = 0
                repeat {
                    if isPunctuation(token(0), "[") {
                        depth += 1
                    } else if isPunctuation(token(0), "]") {
                        depth -= 1
                    } else if depth == 1, case .identifier("label", _)? = token(0), isPunctuation(token(1), "="),
                              case let .identifier(value, _)? = token(2), let node = described {
                        nodes[node].label = value
                        index += 2
                    }
                    index += 1
                } while index < tokens.count && depth > 0
                described = nil
            case let .identifier(word, quoted: false) where ["graph", "node", "edge"].contains(word.lowercased()):
                described = nil
                index += 1
            case let .identifier(word, quoted: false) where word.lowercased() == "subgraph":
                described = nil
                index += 1
                if case let .identifier(name, _)? = token(0) {
                    subgraph = name
                    index += 1
                }
            case let .identifier(name, _):
                if isPunctuation(token(1), "=") {
                    // `name = value`: a graph's attribute; a cluster's label is kept for its anchor.
                    if name == "label", case let .identifier(value, _)? = token(2), let cluster = braces.last ?? nil {
                        clusterLabels[cluster] = value
                    }
                    index += 3
                    described = nil
                    continue
                }
                let position: Int
                if let known = positions[name] {
                    position = known
                } else {
                    position = nodes.count
                    positions[name] = position
                    nodes.append(DiagramNode(name: name, label: name))
                }
                index += 1
                // A port and a compass point: `node:port:n`.
                while index + 1 < tokens.count, isPunctuation(tokens[index], ":") { index += 2 }
                described = afterEdge || isPunctuation(token(0), "-") ? nil : position
                afterEdge = false
            default:
                described = nil
                index += 1
            }
        }
        for index in nodes.indices where nodes[index].label.isEmpty {
            nodes[index].label = clusterLabels["cluster_" + nodes[index].name] ?? nodes[index].name
        }
        return nodes
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

/// A node of a diagram: its ID, which a plugin's active nodes name, and its label.
public struct DiagramNode: Sendable, Hashable {
    /// The node's ID in the DOT text.
    public var name: String
    /// Its label, as the diagram shows it.
    public var label: String

    /// Creates a node.
    public init(name: String, label: String) {
        self.name = name
        self.label = label
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
