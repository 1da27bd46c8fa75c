/// The nodes of a DOT diagram, with their labels: what the inspector lists when Graphviz is not
/// installed to draw it. A small reader of the DOT language (IDs, quoted and HTML strings,
/// attribute lists, comments), not a validator: text it cannot make sense of yields fewer
/// nodes, never an error.
struct DiagramNodes: Sendable, Equatable {
    /// One node: its ID (what a plugin names active) and its label (the ID when it has none).
    struct Node: Sendable, Equatable {
        var name: String
        var label: String
    }

    /// The most nodes read from one diagram; the rest are left out of the list.
    static let maxNodes = 1000

    /// The nodes in the order the text first mentions them. A node drawn as a cluster's anchor
    /// (the core's statecharts draw a compound state `N` as the cluster `cluster_N` with a
    /// hidden node `N` inside) takes the cluster's label; nodes labelled empty stay in the list
    /// with their name as the label.
    var nodes: [Node] = []

    init(dot: String) {
        let tokens = Self.tokens(of: dot)
        var index = 0
        var seen: [String: Int] = [:]
        var lastNode: Int?
        var afterEdge = false
        var clusters: [String?] = []  // the subgraph each open brace belongs to
        var pendingSubgraph: String?
        var clusterLabels: [String: String] = [:]
        defer {
            for index in nodes.indices where nodes[index].label.isEmpty {
                nodes[index].label = clusterLabels["cluster_" + nodes[index].name] ?? nodes[index].name
            }
        }
        func add(_ name: String) -> Int? {
            if let known = seen[name] { return known }
            guard nodes.count < Self.maxNodes else { return nil }
            seen[name] = nodes.count
            nodes.append(Node(name: name, label: name))
            return nodes.count - 1
        }
        while index < tokens.count {
            let token = tokens[index]
            switch token {
            case .punctuation("["):
                // An attribute list: a label belongs to the node just named, if any.
                var depth = 0
                var attribute: String?
                repeat {
                    switch tokens[index] {
                    case .punctuation("["): depth += 1
                    case .punctuation("]"): depth -= 1
                    case let .word(text, _) where index + 1 < tokens.count && tokens[index + 1] == .punctuation("="):
                        attribute = text
                    case let .word(text, _) where attribute == "label":
                        if let node = lastNode { nodes[node].label = text }
                        attribute = nil
                    default: break
                    }
                    index += 1
                } while depth > 0 && index < tokens.count
                lastNode = nil
                continue
            case .punctuation("{"):
                clusters.append(pendingSubgraph)
                pendingSubgraph = nil
                lastNode = nil
            case .punctuation("}"):
                _ = clusters.popLast()
                lastNode = nil
            case .punctuation("-"):
                // An edge: its attributes are the edge's, not its ends'.
                lastNode = nil
                afterEdge = true
            case let .word(text, _):
                let next = index + 1 < tokens.count ? tokens[index + 1] : nil
                defer { afterEdge = false }
                if ["strict", "graph", "digraph", "node", "edge"].contains(text.lowercased()) && !token.isQuoted {
                    lastNode = nil
                    // `digraph NAME {`: the name is not a node.
                    if text.lowercased() != "node", text.lowercased() != "edge", case .word? = next { index += 1 }
                } else if text.lowercased() == "subgraph" && !token.isQuoted {
                    lastNode = nil
                    if case let .word(name, _)? = next {
                        pendingSubgraph = name
                        index += 1
                    }
                } else if next == .punctuation("=") {
                    // A graph attribute: name = value; a cluster's label is kept for its anchor.
                    if text == "label", index + 2 < tokens.count, case let .word(value, _) = tokens[index + 2],
                       let cluster = clusters.last ?? nil {
                        clusterLabels[cluster] = value
                    }
                    index += 2
                    lastNode = nil
                } else if text.hasPrefix("cluster_") {
                    lastNode = nil
                } else {
                    lastNode = add(text)
                    if next == .punctuation(":") { index += 2 }  // a port
                    let following = index + 1 < tokens.count ? tokens[index + 1] : nil
                    if afterEdge || following == .punctuation("-") { lastNode = nil }
                }
            default:
                lastNode = nil
            }
            index += 1
        }
    }

    enum Token: Equatable {
        case word(String, quoted: Bool)
        case punctuation(Character)

        var isQuoted: Bool {
            if case let .word(_, quoted) = self { quoted } else { false }
        }
    }

    /// The DOT text as tokens, an edge operator (`->`, `--`) as the punctuation `-`.
    static func tokens(of text: String) -> [Token] {
        var tokens: [Token] = []
        let characters = Array(text.unicodeScalars)
        var index = 0
        while index < characters.count {
            let character = characters[index]
            switch character {
            case " ", "\t", "\n", "\r", ";", ",":
                index += 1
            case "#" where index == 0 || characters[index - 1] == "\n":
                while index < characters.count && characters[index] != "\n" { index += 1 }
            case "/" where index + 1 < characters.count && characters[index + 1] == "/":
                while index < characters.count && characters[index] != "\n" { index += 1 }
            case "/" where index + 1 < characters.count && characters[index + 1] == "*":
                index += 2
                while index + 1 < characters.count && !(characters[index] == "*" && characters[index + 1] == "/") { index += 1 }
                index += 2
            case "\"":
                var value = String.UnicodeScalarView()
                index += 1
                while index < characters.count && characters[index] != "\"" {
                    if characters[index] == "\\", index + 1 < characters.count {
                        if characters[index + 1] == "\"" {
                            value.append("\"")
                            index += 2
                            continue
                        }
                        if characters[index + 1] == "\n" {
                            index += 2
                            continue
                        }
                    }
                    value.append(characters[index])
                    index += 1
                }
                index += 1
                tokens.append(.word(String(value), quoted: true))
            case "<":
                // An HTML string: balanced angle brackets.
                var depth = 0
                var value = String.UnicodeScalarView()
                repeat {
                    if characters[index] == "<" { depth += 1 }
                    if characters[index] == ">" { depth -= 1 }
                    value.append(characters[index])
                    index += 1
                } while depth > 0 && index < characters.count
                tokens.append(.word(String(value.dropFirst().dropLast()), quoted: true))
            case "-" where index + 1 < characters.count && (characters[index + 1] == ">" || characters[index + 1] == "-"):
                tokens.append(.punctuation("-"))
                index += 2
            case "{", "}", "[", "]", "=", ":":
                tokens.append(.punctuation(Character(character)))
                index += 1
            default:
                var value = String.UnicodeScalarView()
                while index < characters.count, Self.isIdentifierCharacter(characters[index]) {
                    value.append(characters[index])
                    index += 1
                }
                if value.isEmpty {
                    index += 1  // a character DOT has no use for
                } else {
                    tokens.append(.word(String(value), quoted: false))
                }
            }
        }
        return tokens
    }

    private static func isIdentifierCharacter(_ character: Unicode.Scalar) -> Bool {
        switch character {
        case "a"..."z", "A"..."Z", "0"..."9", "_", ".": true
        case "-": true
        default: character.value >= 0x80
        }
    }
}
