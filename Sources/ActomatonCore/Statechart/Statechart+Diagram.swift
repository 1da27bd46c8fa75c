// State diagrams of a statechart: Mermaid `stateDiagram-v2` with composite states and `--`
// between parallel regions, and Graphviz DOT with a cluster per compound or parallel state.

extension Statechart {
    /// How a diagram labels one transition: its trigger, `[guarded]` when it has a condition,
    /// `(internal)` for an internal transition, and `/ raise` with the events it raises.
    public func diagramLabel(of edge: StatechartEdge<StateID, Event, Output>, stateName: (StateID) -> String, eventName: (Event) -> String) -> String {
        let transition = edge.transition
        var label: String
        if let custom = transition.label {
            label = custom
        } else {
            switch transition.trigger {
            case let .event(pattern): label = pattern.value.map(eventName) ?? "(predicate)"
            case let .done(state): label = "done.state.\(stateName(state))"
            case .always: label = "(always)"
            }
        }
        if transition.condition != nil { label += " [guarded]" }
        if transition.kind == .internal { label += " (internal)" }
        if !transition.raise.isEmpty {
            var raised: [String] = []
            for event in transition.raise { raised.append(eventName(event)) }
            label += " / raise " + raised.joined(separator: ", ")
        }
        return label
    }

    /// The chart as a Mermaid `stateDiagram-v2`: compound states as composite states, parallel
    /// regions separated by `--`, history states as `H` and `H*`, final states leading to `[*]`.
    /// A transition is drawn inside the innermost composite state that holds both its ends.
    public func mermaidStateDiagram(stateName: (StateID) -> String, eventName: (Event) -> String) -> String {
        var text = "stateDiagram-v2\n"
        // Only the chart's states are named (a raw value it skips may be no state of its own),
        // in document order; a name that makes an identifier already taken ("a b" after "a_b")
        // gets a suffix: a node per state.
        var ids = Array(repeating: "", count: nodes.count)
        for index in documentOrder.map({ Int($0) }) {
            guard let state = StateID(rawValue: index) else { continue }
            ids[index] = firstUntaken(mermaidIdentifier(stateName(state))) { ids.contains($0) }
        }
        let edgesByScope = edgesByInnermostScope(stateName: stateName, eventName: eventName)

        func write(level: [Int], scope: Int, indent: String) {
            if scope < 0 || nodes[scope].kind == .compound {
                for initial in defaultTargets(of: scope) { text += "\(indent)[*] --> \(ids[initial])\n" }
            }
            // A parallel state's history states are drawn in its first region: they are no region.
            var regionsWritten = 0
            for index in level {
                if scope >= 0, nodes[scope].kind == .parallel, !nodes[index].isHistory {
                    if regionsWritten > 0 { text += "\(indent)--\n" }
                    regionsWritten += 1
                }
                let name = StateID(rawValue: index).map(stateName) ?? ""
                switch nodes[index].kind {
                case .shallowHistory, .deepHistory:
                    text += "\(indent)state \"\(nodes[index].kind == .deepHistory ? "H*" : "H")\" as \(ids[index])\n"
                case .compound, .parallel:
                    if ids[index] != name { text += "\(indent)state \"\(mermaidLabel(name))\" as \(ids[index])\n" }
                    text += "\(indent)state \(ids[index]) {\n"
                    write(level: childrenInDocumentOrder(of: index), scope: index, indent: indent + "    ")
                    text += "\(indent)}\n"
                default:
                    if ids[index] != name { text += "\(indent)state \"\(mermaidLabel(name))\" as \(ids[index])\n" }
                    if nodes[index].kind == .final { text += "\(indent)\(ids[index]) --> [*]\n" }
                }
            }
            for (from, to, label) in edgesByScope[scope + 1] {
                text += "\(indent)\(ids[from]) --> \(ids[to]) : \(label)\n"
            }
        }
        write(level: childrenInDocumentOrder(of: -1), scope: -1, indent: "    ")
        return text
    }

