@testable import ActomatonService
import Glibc
import Testing

@Suite struct DiagramTests {
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
        let nodes = DiagramNodes(dot: dot).nodes
        #expect(nodes.map(\.name) == ["[*]", "X to move", "O to move", "X won", "3", "html", #"say "hi""#])
        #expect(nodes.first { $0.name == "3" }?.label == "draw")
        let chart = DiagramNodes(dot: #"digraph { subgraph "cluster_7" { label="airborne"; "7" [shape=point, label=""]; "8" [label="rising"]; } }"#)
        #expect(chart.nodes.map(\.label) == ["airborne", "rising"], "a cluster's anchor takes the cluster's label")
        #expect(nodes.first { $0.name == "html" }?.label == "<b>bold</b>")
        #expect(nodes.first { $0.name == "X won" }?.label == "X won", "a node without a label is its name")
    }

    @Test func aDiagramIsReadUpToItsLimitOfNodes() {
        func chain(_ count: Int) -> String {
            "digraph g {\n" + (0..<count).map { "  n\($0);\n" }.joined() + "}\n"
        }
        #expect(DiagramNodes(dot: chain(DiagramNodes.maxNodes)).nodes.count == DiagramNodes.maxNodes)
        #expect(DiagramNodes(dot: chain(DiagramNodes.maxNodes + 1)).nodes.count == DiagramNodes.maxNodes)
        #expect(DiagramNodes(dot: "").nodes.isEmpty)
        #expect(DiagramNodes(dot: "digraph { \"unterminated").nodes.map(\.name) == ["unterminated"], "never a trap")
        _ = DiagramNodes(dot: "<<< [ = : -")  // never a trap
    }

    @Test func graphvizRendersSVGOrSaysWhyNot() {
        let missing = GraphvizRenderer(program: "actomaton-no-such-program").svg(of: "digraph { a -> b }")
        #expect(missing == .failure(.notInstalled))
        #expect(GraphvizRenderer.Failure.notInstalled.description == "Graphviz (dot) is not installed")
        let failing = GraphvizRenderer(program: "false").svg(of: "digraph { a -> b }")
        #expect(failing == .failure(.failed("dot could not read the diagram (exit status 1)")))
        // `yes` writes forever: stopped at the limit, and killed; `sleep` past the time limit too.
        let endless = GraphvizRenderer(program: "yes", arguments: ["y"]).svg(of: "")
        #expect(endless == .failure(.failed("dot wrote more than \(GraphvizRenderer.maxOutputSize) bytes")))
        let slow = GraphvizRenderer(program: "sleep", arguments: ["60"], timeLimit: .milliseconds(200)).svg(of: "")
        #expect(slow == .failure(.failed("dot took more than 0.2 seconds")))
        guard access("/usr/bin/dot", X_OK) == 0 else { return }
        let drawn = GraphvizRenderer().svg(of: #"digraph { "X to move" -> "O to move" }"#)
        guard case let .success(svg) = drawn else {
            Issue.record("dot failed: \(drawn)")
            return
        }
        #expect(svg.contains("<svg") && svg.contains("<title>X to move</title>"))
        #expect(GraphvizRenderer().svg(of: "digraph {") == .failure(.failed("dot could not read the diagram (exit status 1)")))
    }
}
