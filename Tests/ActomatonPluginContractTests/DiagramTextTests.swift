import ActomatonPluginABI
import ActomatonPluginContract
import Testing

/// The nodes and labels the host reads from a diagram's DOT text (the inspector's list).
@Suite struct DiagramTextTests {
    @Test func theNodesOfADiagramAreReadWithTheirLabels() {
        let dot = #"""
        digraph "TicTacToe" {
            rankdir=LR;   // a graph attribute, not a node
            node [shape=box, style=rounded];
            /* a comment with "quoted" -> text */
            "[*]" [shape=point, label=""];
            "[*]" -> "X to move";
            "X to move" -> "O to move" [label="place"];
            "O to move":e -> "X won" [label="place (three in a row)"];
            subgraph "cluster_3" { label="Over"; "3" [label="draw"]; }
            html [label=<<b>bold</b>>];
            "say \"hi\"";
        }
        """#
        let nodes = DiagramText.nodes(in: dot)
        #expect(nodes.map(\.name) == ["[*]", "X to move", "O to move", "X won", "3", "html", #"say "hi""#])
        #expect(nodes.first { $0.name == "3" }?.label == "draw")
        let chart = DiagramText.nodes(in: #"digraph { subgraph "cluster_7" { label="airborne"; "7" [shape=point, label=""]; "8" [label="rising"]; } }"#)
        #expect(chart.map(\.label) == ["airborne", "rising"], "a cluster's anchor takes the cluster's label")
        #expect(nodes.first { $0.name == "html" }?.label == "<<b>bold</b>>", "an HTML label as DOT writes it")
        #expect(nodes.first { $0.name == "X won" }?.label == "X won", "a node without a label is its name")
    }

    /// The manifest keeps a diagram to `ACTOMATON_MAX_DIAGRAM_SIZE` bytes, which bounds its
    /// nodes: one that size is read in full; text that is not DOT never traps.
    @Test func aDiagramAtTheContractsSizeLimitIsReadInFull() {
        let lines = (0..<8000).map { "n\($0);\n" }.joined()
        let dot = "digraph g {\n" + lines + "}\n"
        #expect(dot.utf8.count <= Int(ACTOMATON_MAX_DIAGRAM_SIZE))
        #expect(DiagramText.nodes(in: dot).count == 8000)
        #expect(DiagramText.nodes(in: "").isEmpty)
        #expect(DiagramText.nodes(in: "digraph { \"unterminated").map(\.name) == ["unterminated"])
        #expect(DiagramText.nodes(in: "<<< [ = : -").isEmpty)
    }
}
