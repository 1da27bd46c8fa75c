import ActomatonHost
import ActomatonPluginContract
import HostCommandLine
import Hummingbird
import Synchronization

/// `GET /v1/plugins/{plugin}/diagram`: a plugin's state diagram, for the inspector: the DOT
/// text, its nodes with their labels, and an SVG drawing when Graphviz is installed on the
/// host (`null` with the reason otherwise). Rendered once per plugin file, on a thread of its
/// own, and kept.
struct DiagramRoute: Sendable {
    let catalog: PluginCatalog
    let cache = DiagramCache()
    var renderer = GraphvizRenderer()

    func add(to router: Router<ServiceRequestContext>) {
        router.get("/v1/plugins/:plugin/diagram") { _, context in
            let name = try PathParameter.decoded(context.parameters.get("plugin") ?? "")
            let type = try catalog.type(named: name)
            guard let dot = type.plugin.manifest.diagram else {
                throw ServiceError.notFound("plugin \(name) carries no diagram")
            }
            return Response.json(await answer(for: name, dot: dot))
        }
    }

    /// The JSON answer for the plugin called `name` whose diagram is `dot`.
    func answer(for name: String, dot: String) async -> String {
        if let kept = cache.answer(for: name, dot: dot) { return kept }
        let renderer = renderer
        let drawn = await onThreadOfItsOwn { () throws(Never) in renderer.svg(of: dot) }
        let nodes = DiagramText.nodes(in: dot)
        let svg: String?
        let problem: String?
        switch drawn {
        case let .success(text): (svg, problem) = (text, nil)
        case let .failure(failure): (svg, problem) = (nil, failure.description)
        }
        let text = JSONText.object([
            ("plugin", ServiceJSON.string(name)),
            ("dot", ServiceJSON.string(dot)),
            ("svg", svg.map(ServiceJSON.string) ?? "null"),
            ("problem", problem.map(ServiceJSON.string) ?? "null"),
            ("nodes", JSONText.array(nodes.map { node in
                JSONText.object([("name", ServiceJSON.string(node.name)), ("label", ServiceJSON.string(node.label))])
            })),
        ])
        cache.keep(text, for: name, dot: dot)
        return text
    }
}

/// The answers of ``DiagramRoute``, one per plugin, kept while its diagram stays the same (a
/// reloaded plugin with another diagram is drawn again).
final class DiagramCache: Sendable {
    private let answers = Mutex<[String: (dot: String, answer: String)]>([:])

    func answer(for name: String, dot: String) -> String? {
        answers.withLock { answers in
            guard let kept = answers[name], kept.dot == dot else { return nil }
            return kept.answer
        }
    }

    func keep(_ answer: String, for name: String, dot: String) {
        answers.withLock { $0[name] = (dot, answer) }
    }
}
