@testable import ActomatonService
import ActomatonHost
import ActomatonTestSupport
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

    /// Regression (audit): Graphviz 2.43 writes a `fontname` (and a `URL`) into the SVG
    /// unescaped, so a plugin's DOT text slipped an XHTML `<meta http-equiv="refresh">` into the
    /// drawing the inspector shows (it took the tab elsewhere), or a form asking for a password.
    @Test func aDrawingWithMarkupOutsideSVGIsRefused() {
        func problem(_ svg: String) -> String? { GraphvizRenderer.markupOutsideTheDrawing(in: Array(svg.utf8)) }
        let root = #"<?xml version="1.0"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x.dtd"><!-- a -->"#
            + #"<svg width="62pt" xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">"#
        #expect(problem(root + #"<g class="node"><title>a&#45;&gt;b</title><text x="1" font-family="Helvetica">a</text></g></svg>"#) == nil)
        #expect(problem(root + #"<text font-family="H"/><h:meta xmlns:h="http://www.w3.org/1999/xhtml" http-equiv="refresh"/></svg>"#)
                == "an element <h:meta>")
        #expect(problem(root + #"<g xmlns="http://www.w3.org/1999/xhtml"><title>t</title></g></svg>"#) == "a namespace declared on <g>")
        #expect(problem(root + "<foreignObject/></svg>") == "an element <foreignObject>")
        #expect(problem(root + "<text a=b>x</text></svg>") == "markup that does not parse")
        #expect(problem(root + "<!-- unterminated") == "markup that does not parse")
        #expect(problem(#"<svg xmlns="http://www.w3.org/1999/xhtml"></svg>"#) == "a root <svg> outside the SVG namespace")
        #expect(problem(#"<g xmlns="http://www.w3.org/2000/svg"></g>"#) == "a root element <g>")
        #expect(problem("not markup") == "no <svg> element")
        // A comment or a CDATA section may hold anything.
        #expect(problem(root + "<![CDATA[<h:meta>]]><!-- <h:form> --></svg>") == nil)
        guard access("/usr/bin/dot", X_OK) == 0 else { return }
        let smuggled = #"digraph { node [fontname="Helvetica\"/><h:meta xmlns:h=\"http://www.w3.org/1999/xhtml\" "#
            + #"http-equiv=\"refresh\" content=\"0;url=https://example.com/\"/><x a=\""]; a -> b }"#
        #expect(GraphvizRenderer().svg(of: smuggled) == .failure(.failed("dot wrote an element <h:meta>, not a drawing")))
        let linked = #"digraph { a [URL="x\"/><h:form xmlns:h=\"http://www.w3.org/1999/xhtml\"/><y z=\""] }"#
        #expect(GraphvizRenderer().svg(of: linked) == .failure(.failed("dot wrote an element <h:form>, not a drawing")))
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

    /// A directory of its own for a test's files; removed by the caller.
    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("actomaton-diagram-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// How many lines the file at `url` has (0 when there is none).
    static func lines(of url: URL) -> Int {
        ((try? String(contentsOf: url, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    /// Regression (audit): a drawing that failed (no `dot`, a timeout, a failed fork) was kept
    /// like a drawing until the host restarted.
    @Test func aFailedDrawingIsNotKept() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let runs = directory.appendingPathComponent("runs")
        var route = DiagramRoute(catalog: PluginCatalog([counterType]))
        route.renderer = GraphvizRenderer(program: "sh", arguments: ["-c", "echo run >> '\(runs.path)'; exit 3"])
        let failed = await route.answer(for: "game", dot: "digraph { a -> b }")
        #expect(failed.contains(#""svg":null,"problem":"dot could not read the diagram (exit status 3)""#), "\(failed)")
        _ = await route.answer(for: "game", dot: "digraph { a -> b }")
        #expect(Self.lines(of: runs) == 2, "drawn again")
        // The cache is the route's: once drawing works, the drawing is kept.
        route.renderer = GraphvizRenderer(program: "sh", arguments: ["-c", #"cat > /dev/null; echo run >> '\#(runs.path)'; "#
            + #"printf '<svg xmlns="http://www.w3.org/2000/svg"><g/></svg>'"#])
        let drawn = await route.answer(for: "game", dot: "digraph { a -> b }")
        #expect(drawn.contains(#""svg":"<svg xmlns=\"http://www.w3.org/2000/svg\"><g/></svg>","problem":null"#), "\(drawn)")
        #expect(await route.answer(for: "game", dot: "digraph { a -> b }") == drawn)
        #expect(Self.lines(of: runs) == 3, "kept")
    }

    /// Regression (audit): requests for a diagram not drawn yet each started their own `dot`.
    @Test func requestsDuringADrawingWaitForIt() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (runs, go) = (directory.appendingPathComponent("runs"), directory.appendingPathComponent("go"))
        // The drawing lasts until the test lets it end: its time limit only a safety net (the
        // default 10 s ran out once beside the whole suite on 2 cores, before six requests waited).
        let route = DiagramRoute(catalog: PluginCatalog([counterType]), renderer: GraphvizRenderer(program: "sh", arguments: [
            "-c", #"cat > /dev/null; echo run >> '\#(runs.path)'; "#
                + #"while [ ! -e '\#(go.path)' ]; do sleep 0.01; done; printf '<svg xmlns="http://www.w3.org/2000/svg"><g/></svg>'"#,
        ], timeLimit: .seconds(600)))
        let dot = "digraph { a -> b }"
        let answers = await withTaskGroup(of: String.self) { group in
            for _ in 0..<6 { group.addTask { await route.answer(for: "game", dot: dot) } }
            #expect(await eventually(within: 300) { route.cache.waitingCount(for: "game", dot: dot) == 5 })
            FileManager.default.createFile(atPath: go.path, contents: nil)
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(answers.count == 6 && Set(answers).count == 1 && answers[0].contains("<g/>"), "\(answers)")
        #expect(Self.lines(of: runs) == 1, "one drawing for all")
    }
}
