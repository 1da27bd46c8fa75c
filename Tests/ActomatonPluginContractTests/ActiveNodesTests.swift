import ActomatonPluginABI
import ActomatonPluginContract
import Testing

/// The active nodes' format and limits (ABI version 2), and what `inspect` says of a diagram.
@Suite("Active nodes and diagrams")
struct ActiveNodesTests {
    private static func parse(_ text: String) -> Result<[String], ActiveNodes.Problem> {
        Result { () throws(ActiveNodes.Problem) in try ActiveNodes.parse(Array(text.utf8)) }
    }

    @Test func theLimitsAreTheHeaders() {
        #expect(ActiveNodes.maxCount == Int(ACTOMATON_MAX_ACTIVE_NODES))
        #expect(ActiveNodes.maxNameBytes == Int(ACTOMATON_MAX_NODE_NAME_LENGTH))
        #expect(ActiveNodes.maxBytes == Int(ACTOMATON_MAX_ACTIVE_SIZE))
        #expect(ActiveNodes.maxBytes == ActiveNodes.maxCount * (ActiveNodes.maxNameBytes + 1))
        #expect(ManifestLimits.maxDiagramBytes == 65536)
    }

    @Test func namesAreSeparatedByNewlines() {
        #expect(Self.parse("") == .success([]))
        #expect(Self.parse("\n") == .failure(.init("active node 1 is empty")))
        #expect(Self.parse("X to move") == .success(["X to move"]))
        #expect(Self.parse("a\nb c\né") == .success(["a", "b c", "é"]))
        #expect(Self.parse("a\nb\n") == .success(["a", "b"]))
        #expect(ActiveNodes.encode(["a", "b c"]) == Array("a\nb c".utf8))
    }

    @Test func eachLimitAtItAndOnePast() {
        let names = (0..<64).map { "n\($0)" }
        #expect(Self.parse(names.joined(separator: "\n")) == .success(names))
        #expect(Self.parse((names + ["n64"]).joined(separator: "\n"))
            == .failure(.init("the plugin named 65 active nodes, more than the limit of 64")))
        let longest = String(repeating: "é", count: 128)
        #expect(Self.parse(longest) == .success([longest]))
        #expect(Self.parse(longest + "x") == .failure(.init("active node 1 is 257 bytes, more than the limit of 256")))
        let largest = (0..<64).map { _ in String(repeating: "x", count: 256) + "\n" }.joined()
        #expect(largest.utf8.count == ActiveNodes.maxBytes)
        #expect((try? Self.parse(largest).get())?.count == 64)
        #expect(Self.parse(largest + "x") == .failure(.init("the active nodes are 16449 bytes, more than the limit of 16448")))
    }

    @Test func badNamesSayWhichAndWhy() {
        #expect(Self.parse("a\n\nb") == .failure(.init("active node 2 is empty")))
        #expect(Self.parse("\na") == .failure(.init("active node 1 is empty")))
        #expect(Self.parse("a\u{7}") == .failure(.init("active node 1 holds the control character U+0007")))
        #expect(Self.parse("a\r\nb") == .failure(.init("active node 1 holds the control character U+000D")))
        #expect(Self.parse("\u{85}") == .failure(.init("active node 1 holds the control character U+0085")))
        #expect(Result { () throws(ActiveNodes.Problem) in try ActiveNodes.parse([0x61, 0x0A, 0xC3]) }
            == .failure(.init("active node 2 is not valid UTF-8")))
    }

    @Test func nodesOfADiagram() {
        let dot = """
            // A comment "not" -> "a node"
            digraph "g" {
                rankdir=LR; node [shape=box, label="x"];
                "[*]" [shape=point, label=""];
                "[*]" -> a -> "b \\" c" [label="go"];
                subgraph cluster_1 { label="s"; d:port:n; e }
                # a line comment
                /* a block -> comment */
                a -> e; edge [color=red]; graph [rankdir=TB]
                <html> -- f
            }
            """
        #expect(DiagramText.nodeIDs(in: dot) == ["[*]", "a", "b \" c", "d", "e", "<html>", "f"])
        #expect(DiagramText.nodeCount(of: dot) == 7)
        #expect(DiagramText.nodeCount(of: "not DOT at all") == 0)
        #expect(DiagramText.grouped(0) == "0")
        #expect(DiagramText.grouped(999) == "999")
        #expect(DiagramText.grouped(1234) == "1,234")
        #expect(DiagramText.grouped(65536) == "65,536")
        #expect(DiagramText.grouped(1_234_567) == "1,234,567")
    }

    @Test func theInspectLines() {
        let manifest = PluginManifest(abiVersion: 2, name: "p", version: "1", summary: nil, actions: [.init(name: "a", parameters: [])],
                                      diagram: "digraph { a -> b }", namesActiveNodes: true)
        #expect(manifest.lines.suffix(2) == ["diagram: 2 nodes (DOT, 18 bytes)", "active nodes: named by the plugin after each transition"])
        let without = PluginManifest(abiVersion: 1, name: "p", version: "1", summary: nil, actions: [.init(name: "a", parameters: [])])
        #expect(without.lines == ["plugin p 1 (ABI 1)", "actions:", "  a()"])
    }
}
