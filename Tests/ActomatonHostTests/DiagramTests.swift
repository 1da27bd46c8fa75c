@testable import ActomatonHost
import ActomatonPluginABI
import ActomatonPluginContract
import Testing

/// ABI version 2: a plugin's state diagram in its manifest and the diagram nodes active in its
/// state, through every runtime (in process, in a worker, in the WebAssembly sandbox); a
/// plugin of version 1 keeps loading and working.
@Suite("Diagrams and active nodes")
struct DiagramTests {
    private static let workerOptions = WorkerOptions(executable: "\(pluginDirectory)/actomaton-host", loadTimeout: .seconds(20))

    /// Where a plugin runs.
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case inProcess, worker, wasm
        var testDescription: String { rawValue }
    }

    /// A machine for a `.so` plugin, in this process or in a worker.
    private static func machine(_ path: String, options: Plugin.LoadOptions = .init(), isolated: Bool,
                                observer: PluginMachine.Observer? = nil) throws -> PluginMachine {
        isolated
            ? try PluginMachine(isolatedPluginAt: path, loadOptions: options, workerOptions: workerOptions, describesState: true,
                                observer: observer, log: { _ in })
            : try PluginMachine(pluginAt: path, isolation: .none, loadOptions: options, describesState: true, observer: observer,
                                log: { _ in })
    }

    private static func ticTacToe(_ backend: Backend) throws -> PluginMachine {
        switch backend {
        case .inProcess: try machine(plugin("TicTacToePlugin"), isolated: false)
        case .worker: try machine(plugin("TicTacToePlugin"), isolated: true)
        case .wasm: try PluginMachine(pluginAt: wasmPlugin("tictactoe"), isolation: .none, describesState: true, log: { _ in })
        }
    }

    // MARK: Version 1

    @Test(arguments: [false, true])
    func aVersion1PluginLoadsAndWorks(isolated: Bool) async throws {
        let (path, options) = fixture("fixture_version_1_entry")
        let machine = try Self.machine(path, options: options, isolated: isolated)
        let manifest = machine.plugin.manifest
        #expect(manifest.abiVersion == 1)
        #expect(manifest.summary == "A plugin of ABI version 1")
        #expect(manifest.diagram == nil)
        #expect(!manifest.namesActiveNodes)
        #expect(!manifest.lines.contains { $0.hasPrefix("diagram") })
        let transition = try await machine.send("set", [.int(7)])
        #expect(try transition.state?.get() == #"{"value":7,"create_request_status":2}"#)
        #expect(transition.activeNodes == nil)
        #expect(try await machine.activeNodes() == nil)
    }

    @Test func aVersion1ManifestIsReadNoFurtherThanItsEnd() {
        #expect(ManifestReader.supportedABIVersions == 1...2)
        #expect(ManifestReader.manifestSize(forABIVersion: 1) == MemoryLayout<actomaton_manifest>.offset(of: \actomaton_manifest.diagram)!)
        #expect(ManifestReader.manifestSize(forABIVersion: 2) == MemoryLayout<actomaton_manifest>.size)
    }

    @Test func aVersionPastTheNewestIsRefused() throws {
        let (path, options) = fixture("fixture_wrong_abi_entry")
        let error = #expect(throws: PluginLoadError.self) { try Plugin.load(path: path, options: options) }
        #expect(error?.description == "\(path): plugin ABI version 3 is not supported (this host speaks versions 1 to 2)")
    }

    // MARK: Tic-tac-toe, through every backend

    @Test(arguments: Backend.allCases)
    func ticTacToeCarriesItsDiagramAndPhase(_ backend: Backend) async throws {
        let machine = try Self.ticTacToe(backend)
        let manifest = machine.plugin.manifest
        #expect(manifest.abiVersion == 2)
        #expect(manifest.namesActiveNodes)
        let diagram = try #require(manifest.diagram)
        let nodes = DiagramText.nodeIDs(in: diagram)
        #expect(nodes == ["[*]", "X won", "O won", "draw", "X to move", "O to move"])
        #expect(manifest.lines.contains("diagram: 6 nodes (DOT, \(DiagramText.grouped(diagram.utf8.count)) bytes)"))

        #expect(try await machine.describedState().activeNodes?.get() == ["X to move"])
        var transition = try await machine.send("place", [.uint(1), .uint(1)])
        #expect(try transition.activeNodes?.get() == ["O to move"])
        for (row, column) in [(0, 0), (0, 2), (1, 0)] {
            transition = try await machine.send("place", [.uint(UInt64(row)), .uint(UInt64(column))])
        }
        // X: (1,1) (0,2); O: (0,0) (1,0). X to move; then X at (2,0) completes the diagonal.
        #expect(try transition.activeNodes?.get() == ["X to move"])
        transition = try await machine.send("place", [.uint(2), .uint(0)])
        #expect(try transition.activeNodes?.get() == ["X won"])
        #expect(try transition.state?.get().contains(#""outcome":"X won""#) == true)
        for node in try #require(transition.activeNodes).get() { #expect(nodes.contains(node)) }
        // A refused action: the state, and its phase, are as they were.
        await #expect(throws: PluginCallError.self) { try await machine.send("place", [.uint(0), .uint(1)]) }
        #expect(try await machine.activeNodes() == ["X won"])
        transition = try await machine.send("restart")
        #expect(try transition.activeNodes?.get() == ["X to move"])
    }

    @Test(arguments: [Backend.inProcess, .wasm])
    func platformerNamesItsActiveStatesAsDiagramNodes(_ backend: Backend) async throws {
        let machine = backend == .wasm
            ? try PluginMachine(pluginAt: wasmPlugin("platformer"), isolation: .none, describesState: true, log: { _ in })
            : try Self.machine(plugin("PlatformerPlugin"), isolated: false)
        let diagram = try #require(machine.plugin.manifest.diagram)
        let nodes = Set(DiagramText.nodeIDs(in: diagram))
        let initial = try #require(try await machine.activeNodes())
        #expect(!initial.isEmpty)
        #expect(Set(initial).isSubset(of: nodes))
        let transition = try await machine.send("move", [.int(9)])
        let running = try #require(transition.activeNodes).get()
        #expect(Set(running).isSubset(of: nodes))
        #expect(running != initial)
        // The state the description names as a leaf is lit: `running`'s node is labelled so.
        #expect(try transition.state?.get().contains("running") == true)
    }

    // MARK: The limits of the active nodes, and the message for each bad value

    /// What a transition's active nodes should be.
    enum Expected: Sendable {
        /// These names.
        case names([String])
        /// A failure with this line, after `cannot describe the state: its active nodes: `.
        case failure(String)
    }

    /// Checks `actual` against `expected` for the plugin named `plugin`.
    private static func check(_ actual: Result<[String], PluginCallError>?, _ expected: Expected, plugin: String, value: Int64) {
        switch (actual, expected) {
        case let (.success(names)?, .names(expectedNames)):
            #expect(names == expectedNames, "value \(value)")
        case let (.failure(error)?, .failure(message)):
            #expect(error.description == "plugin \(plugin): cannot describe the state: its active nodes: \(message)", "value \(value)")
        default:
            Issue.record("value \(value): \(String(describing: actual)), expected \(expected)")
        }
    }

    /// The fixture's `set` value, and the active nodes or the line it fails with.
    static let activeCases: [(value: Int64, expected: Expected)] = [
        (0, .names(["a"])),
        (1, .names((0..<ActiveNodes.maxCount).map { "n\($0)" })),
        (2, .failure("the plugin named 65 active nodes, more than the limit of 64")),
        (3, .names([String(repeating: "x", count: ActiveNodes.maxNameBytes)])),
        (4, .failure("active node 1 is 257 bytes, more than the limit of 256")),
        (5, .failure("active node 2 is empty")),
        (6, .failure("active node 1 holds the control character U+0009")),
        (7, .failure("active node 2 is not valid UTF-8")),
        (8, .failure("the plugin asked for 16449 bytes, more than the limit of 16448")),
        (9, .names([])),
        (10, .names(["a"])),
    ]

    @Test(arguments: [false, true])
    func activeNodesAtTheirLimitsAndOnePast(isolated: Bool) async throws {
        let (path, options) = fixture("fixture_diagram_entry")
        let machine = try Self.machine(path, options: options, isolated: isolated)
        #expect(machine.plugin.manifest.diagram == "digraph probe {\n    a -> b [label=\"set\"];\n    \"a b\";\n}\n")
        #expect(machine.plugin.manifest.lines.contains("diagram: 3 nodes (DOT, 55 bytes)"))
        for (value, expected) in Self.activeCases {
            let transition = try await machine.send("set", [.int(value)])
            // The description is had either way; a bad list fails only the active nodes.
            #expect(try transition.state?.get().hasPrefix(#"{"value":\#(value)"#) == true)
            Self.check(transition.activeNodes, expected, plugin: "probe", value: value)
        }
        // The plugin kept working through every bad value (a worker was not restarted).
        let last = try await machine.send("set", [.int(0)])
        #expect(try last.activeNodes?.get() == ["a"])
        if isolated { #expect(await machine.workerProcessID != nil) }
    }

    @Test func activeNodesOfTheLargestSize() async throws {
        let (path, options) = fixture("fixture_diagram_entry")
        let machine = try Self.machine(path, options: options, isolated: false)
        let transition = try await machine.send("set", [.int(11)])
        let names = try #require(transition.activeNodes).get()
        #expect(names.count == ActiveNodes.maxCount)
        #expect(names.allSatisfy { $0.utf8.count == ActiveNodes.maxNameBytes })
        #expect(ActiveNodes.maxBytes == ActiveNodes.maxCount * (ActiveNodes.maxNameBytes + 1))
    }

    @Test func aDiagramWithoutActiveNodes() async throws {
        let (path, options) = fixture("fixture_diagram_without_active_entry")
        let machine = try Self.machine(path, options: options, isolated: true)
        #expect(machine.plugin.manifest.diagram == "digraph { a }")
        #expect(!machine.plugin.manifest.namesActiveNodes)
        let transition = try await machine.send("set", [.int(1)])
        #expect(transition.activeNodes == nil)
    }

    // MARK: The limits of the diagram

    static let diagramCases: [(entry: String, error: String?)] = [
        ("fixture_diagram_at_limit_entry", nil),
        ("fixture_diagram_too_long_entry", "invalid manifest: the diagram is longer than 65536 bytes"),
        ("fixture_diagram_not_utf8_entry", "invalid manifest: the diagram is not valid UTF-8"),
    ]

    @Test(arguments: diagramCases, [false, true])
    func theDiagramAtItsLimitAndOnePast(_ fixtureCase: (entry: String, error: String?), isolated: Bool) throws {
        let (path, options) = fixture(fixtureCase.entry)
        let expected = fixtureCase.error
        if let expected {
            let error = #expect(throws: PluginLoadError.self) { try Self.machine(path, options: options, isolated: isolated) }
            #expect(error?.description.hasSuffix(expected) == true, "\(String(describing: error))")
        } else {
            let machine = try Self.machine(path, options: options, isolated: isolated)
            #expect(machine.plugin.manifest.diagram?.utf8.count == ManifestLimits.maxDiagramBytes)
            #expect(machine.plugin.manifest.lines.contains("diagram: 1 node (DOT, 65,536 bytes)"))
        }
    }

    // MARK: A wasm module's active nodes

    @Test func aWasmModulesActiveNodesAreChecked() async throws {
        let machine = try PluginMachine(pluginAt: wasmPlugin("active", in: "hostile"), isolation: .none, describesState: true, log: { _ in })
        #expect(machine.plugin.manifest.abiVersion == 2)
        #expect(machine.plugin.manifest.diagram == "digraph { a }")
        #expect(machine.plugin.manifest.namesActiveNodes)
        let cases: [(Int64, Expected)] = [
            (0, .names(["a"])),
            (1, .failure("the list of active nodes is 16449 bytes, more than the limit of 16448")),
            (2, .failure("the module returned a list of active nodes of 10 bytes at offset 65532, past the end of its memory (65536 bytes)")),
            (3, .failure("active node 1 holds the control character U+0009")),
            (5, .names([])),
        ]
        for (value, expected) in cases {
            let transition = try await machine.send("set", [.int(value)])
            Self.check(transition.activeNodes, expected, plugin: "active", value: value)
        }
        // A trap in actomaton_active: the call fails, the instance is rebuilt with the state as it was.
        let trapped = try await machine.send("set", [.int(4)])
        guard case let .failure(error)? = trapped.activeNodes else { Issue.record("no failure"); return }
        #expect(error.description.contains("its active nodes: it trapped"))
        #expect(error.description.contains("rebuilt"))
        #expect(try await machine.describe() == "n=4")
    }
}
