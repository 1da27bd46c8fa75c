@testable import ActomatonHost
import ActomatonPluginABI
import ActomatonPluginContract
import Testing

/// The manifest's limits, each from `actomaton_plugin.h`, at the limit and one past it, through
/// every reader: a `.so` loaded in-process, the same `.so` loaded by a worker (whose manifest
/// comes back in a frame the host checks again), a worker's frame on its own, and a wasm
/// module's memory.
@Suite("Manifest limits through every reader")
struct ManifestLimitTests {
    private static let workerOptions = WorkerOptions(executable: "\(pluginDirectory)/actomaton-host", loadTimeout: .seconds(20))

    // MARK: Native and worker, end to end

    /// The fixture entry, its version and summary, or its load error.
    private static let textFixtures: [(entry: String, error: String?)] = [
        ("fixture_longest_texts_entry", nil),
        ("fixture_long_version_entry", "invalid manifest: the plugin version is longer than \(ACTOMATON_MAX_VERSION_LENGTH) bytes"),
        ("fixture_long_summary_entry", "invalid manifest: the summary is longer than \(ACTOMATON_MAX_SUMMARY_LENGTH) bytes"),
    ]

    @Test(arguments: textFixtures)
    func textLimitsInProcess(entry: String, error expected: String?) throws {
        let (path, options) = fixture(entry)
        if let expected {
            let error = #expect(throws: PluginLoadError.self) { try Plugin.load(path: path, options: options) }
            #expect(error?.description == "\(path): \(expected)")
        } else {
            let manifest = try Plugin.load(path: path, options: options).manifest
            #expect(manifest.version.utf8.count == ManifestLimits.maxVersionBytes)
            #expect(manifest.summary?.utf8.count == ManifestLimits.maxSummaryBytes)
        }
    }

