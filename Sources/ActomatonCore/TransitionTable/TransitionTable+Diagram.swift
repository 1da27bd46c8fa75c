// State diagrams: a transition table as Graphviz DOT or Mermaid `stateDiagram-v2` text.
//
// The edges are found by asking the table itself, for every state and every input, which row
// fires; so predicate rows and row priority are drawn exactly as they behave. States and inputs
// are identified by their names: equal names are drawn as one.

/// One edge of a state diagram: the states it joins and the inputs that take it, in order.
public struct TransitionDiagramEdge: Equatable, Sendable {
    /// The name of the state the edge leaves.
    public var from: String
    /// The name of the state the edge enters.
    public var to: String
    /// The names of the inputs that take this edge.
    public var inputs: [String]

    /// Creates an edge.
    public init(from: String, to: String, inputs: [String]) {
        self.from = from
        self.to = to
        self.inputs = inputs
    }
}

extension TransitionTable {
    /// The diagram's edges, one per pair of states, in the order of `states` and `inputs`.
    ///
    /// - Parameters:
    ///   - states: States to draw besides those named in rows (needed for predicate rows).
    ///   - inputs: Inputs to try besides those named in rows (needed for predicate inputs).
    ///   - stateName: The label of a state; it identifies the state in the diagram.
    ///   - inputName: The label of an input.
    public func diagramEdges(
        states: [State] = [],
        inputs: [Input] = [],
        stateName: (State) -> String,
        inputName: (Input) -> String
    ) -> [TransitionDiagramEdge] {
        let allStates = unique(states + rows.compactMap { $0.transition.from.value } + rows.map { $0.transition.to }, name: stateName)
        let allInputs = unique(inputs + rows.compactMap { $0.input.value }, name: inputName)
        var edges: [TransitionDiagramEdge] = []
        for state in allStates {
            for input in allInputs {
                guard let row = row(for: input, in: state) else { continue }
                let from = stateName(state), to = stateName(row.transition.to), label = inputName(input)
                if let index = edges.firstIndex(where: { $0.from == from && $0.to == to }) {
                    edges[index].inputs.append(label)
                } else {
                    edges.append(TransitionDiagramEdge(from: from, to: to, inputs: [label]))
                }
            }
        }
        return edges
    }

    /// The table as a Graphviz DOT digraph; render it with `dot -Tsvg`.
    ///
    /// Parameters are those of ``diagramEdges(states:inputs:stateName:inputName:)``, plus the
    /// graph's `name` and the `initial` state, drawn with an arrow from a dot (the node `[*]`,
    /// or `[*]_2`, … if a state is named so).
    public func graphvizDOT(
        name: String = "TransitionTable",
        initial: State? = nil,
        states: [State] = [],
        inputs: [Input] = [],
        stateName: (State) -> String,
        inputName: (Input) -> String
    ) -> String {
        let edges = diagramEdges(states: states, inputs: inputs, stateName: stateName, inputName: inputName)
        var text = "digraph \(dotQuoted(name)) {\n    rankdir=LR;\n    node [shape=box, style=rounded];\n"
        if let initial {
            // The start dot's node is `[*]`, or `[*]_2`, … when a state already has that name.
            let initialName = stateName(initial)
            let start = firstUntaken("[*]") { name in name == initialName || edges.contains(where: { $0.from == name || $0.to == name }) }
            text += "    \(dotQuoted(start)) [shape=point, label=\"\"];\n    \(dotQuoted(start)) -> \(dotQuoted(initialName));\n"
        }
        // Graphviz takes an ID that starts with `%` for an anonymous node and labels it `%3`, …:
        // such a state is declared with its name as label.
        var labelled: [String] = []
        for name in (initial.map { [stateName($0)] } ?? []) + edges.flatMap({ [$0.from, $0.to] })
        where name.utf8.first == UInt8(ascii: "%") && !labelled.contains(name) {
            labelled.append(name)
            text += "    \(dotQuoted(name)) [label=\(dotQuoted(name))];\n"
        }
        for edge in edges {
            text += "    \(dotQuoted(edge.from)) -> \(dotQuoted(edge.to)) [label=\(dotQuoted(edge.inputs.joined(separator: ", ")))];\n"
        }
        return text + "}\n"
    }

