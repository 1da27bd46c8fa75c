@testable import ActomatonService
import ActomatonHost
import Foundation
import HummingbirdTesting
import Glibc
import Testing

@Suite struct DiagramTests {
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