    /// The chart as a Graphviz DOT digraph: each compound or parallel state a cluster (a
    /// parallel one dashed, its regions inside it), history states as `H` and `H*` circles,
    /// final states as double circles. Render it with `dot -Tsvg`.
    public func graphvizDOT(name: String = "Statechart", stateName: (StateID) -> String, eventName: (Event) -> String) -> String {
        var text = "digraph \(dotQuoted(name)) {\n    compound=true;\n    rankdir=LR;\n    node [shape=box, style=rounded];\n"
        // A composite state's edges attach to an invisible point inside its cluster.
        func node(_ index: Int) -> String { dotQuoted("\(index)") }
        func write(level: [Int], indent: String) {
            for index in level {
                let label = StateID(rawValue: index).map(stateName) ?? ""
                switch nodes[index].kind {
                case .compound, .parallel:
                    text += "\(indent)subgraph \(dotQuoted("cluster_\(index)")) {\n"
                    text += "\(indent)    label=\(dotQuoted(label));\n"
                    text += "\(indent)    style=\(nodes[index].kind == .parallel ? "\"rounded,dashed\"" : "rounded");\n"
                    text += "\(indent)    \(node(index)) [shape=point, style=invis, width=0, label=\"\"];\n"
                    write(level: childrenInDocumentOrder(of: index), indent: indent + "    ")
                    text += "\(indent)}\n"
                case .shallowHistory, .deepHistory:
                    text += "\(indent)\(node(index)) [shape=circle, label=\(nodes[index].kind == .deepHistory ? "\"H*\"" : "\"H\"")];\n"
                case .final:
                    text += "\(indent)\(node(index)) [shape=doublecircle, label=\(dotQuoted(label))];\n"
                default:
                    text += "\(indent)\(node(index)) [label=\(dotQuoted(label))];\n"
                }
            }
        }
        write(level: childrenInDocumentOrder(of: -1), indent: "    ")
        let rootTargets = defaultTargets(of: -1)
        if !rootTargets.isEmpty { text += "    \"[*]\" [shape=point, label=\"\"];\n" }
        for rootInitial in rootTargets {
            // clusterAttributes starts each attribute with ", ": the first one is the list's start.
            let attributes = clusterAttributes(from: nil, to: rootInitial)
            // By UTF-8 bytes, not characters: Embedded Swift links no grapheme-breaking tables.
            let list = attributes.isEmpty ? "" : " [\(String(decoding: attributes.utf8.dropFirst(2), as: UTF8.self))]"
            text += "    \"[*]\" -> \(node(rootInitial))\(list);\n"
        }
        for edge in transitions {
            let source = edge.source.rawValue
            let label = dotQuoted(diagramLabel(of: edge, stateName: stateName, eventName: eventName))
            let targets = transitionTable[edge.index].targets.isEmpty ? [source] : transitionTable[edge.index].targets.map { $0 }
            for target in targets {
                text += "    \(node(source)) -> \(node(target)) [label=\(label)\(clusterAttributes(from: source, to: target))];\n"
            }
        }
        return text + "}\n"
    }

    private func clusterAttributes(from source: Int?, to target: Int) -> String {
        var attributes = ""
        if let source, nodes[source].kind == .compound || nodes[source].kind == .parallel,
           !nodes[source].descendants.contains(target) && source != target {
            attributes += ", ltail=\(dotQuoted("cluster_\(source)"))"
        }
        if nodes[target].kind == .compound || nodes[target].kind == .parallel,
           source.map({ !nodes[target].descendants.contains($0) && $0 != target }) ?? true {
            attributes += ", lhead=\(dotQuoted("cluster_\(target)"))"
        }
        return attributes
    }

    /// The states a scope (-1: the chart) enters by default, by raw value.
    private func defaultTargets(of scope: Int) -> [Int] {
        if scope < 0 { return inDocumentOrder(content.rootInitials) }
        let initial = nodes[scope].initial
        if initial >= 0 { return [initial] }
        return content.initialTargetSets.isEmpty ? [] : inDocumentOrder(content.initialTargetSets[scope])
    }

    private func childrenInDocumentOrder(of parent: Int) -> [Int] {
        documentOrder.map { Int($0) }.filter { nodes[$0].parent == parent }
    }

    /// Each transition's edges, grouped by the innermost composite state holding both ends
    /// (index 0 is the top of the chart, index k + 1 the state with raw value k).
    private func edgesByInnermostScope(stateName: (StateID) -> String, eventName: (Event) -> String) -> [[(Int, Int, String)]] {
        var scopes = Array(repeating: [(Int, Int, String)](), count: nodes.count + 1)
        for edge in transitions {
            let source = edge.source.rawValue
            let label = diagramLabel(of: edge, stateName: stateName, eventName: eventName)
            let targets = transitionTable[edge.index].targets.isEmpty ? [source] : transitionTable[edge.index].targets.map { $0 }
            for target in targets {
                var scope = nodes[source].parent
                // Not inside a parallel state's block, where it would join its last region.
                while scope >= 0 && (!nodes[scope].descendants.contains(target) || nodes[scope].kind == .parallel) {
                    scope = nodes[scope].parent
                }
                scopes[scope + 1].append((source, target, label))
            }
        }
        return scopes
    }
}

extension Statechart where StateID: CustomStringConvertible, Event: CustomStringConvertible {
    /// The chart as a Mermaid `stateDiagram-v2`, labelled by `description`.
    public func mermaidStateDiagram() -> String {
        mermaidStateDiagram(stateName: { $0.description }, eventName: { $0.description })
    }

    /// The chart as a Graphviz DOT digraph, labelled by `description`.
    public func graphvizDOT(name: String = "Statechart") -> String {
        graphvizDOT(name: name, stateName: { $0.description }, eventName: { $0.description })
    }
}

extension Statechart {
    /// The ID of `state`'s node in ``graphvizDOT(name:stateName:eventName:)``: its raw value,
    /// such as `3` (the DOT text quotes it, `"3"`). A compound or parallel state's node is the
    /// invisible point inside its cluster, `cluster_3`; its label is the state's name.
    public static func diagramNodeID(of state: StateID) -> String {
        "\(state.rawValue)"
    }

    /// The IDs of the diagram nodes (``diagramNodeID(of:)``) of every state active in `state`
    /// — compound and parallel ones included — in the order of their raw values: what a
    /// plugin names as its active nodes, to be lit in ``graphvizDOT(name:stateName:eventName:)``.
    public func activeDiagramNodes(in state: StatechartState<StateID>) -> [String] {
        state.activeStates.map(Self.diagramNodeID(of:))
    }
}
