@testable import ActomatonService
import ActomatonHost
import Foundation
import HummingbirdTesting
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

@Suite struct DiagramRouteTests {
    static let ticTacToeType: PluginType = try! PluginType.load(path: plugin("TicTacToePlugin"), isolation: .none, options: .init())

    func makeGameServer() -> ActomatonServer {
        ActomatonServer(catalog: PluginCatalog([counterType, Self.ticTacToeType]), tokens: nil, listen: try! ListenAddress("127.0.0.1:0"))
    }

    @Test func transitionsAndTheStatusNameTheActiveNodes() async throws {
        let server = makeGameServer()
        try await server.makeApplication().test(.router) { client in
            let plugins = try await client.get("/v1/plugins").text
            #expect(plugins.contains(#""name":"tictactoe","version":"1.0.0","abi":2"#))
            #expect(plugins.contains(#""sandbox":"none","diagram":true"#) && plugins.contains(#""diagram":false"#))
            let moved = try await client.post("g", #"{"action": "place", "args": [1, 1]}"#, plugin: "tictactoe")
            #expect(moved.text.hasSuffix(#""started":[],"cancelled":[],"active":["O to move"]}"#), "\(moved.text)")
            let status = try await client.get("/v1/machines/tictactoe/g").text
            #expect(status.hasSuffix(#""effects":0,"active":["O to move"]}"#), "\(status)")
            // A plugin that names none says nothing about them.
            let counted = try await client.post("c", #"{"action": "increment"}"#)
            #expect(!counted.text.contains("active"))
        }
    }

    @Test func theDiagramIsDrawnOrListed() async throws {
        let server = makeGameServer()
        try await server.makeApplication().test(.router) { client in
            let diagram = try await client.get("/v1/plugins/tictactoe/diagram")
            #expect(diagram.status == .ok)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(diagram.text.utf8)) as? [String: Any])
            let nodes = try #require(object["nodes"] as? [[String: String]]).map { $0["name"] ?? "" }
            #expect(Set(["X to move", "O to move", "X won", "O won", "draw"]).isSubset(of: Set(nodes)), "\(nodes)")
            #expect((object["dot"] as? String)?.hasPrefix("digraph") == true)
            if access("/usr/bin/dot", X_OK) == 0 {
                #expect((object["svg"] as? String)?.contains("<title>X to move</title>") == true)
                #expect(object["problem"] is NSNull)
            } else {
                #expect(object["svg"] is NSNull)
                #expect(object["problem"] as? String == "Graphviz (dot) is not installed")
            }
            #expect(try await client.get("/v1/plugins/tictactoe/diagram").text == diagram.text, "kept, not drawn again")
            let none = try await client.get("/v1/plugins/counter/diagram")
            #expect(none.status == .notFound)
            #expect(none.text == #"{"error":"plugin counter carries no diagram"}"#)
            #expect(try await client.get("/v1/plugins/chess/diagram").status == .notFound)
        }
    }
}
