import ActomatonCore
import ActomatonPluginABI
@testable import ActomatonPluginKit
import Testing

// A transition-table reducer exported with its diagram (ABI version 2): the manifest carries
// the table's DOT, and `active` names the node of the current state.

enum DoorState: String, Codable, Sendable, CustomStringConvertible {
    case closed, open, locked
    var description: String { rawValue }
}

enum DoorInput: String, Sendable, CustomStringConvertible {
    case open, close, lock
    var description: String { rawValue }
}

let doorTable = TransitionTable<DoorInput, DoorState, Never>([
    .open | .closed => .open,
    .close | .open => .closed,
    .lock | .closed => .locked,
])

let doorReducer = MealyReducer<DoorInput, DoorState, Void, PluginEffect<DoorInput>> { input, state, _ in
    doorTable.send(input, to: &state).isTransitioned ? .empty : .fail("the door cannot \(input) now")
}

let door = PluginExport(
    name: "door", version: "1.0.0",
    reducer: doorReducer, initialState: DoorState.closed,
    actions: [.action("open") { .open }, .action("close") { .close }, .action("lock") { .lock }],
    diagram: .transitionTable(doorTable, name: "door", initial: .closed, stateName: { $0.description },
                              inputName: { $0.description }, current: { $0 })
)

private func activeNodes(_ manifest: actomaton_manifest, _ state: UnsafeMutableRawPointer?) -> String {
    let active = try! #require(manifest.active)
    let length = active(state, nil, 0)
    var buffer = [CChar](repeating: 0, count: length)
    #expect(active(state, &buffer, length) == length)
    return String(decoding: buffer.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

@Suite("PluginExport: a diagram and its active nodes")
struct DiagramExportTests {
    let manifest = door.manifest.assumingMemoryBound(to: actomaton_manifest.self).pointee

    @Test func theManifestCarriesTheTablesDiagram() throws {
        #expect(manifest.abi_version == 2)
        let diagram = String(cString: try #require(manifest.diagram))
        #expect(diagram == doorTable.graphvizDOT(name: "door", initial: .closed))
        #expect(diagram.contains(#""closed" -> "open" [label="open"];"#))
    }

    @Test func activeNamesTheCurrentStatesNode() {
        let host = fakeHost()
        let state = manifest.create(host)
        defer { manifest.destroy(state) }
        #expect(activeNodes(manifest, state) == "closed")
        let open = unsafeBitCast(manifest.actions[0].entry, to: NoArgumentEntry.self)
        #expect(open(state) == ACTOMATON_OK)
        #expect(activeNodes(manifest, state) == "open")
        #expect(TransitionTable<DoorInput, DoorState, Never>.diagramNodeID(of: .open) == "open")
    }

    @Test func aPluginWithoutADiagramHasNeither() {
        let plain = actomatonPluginEntry(ACTOMATON_PLUGIN_ABI_VERSION)!.assumingMemoryBound(to: actomaton_manifest.self).pointee
        #expect(plain.diagram == nil)
        #expect(plain.active == nil)
    }

    @Test func aStatechartsActiveNodesAreItsDiagramsNodeIDs() throws {
        enum Light: Int, StatechartStateID { case power, off, on, dim, bright }
        let chart = try Statechart<Light, DoorInput, Never>(states: [
            .compound(.power, children: [
                .atomic(.off, transitions: [.on(.open, to: .on)]),
                .compound(.on, children: [.atomic(.dim), .atomic(.bright)]),
            ]),
        ])
        let diagram = PluginDiagram<StatechartState<Light>>.statechart(chart, name: "light", stateName: { "\($0)" },
                                                                      eventName: { $0.description }, configuration: { $0 })
        var state = chart.initialState
        #expect(diagram.activeNodes?(state) == ["0", "1"])
        _ = chart.send(.open, to: &state)
        #expect(diagram.activeNodes?(state) == ["0", "2", "3"])
        #expect(diagram.dot.contains(#""3" [label="dim"];"#))
    }
}