    /// The table as a Mermaid `stateDiagram-v2`; paste it into any Mermaid renderer.
    ///
    /// Parameters are those of ``diagramEdges(states:inputs:stateName:inputName:)``, plus the
    /// `initial` state, drawn from `[*]`. A state whose name is not an identifier Mermaid accepts
    /// (spaces, punctuation, a keyword such as `state` or `note`) is declared with its name as
    /// the label. A state with an empty name is drawn as `_` (Mermaid
    /// has no empty label). In a transition's label, the characters Mermaid gives
    /// a meaning (`:`, `;`, `#`) are written as entity codes and a line break as `<br>`.
    public func mermaidStateDiagram(
        initial: State? = nil,
        states: [State] = [],
        inputs: [Input] = [],
        stateName: (State) -> String,
        inputName: (Input) -> String
    ) -> String {
        let edges = diagramEdges(states: states, inputs: inputs, stateName: stateName, inputName: inputName)
        var text = "stateDiagram-v2\n"
        // A node per name: one that makes an identifier already taken ("a b" after "a_b")
        // gets a suffix, or the two states were drawn as one.
        var assigned: [(name: String, id: String)] = []
        func id(_ name: String) -> String {
            if let known = assigned.first(where: { $0.name == name }) { return known.id }
            let id = firstUntaken(mermaidIdentifier(name)) { id in assigned.contains(where: { $0.id == id }) }
            assigned.append((name, id))
            // Mermaid refuses an empty description; the node then shows its identifier.
            if id != name && !name.isEmpty { text += "    state \"\(mermaidLabel(name))\" as \(id)\n" }
            return id
        }
        if let initial {
            let start = id(stateName(initial))
            text += "    [*] --> \(start)\n"
        }
        for edge in edges {
            let from = id(edge.from), to = id(edge.to)
            text += "    \(from) --> \(to) : \(mermaidTransitionLabel(edge.inputs.joined(separator: ", ")))\n"
        }
        return text
    }
}

extension TransitionTable {
    /// The ID of `state`'s node in ``graphvizDOT(name:initial:states:inputs:stateName:inputName:)``:
    /// its name (the DOT text quotes it). What a plugin names as its one active node, to be lit
    /// in the diagram.
    public static func diagramNodeID(of state: State, stateName: (State) -> String) -> String {
        stateName(state)
    }
}

extension TransitionTable where State: CustomStringConvertible, Input: CustomStringConvertible {
    /// The ID of `state`'s node in ``graphvizDOT(name:initial:states:inputs:)``: its
    /// `description`.
    public static func diagramNodeID(of state: State) -> String {
        state.description
    }

    /// The table as a Graphviz DOT digraph, labelled by `description`.
    public func graphvizDOT(
        name: String = "TransitionTable", initial: State? = nil, states: [State] = [], inputs: [Input] = []
    ) -> String {
        graphvizDOT(name: name, initial: initial, states: states, inputs: inputs,
                    stateName: { $0.description }, inputName: { $0.description })
    }

    /// The table as a Mermaid `stateDiagram-v2`, labelled by `description`.
    public func mermaidStateDiagram(initial: State? = nil, states: [State] = [], inputs: [Input] = []) -> String {
        mermaidStateDiagram(initial: initial, states: states, inputs: inputs,
                            stateName: { $0.description }, inputName: { $0.description })
    }
}

private func unique<Value>(_ values: [Value], name: (Value) -> String) -> [Value] {
    var names: [String] = []
    var result: [Value] = []
    for value in values {
        let key = name(value)
        if !names.contains(key) {
            names.append(key)
            result.append(value)
        }
    }
    return result
}

func dotQuoted(_ text: String) -> String {
    var quoted = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": quoted += "\\\""
        case "\\": quoted += "\\\\"
        case "\n": quoted += "\\n"
        default: quoted.unicodeScalars.append(scalar)
        }
    }
    return quoted + "\""
}

/// `base`, or the first of `base_2`, `base_3`, … that is not taken: a node per name, where
/// two names would make one identifier.
func firstUntaken(_ base: String, isTaken: (String) -> Bool) -> String {
    var candidate = base
    var suffix = 2
    while isTaken(candidate) {
        candidate = "\(base)_\(suffix)"
        suffix += 1
    }
    return candidate
}

func mermaidIdentifier(_ name: String) -> String {
    var id = ""
    for scalar in name.unicodeScalars {
        let isLetter = (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z")
        let isDigit = scalar >= "0" && scalar <= "9"
        id.unicodeScalars.append(isLetter || isDigit || scalar == "_" ? scalar : "_")
    }
    if let first = id.unicodeScalars.first, first >= "0" && first <= "9" { id = "_" + id }
    // Mermaid reads these words (in any case, `default` even as a prefix) as keywords.
    let lowered = String(decoding: id.utf8.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self)
    if lowered.utf8.starts(with: "default".utf8)
        || ["state", "note", "class", "classdef", "scale", "statediagram"].contains(lowered) {
        id = "_" + id
    }
    return id.isEmpty ? "_" : id
}

/// A transition's label: Mermaid ends it at `:`, `;` or a line break, and reads `#…;` as an
/// entity code, so those are written as entity codes (a line break as `<br>`).
func mermaidTransitionLabel(_ text: String) -> String {
    var label = ""
    var afterCarriageReturn = false
    for scalar in text.unicodeScalars {
        switch scalar {
        case ":": label += "#58;"
        case ";": label += "#59;"
        case "#": label += "#35;"
        case "\n" where afterCarriageReturn: break
        case "\n", "\r": label += "<br>"
        default: label.unicodeScalars.append(scalar)
        }
        afterCarriageReturn = scalar == "\r"
    }
    return label
}

/// Mermaid labels cannot hold a raw `"`, and read `#…;` as an entity code: both are written as
/// entity codes.
func mermaidLabel(_ name: String) -> String {
    var label = ""
    for scalar in name.unicodeScalars {
        switch scalar {
        case "\"": label += "#quot;"
        case "#": label += "#35;"
        default: label.unicodeScalars.append(scalar)
        }
    }
    return label
}
