import ActomatonCore

/// A plugin's state diagram and how to find its active nodes: what both kits put in the
/// manifest (ABI version 2: `diagram` and `active` in `actomaton_plugin.h`, the manifest's
/// diagram and `actomaton_active` in the wasm contract). An inspector renders the DOT text
/// with Graphviz and lights the nodes ``activeNodes`` names after each transition, so the
/// names must be node IDs of the DOT text.
///
/// Made from the core's own diagrams, whose node IDs the kits know:
///
/// ```swift
/// // A statechart: one node per state, named by its raw value.
/// let diagram = PluginDiagram<Character>.statechart(platformerChart, name: "platformer",
///     stateName: \.name, eventName: { "\($0)" }, configuration: \.core)
///
/// // A transition table: one node per state, named by its name.
/// let diagram = PluginDiagram<Door>.transitionTable(doorTable, initial: .closed,
///     stateName: { "\($0)" }, inputName: { "\($0)" })
/// ```
///
/// or written by hand, DOT text and a function that names the active nodes:
///
/// ```swift
/// PluginDiagram<Game>(dot: #"digraph { "X to move" -> "O to move" }"#) { game in [game.phase] }
/// ```
///
/// The host refuses DOT text longer than 64 KiB (`ACTOMATON_MAX_DIAGRAM_SIZE`), and fails a
/// transition's active nodes past their limits (`ACTOMATON_MAX_ACTIVE_NODES` names of at
/// most `ACTOMATON_MAX_NODE_NAME_LENGTH` bytes, none empty, no control characters).
public struct PluginDiagram<State> {
    /// The diagram, Graphviz DOT text.
    public var dot: String
    /// The IDs of the diagram's nodes active in a state; `nil` when the plugin names none.
    public var activeNodes: ((State) -> [String])?

    /// A diagram of DOT text, and the function that names its nodes active in a state.
    ///
    /// - Parameters:
    ///   - dot: Graphviz DOT text; its node IDs (without their quotes) are the names
    ///     `activeNodes` returns.
    ///   - activeNodes: The IDs of the nodes active in a state; `nil` to name none.
    public init(dot: String, activeNodes: ((State) -> [String])? = nil) {
        self.dot = dot
        self.activeNodes = activeNodes
    }

    /// A statechart's diagram (`Statechart.graphvizDOT(name:stateName:eventName:)`) and its
    /// active states (`Statechart.activeDiagramNodes(in:)`: compound and parallel states
    /// included, each as its raw value).
    ///
    /// - Parameters:
    ///   - chart: The chart the plugin runs.
    ///   - name: The graph's name.
    ///   - stateName: A state's label.
    ///   - eventName: An event's label.
    ///   - configuration: The chart's state within the plugin's state.
    public static func statechart<StateID, Event, Output>(
        _ chart: Statechart<StateID, Event, Output>,
        name: String = "Statechart",
        stateName: (StateID) -> String,
        eventName: (Event) -> String,
        configuration: @escaping (State) -> StatechartState<StateID>
    ) -> PluginDiagram {
        PluginDiagram(dot: chart.graphvizDOT(name: name, stateName: stateName, eventName: eventName)) { state in
            chart.activeDiagramNodes(in: configuration(state))
        }
    }

    /// A transition table's diagram
    /// (`TransitionTable.graphvizDOT(name:initial:states:inputs:stateName:inputName:)`) and
    /// its one active state, named as the diagram names it.
    ///
    /// - Parameters:
    ///   - table: The table the plugin runs.
    ///   - name: The graph's name.
    ///   - initial: The initial state, drawn with an arrow from a dot.
    ///   - states: States to draw besides those named in rows.
    ///   - inputs: Inputs to try besides those named in rows.
    ///   - stateName: A state's label, which identifies its node.
    ///   - inputName: An input's label.
    ///   - current: The table's state within the plugin's state.
    public static func transitionTable<TableState, Input, Output>(
        _ table: TransitionTable<Input, TableState, Output>,
        name: String = "TransitionTable",
        initial: TableState? = nil,
        states: [TableState] = [],
        inputs: [Input] = [],
        stateName: @escaping (TableState) -> String,
        inputName: (Input) -> String,
        current: @escaping (State) -> TableState
    ) -> PluginDiagram {
        PluginDiagram(dot: table.graphvizDOT(name: name, initial: initial, states: states, inputs: inputs,
                                             stateName: stateName, inputName: inputName)) { state in
            [TransitionTable<Input, TableState, Output>.diagramNodeID(of: current(state), stateName: stateName)]
        }
    }
}
