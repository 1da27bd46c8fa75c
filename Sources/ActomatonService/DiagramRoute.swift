import ActomatonHost
import ActomatonPluginContract
import HostCommandLine
import Hummingbird
import Synchronization

/// `GET /v1/plugins/{plugin}/diagram`: a plugin's state diagram, for the inspector: the DOT
/// text, its nodes with their labels, and an SVG drawing when Graphviz is installed on the
/// host (`null` with the reason otherwise). Rendered on a thread of its own, once per plugin
/// file: requests that come while it is drawn wait for that drawing, and a drawing that failed
/// is not kept (the next request tries again).
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
        let renderer = renderer
        return await cache.answer(for: name, dot: dot) {
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
            return (text, keep: svg != nil)
        }
    }
}

/// The answers of ``DiagramRoute``, one per plugin, kept while its diagram stays the same (a
/// reloaded plugin with another diagram is drawn again). One drawing at a time per diagram:
/// the requests that come meanwhile wait for its answer.
final class DiagramCache: Sendable {
    private enum Entry {
        /// Being drawn; these requests wait for the answer.
        case drawing(waiting: [CheckedContinuation<String?, Never>])
        /// Drawn, and kept.
        case drawn(String)
    }

    private struct Diagram: Hashable {
        let plugin: String
        let dot: String
    }

    private let entries = Mutex<[Diagram: Entry]>([:])

    /// The kept answer for `dot`, the one being drawn, or else the one `draw` makes, kept when
    /// it says so.
    func answer(for name: String, dot: String, draw: @Sendable () async -> (answer: String, keep: Bool)) async -> String {
        let diagram = Diagram(plugin: name, dot: dot)
        // nil: no answer yet, and none being drawn: this request draws it.
        let ready = await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            entries.withLock { entries in
                switch entries[diagram] {
                case let .drawn(answer)?:
                    continuation.resume(returning: answer)
                case let .drawing(waiting)?:
                    entries[diagram] = .drawing(waiting: waiting + [continuation])
                case nil:
                    entries[diagram] = .drawing(waiting: [])
                    continuation.resume(returning: nil)
                }
            }
        }
        if let ready { return ready }
        let (answer, keep) = await draw()
        let waiting = entries.withLock { entries -> [CheckedContinuation<String?, Never>] in
            guard case let .drawing(waiting)? = entries[diagram] else { return [] }
            if keep {
                // The plugin's earlier diagrams are not asked for again.
                for other in entries.keys where other.plugin == name && other != diagram {
                    if case .drawn? = entries[other] { entries[other] = nil }
                }
                entries[diagram] = .drawn(answer)
            } else {
                entries[diagram] = nil
            }
            return waiting
        }
        for continuation in waiting { continuation.resume(returning: answer) }
        return answer
    }

    /// How many requests wait for `dot`'s drawing (for tests).
    func waitingCount(for name: String, dot: String) -> Int {
        entries.withLock { entries in
            guard case let .drawing(waiting)? = entries[Diagram(plugin: name, dot: dot)] else { return 0 }
            return waiting.count
        }
    }
}
