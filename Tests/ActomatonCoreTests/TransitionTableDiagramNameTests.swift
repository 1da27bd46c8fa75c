import ActomatonCore
import Testing

/// Developer-supplied names that the diagram syntaxes give a meaning of their own: each diagram
/// must stay valid and keep every state and transition.
@Suite("TransitionTable diagrams: hostile names")
struct TransitionTableDiagramNameTests {
    private func table(_ input: String, from: String = "a", to: String = "b") -> TransitionTable<String, String, Void> {
        TransitionTable([input | from => to])
    }

    /// Regression: Mermaid ends a transition's label at `:`, `;` or a line break; the rest of
    /// the name was read as more statements (a new state, or a syntax error).
    @Test(arguments: [
        ("a:b", "a#58;b"),
        ("a;b", "a#59;b"),
        ("a\nb", "a<br>b"),
        ("a\r\nb", "a<br>b"),
        ("#quot;", "#35;quot#59;"),
        ("Ω → ∞", "Ω → ∞"),
    ])
    func mermaidTransitionLabelsStayOnTheirLine(input: String, label: String) {
        let mermaid = table(input).mermaidStateDiagram(stateName: { $0 }, inputName: { $0 })
        #expect(mermaid == "stateDiagram-v2\n    a --> b : \(label)\n")
    }

    /// Regression: an empty name was declared as `state "" as _`, which Mermaid rejects: its
    /// description must not be empty.
    @Test func mermaidEmptyStateNameIsNotDeclaredWithAnEmptyDescription() {
        let mermaid = table("go", from: "", to: "b").mermaidStateDiagram(stateName: { $0 }, inputName: { $0 })
        #expect(!mermaid.contains("\"\""))
        #expect(mermaid.contains(" --> b : go\n"))
    }

    /// Regression: a state named after a Mermaid keyword (`state`, `note`, `class`, `classDef`,
    /// `scale`, `stateDiagram`, or any name starting with `default`, in any case) was written as
    /// a bare identifier, which Mermaid reads as that keyword.
    @Test(arguments: ["state", "note", "class", "classDef", "scale", "stateDiagram", "default", "Default", "defaultMode", "STATE"])
    func mermaidKeywordsAreNotIdentifiers(name: String) {
        let mermaid = table("go", from: name, to: "b").mermaidStateDiagram(stateName: { $0 }, inputName: { $0 })
        let lines = mermaid.split(separator: "\n").map(String.init)
        let edge = lines.first { $0.contains(" --> b : go") }
        let id = edge.map { String($0.dropFirst(4).prefix { $0 != " " }) } ?? ""
        let lowered = id.lowercased()
        #expect(!["state", "note", "class", "classdef", "scale", "statediagram"].contains(lowered))
        #expect(!lowered.hasPrefix("default"))
        #expect(lines.contains("    state \"\(name)\" as \(id)"))
    }

    /// Regression: the initial pseudo-state's node was `"[*]"`, the same node as a state named
    /// `[*]`, which then was drawn as the start dot with the start arrow looping on itself.
    @Test func graphvizStateNamedLikeTheStartNodeStaysApart() {
        let dot = table("go", from: "[*]", to: "b").graphvizDOT(initial: "[*]", stateName: { $0 }, inputName: { $0 })
        #expect(dot == """
            digraph "TransitionTable" {
                rankdir=LR;
                node [shape=box, style=rounded];
                "[*]_2" [shape=point, label=""];
                "[*]_2" -> "[*]";
                "[*]" -> "b" [label="go"];
            }

            """)
    }

    /// Regression: Graphviz takes a node ID that starts with `%` for an anonymous node and labels
    /// it `%3`, `%5`, …; a state named `%a` (or `%`, `%%`) was drawn under such a made-up label.
    @Test(arguments: ["%", "%%", "%a", "%1"])
    func graphvizNamesStartingWithPercentKeepTheirLabel(name: String) {
        let dot = table("go", from: name, to: "b").graphvizDOT(initial: name, stateName: { $0 }, inputName: { $0 })
        #expect(dot == """
            digraph "TransitionTable" {
                rankdir=LR;
                node [shape=box, style=rounded];
                "[*]" [shape=point, label=""];
                "[*]" -> "\(name)";
                "\(name)" [label="\(name)"];
                "\(name)" -> "b" [label="go"];
            }

            """)
    }

    /// Regression: Mermaid reads `#…;` in a state's label as an entity code, so a state named
    /// `#quot;` was labelled `"`, like a state named `"`.
    @Test func mermaidStateLabelsKeepAHash() {
        let mermaid = table("go", from: "#quot;", to: "\"").mermaidStateDiagram(stateName: { $0 }, inputName: { $0 })
        #expect(mermaid == """
            stateDiagram-v2
                state "#35;quot;" as _quot_
                state "#quot;" as _
                _quot_ --> _ : go

            """)
    }
}