    @Test(arguments: textFixtures)
    func textLimitsInAWorker(entry: String, error expected: String?) throws {
        let (path, options) = fixture(entry)
        if let expected {
            let error = #expect(throws: PluginLoadError.self) {
                try PluginMachine(isolatedPluginAt: path, loadOptions: options, workerOptions: Self.workerOptions, log: { _ in })
            }
            #expect(error?.description.hasSuffix(expected) == true, "\(String(describing: error))")
        } else {
            let machine = try PluginMachine(isolatedPluginAt: path, loadOptions: options, workerOptions: Self.workerOptions, log: { _ in })
            #expect(machine.plugin.manifest.version.utf8.count == ManifestLimits.maxVersionBytes)
            #expect(machine.plugin.manifest.summary?.utf8.count == ManifestLimits.maxSummaryBytes)
        }
    }

    // MARK: The worker's frame

    /// A manifest with `count` actions of `parameters` parameters, and these texts.
    private static func manifest(name: String = "demo", version: String = "1.0", summary: String? = nil, actions count: Int = 1,
                                 parameters: Int = 0, actionName: String? = nil, type: PluginValueType = .int32,
                                 diagram: String? = nil, namesActiveNodes: Bool = false) -> PluginManifest {
        PluginManifest(abiVersion: ManifestReader.supportedABIVersion, name: name, version: version, summary: summary,
                       actions: (0..<count).map { index in
                           .init(name: actionName ?? "a\(index)", parameters: (0..<parameters).map { .init(name: "p\($0)", type: type) })
                       }, diagram: diagram, namesActiveNodes: namesActiveNodes)
    }

    /// Encodes `manifest` as a worker would and decodes it as the host does.
    private static func throughAFrame(_ manifest: PluginManifest) -> Result<PluginManifest, WorkerProtocol.Violation> {
        let frame = WorkerReply.loaded(manifest).frame
        return Result { () throws(WorkerProtocol.Violation) in
            guard case let .loaded(decoded) = try WorkerReply(tag: frame[4], payload: Array(frame[5...]), vocabulary: nil) else {
                throw WorkerProtocol.Violation("not loaded")
            }
            return decoded
        }
    }

    private static func refused(_ manifest: PluginManifest, _ message: String) {
        #expect(throughAFrame(manifest) == .failure(.init("a malformed loaded frame: the manifest breaks the contract: invalid manifest: \(message)")))
    }

    @Test func everyLimitThroughAFrame() {
        let longestName = String(repeating: "n", count: ManifestLimits.maxNameBytes)
        let atLimits = [
            Self.manifest(name: longestName), Self.manifest(actionName: longestName),
            Self.manifest(version: String(repeating: "v", count: ManifestLimits.maxVersionBytes)),
            Self.manifest(summary: String(repeating: "s", count: ManifestLimits.maxSummaryBytes)),
            Self.manifest(actions: ManifestLimits.maxActions), Self.manifest(parameters: ManifestLimits.maxParameters),
            Self.manifest(diagram: String(repeating: " ", count: ManifestLimits.maxDiagramBytes), namesActiveNodes: true),
        ]
        for manifest in atLimits { #expect(Self.throughAFrame(manifest) == .success(manifest)) }

        Self.refused(Self.manifest(name: longestName + "n"), "the plugin name is longer than \(ManifestLimits.maxNameBytes) bytes")
        Self.refused(Self.manifest(actionName: longestName + "n"), "the name of action 1 is longer than \(ManifestLimits.maxNameBytes) bytes")
        Self.refused(Self.manifest(version: String(repeating: "v", count: ManifestLimits.maxVersionBytes + 1)),
                     "the plugin version is longer than \(ManifestLimits.maxVersionBytes) bytes")
        Self.refused(Self.manifest(summary: String(repeating: "s", count: ManifestLimits.maxSummaryBytes + 1)),
                     "the summary is longer than \(ManifestLimits.maxSummaryBytes) bytes")
        Self.refused(Self.manifest(actions: ManifestLimits.maxActions + 1),
                     "the plugin declares \(ManifestLimits.maxActions + 1) actions, more than the limit of \(ManifestLimits.maxActions)")
        Self.refused(Self.manifest(parameters: ManifestLimits.maxParameters + 1),
                     "action 'a0' has \(ManifestLimits.maxParameters + 1) parameters, more than the limit of \(ManifestLimits.maxParameters)")
        Self.refused(Self.manifest(actions: 0), "the plugin declares no actions")
        Self.refused(Self.manifest(actions: 2, actionName: "go"), "action 'go' is declared twice")
        Self.refused(Self.manifest(name: "9lives"), #"the plugin name "9lives" is not a valid name (letters, digits and _, not starting with a digit)"#)
    }

    // MARK: A wasm module's memory

    /// An `actomaton_wasm_manifest` of version 2 (52 bytes) at offset 8 of a memory of plain bytes.
    private struct WasmImage {
        var bytes = [UInt8](repeating: 0, count: 8 + 52)
        private var texts: [(at: Int, text: String?)] = []

        mutating func word(_ value: UInt32, at offset: Int) {
            if bytes.count < offset + 4 { bytes += [UInt8](repeating: 0, count: offset + 4 - bytes.count) }
            for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(index))) }
        }

        /// Appends `text` and points the (offset, length) pair at `at` to it.
        mutating func string(_ text: String?, at offset: Int) {
            guard let text else { word(0, at: offset); word(0, at: offset + 4); return }
            let start = bytes.count
            bytes += Array(text.utf8)
            word(UInt32(start), at: offset)
            word(UInt32(text.utf8.count), at: offset + 4)
        }

        /// The image of `manifest`, every parameter's type code `typeCode` if given.
        init(_ manifest: PluginManifest, typeCode: UInt32? = nil) {
            word(WasmPluginModule.abiVersion, at: 8)
            string(manifest.name, at: 12)
            string(manifest.version, at: 20)
            string(manifest.summary, at: 28)
            word(UInt32(manifest.actions.count), at: 40)
            word(0, at: 44)
            string(manifest.diagram, at: 48)
            word(manifest.namesActiveNodes ? 1 : 0, at: 56)
            let table = bytes.count
            word(UInt32(table), at: 36)
            bytes += [UInt8](repeating: 0, count: 16 * manifest.actions.count)
            for (index, action) in manifest.actions.enumerated() {
                let entry = table + 16 * index
                string(action.name, at: entry)
                let parameters = bytes.count
                bytes += [UInt8](repeating: 0, count: 12 * action.parameters.count)
                word(UInt32(parameters), at: entry + 8)
                word(UInt32(action.parameters.count), at: entry + 12)
                for (position, parameter) in action.parameters.enumerated() {
                    string(parameter.name, at: parameters + 12 * position)
                    word(typeCode ?? parameter.type.abiType, at: parameters + 12 * position + 8)
                }
            }
        }

        func read() -> Result<PluginManifest, PluginManifestError> {
            Result { () throws(PluginManifestError) in try WasmManifestReader(memory: bytes).read(at: 8) }
        }
    }

    @Test func everyLimitThroughWasmMemory() {
        let longestName = String(repeating: "n", count: ManifestLimits.maxNameBytes)
        let atLimits = [
            Self.manifest(name: longestName), Self.manifest(actionName: longestName),
            Self.manifest(version: String(repeating: "v", count: ManifestLimits.maxVersionBytes)),
            Self.manifest(summary: String(repeating: "s", count: ManifestLimits.maxSummaryBytes)),
            Self.manifest(actions: ManifestLimits.maxActions), Self.manifest(parameters: ManifestLimits.maxParameters),
            Self.manifest(diagram: String(repeating: " ", count: ManifestLimits.maxDiagramBytes), namesActiveNodes: true),
        ]
        for manifest in atLimits {
            var expected = manifest
            expected.abiVersion = WasmPluginModule.abiVersion
            #expect(WasmImage(manifest).read() == .success(expected))
        }
        func refused(_ manifest: PluginManifest, _ message: String) {
            #expect(WasmImage(manifest).read() == .failure(.invalid(message)))
        }
        refused(Self.manifest(name: longestName + "n"), "the plugin name is longer than \(ManifestLimits.maxNameBytes) bytes")
        refused(Self.manifest(version: String(repeating: "v", count: ManifestLimits.maxVersionBytes + 1)),
                "the plugin version is longer than \(ManifestLimits.maxVersionBytes) bytes")
        refused(Self.manifest(summary: String(repeating: "s", count: ManifestLimits.maxSummaryBytes + 1)),
                "the summary is longer than \(ManifestLimits.maxSummaryBytes) bytes")
        refused(Self.manifest(diagram: String(repeating: " ", count: ManifestLimits.maxDiagramBytes + 1)),
                "the diagram is longer than \(ManifestLimits.maxDiagramBytes) bytes")
        var badFlag = WasmImage(Self.manifest())
        badFlag.word(2, at: 56)
        #expect(badFlag.read() == .failure(.invalid("the active-nodes flag is 2, not 0 or 1")))
        var notUTF8 = WasmImage(Self.manifest(diagram: "digraph { a }"))
        let diagramStart = (0..<4).reduce(0) { $0 | Int(notUTF8.bytes[48 + $1]) << (8 * $1) }
        notUTF8.bytes[diagramStart + 8] = 0xFF
        #expect(notUTF8.read() == .failure(.invalid("the diagram is not valid UTF-8")))
        refused(Self.manifest(actions: ManifestLimits.maxActions + 1),
                "the plugin declares \(ManifestLimits.maxActions + 1) actions, more than the limit of \(ManifestLimits.maxActions)")
        refused(Self.manifest(parameters: ManifestLimits.maxParameters + 1),
                "action 'a0' has \(ManifestLimits.maxParameters + 1) parameters, more than the limit of \(ManifestLimits.maxParameters)")
        let unknownType = WasmImage(Self.manifest(parameters: 1), typeCode: 99)
        if case let .failure(.invalid(message)) = unknownType.read() {
            #expect(message.hasPrefix("parameter 'p0' of action 'a0' has unknown type 99 (known: 1 = bool"), "\(message)")
        } else {
            Issue.record("an unknown type code was accepted")
        }
    }
}
