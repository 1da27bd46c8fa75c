import ActomatonPluginABI
import ActomatonPluginContract
import Testing

/// Manifests built in memory, at each limit of the contract and one past it.
@Suite("Manifest validation: every limit, at it and one past")
struct ManifestReaderTests {
    /// C strings and arrays that live as long as the test.
    final class Storage {
        var strings: [UnsafeMutablePointer<CChar>] = []
        var parameters: [UnsafeMutablePointer<actomaton_parameter>] = []
        var actions: [UnsafeMutablePointer<actomaton_action>] = []

        func string(_ text: String) -> UnsafePointer<CChar> {
            let bytes = Array(text.utf8CString)
            let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
            pointer.initialize(from: bytes, count: bytes.count)
            strings.append(pointer)
            return UnsafePointer(pointer)
        }

        deinit {
            strings.forEach { $0.deallocate() }
            parameters.forEach { $0.deallocate() }
            actions.forEach { $0.deallocate() }
        }
    }

    private func read(name: String = "demo", version: String = "1.0", summary: String? = nil, actions: [(String, [(String, actomaton_type)])] = [("go", [])]) throws(PluginManifestError) -> PluginManifest {
        let storage = Storage()
        let rawActions = UnsafeMutablePointer<actomaton_action>.allocate(capacity: max(actions.count, 1))
        storage.actions.append(rawActions)
        for (index, (actionName, parameters)) in actions.enumerated() {
            let rawParameters = UnsafeMutablePointer<actomaton_parameter>.allocate(capacity: max(parameters.count, 1))
            storage.parameters.append(rawParameters)
            for (position, (parameterName, type)) in parameters.enumerated() {
                rawParameters[position] = actomaton_parameter(name: storage.string(parameterName), type: type)
            }
            rawActions[index] = actomaton_action(name: storage.string(actionName), parameters: UnsafePointer(rawParameters),
                                                 parameter_count: UInt32(parameters.count), entry: { })
        }
        var manifest = actomaton_manifest()
        manifest.abi_version = ManifestReader.supportedABIVersion
        manifest.name = storage.string(name)
        manifest.version = storage.string(version)
        manifest.summary = summary.map(storage.string)
        manifest.actions = UnsafePointer(rawActions)
        manifest.action_count = UInt32(actions.count)
        manifest.create = { _ in nil }
        manifest.destroy = { _ in }
        manifest.snapshot = { _, _, _ in 0 }
        manifest.restore = { _, _, _ in 0 }
        manifest.describe = { _, _, _ in 0 }
        return try withExtendedLifetime(storage) { () throws(PluginManifestError) in try ManifestReader.read(&manifest) }
    }

    @Test func aValidManifest() throws {
        let manifest = try read(actions: [("add", [("amount", ACTOMATON_TYPE_INT64)]), ("reset", [])])
        #expect(manifest.name == "demo" && manifest.version == "1.0")
        #expect(manifest.actions.map(\.description) == ["add(amount: int64)", "reset()"])
    }

    @Test func nameLength() throws {
        let longest = String(repeating: "n", count: Int(ACTOMATON_MAX_NAME_LENGTH))
        #expect(try read(name: longest).name == longest)
        #expect(throws: PluginManifestError.invalid("the plugin name is longer than 64 bytes")) { try read(name: longest + "n") }
        #expect(throws: PluginManifestError.invalid(#"the plugin name "9lives" is not a valid name (letters, digits and _, not starting with a digit)"#)) {
            try read(name: "9lives")
        }
    }

    @Test func versionLength() throws {
        let longest = String(repeating: "v", count: Int(ACTOMATON_MAX_VERSION_LENGTH))
        #expect(try read(version: longest).version == longest)
        #expect(throws: PluginManifestError.invalid("the plugin version is longer than \(ACTOMATON_MAX_VERSION_LENGTH) bytes")) {
            try read(version: longest + "v")
        }
    }

    @Test func summaryLength() throws {
        let longest = String(repeating: "s", count: Int(ACTOMATON_MAX_SUMMARY_LENGTH))
        #expect(try read(summary: longest).summary == longest)
        #expect(try read(summary: nil).summary == nil)
        #expect(throws: PluginManifestError.invalid("the summary is longer than \(ACTOMATON_MAX_SUMMARY_LENGTH) bytes")) {
            try read(summary: longest + "s")
        }
    }

    @Test func actionAndParameterNameLength() throws {
        let longest = String(repeating: "n", count: Int(ACTOMATON_MAX_NAME_LENGTH))
        #expect(try read(actions: [(longest, [(longest, ACTOMATON_TYPE_BOOL)])]).actions[0].parameters[0].name == longest)
        #expect(throws: PluginManifestError.invalid("the name of action 1 is longer than 64 bytes")) { try read(actions: [(longest + "n", [])]) }
        #expect(throws: PluginManifestError.invalid("parameter 1 of action 'go' is longer than 64 bytes")) {
            try read(actions: [("go", [(longest + "n", ACTOMATON_TYPE_BOOL)])])
        }
    }

    @Test func limitsAreTheHeaders() {
        #expect(ManifestLimits.maxNameBytes == Int(ACTOMATON_MAX_NAME_LENGTH))
        #expect(ManifestLimits.maxVersionBytes == Int(ACTOMATON_MAX_VERSION_LENGTH))
        #expect(ManifestLimits.maxSummaryBytes == Int(ACTOMATON_MAX_SUMMARY_LENGTH))
        #expect(ManifestLimits.maxActions == Int(ACTOMATON_MAX_ACTIONS))
        #expect(ManifestLimits.maxParameters == Int(ACTOMATON_MAX_PARAMETERS))
    }

    @Test func actionCount() throws {
        let most = (0..<Int(ACTOMATON_MAX_ACTIONS)).map { ("a\($0)", [(String, actomaton_type)]()) }
        #expect(try read(actions: most).actions.count == 256)
        #expect(throws: PluginManifestError.invalid("the plugin declares 257 actions, more than the limit of 256")) {
            try read(actions: most + [("extra", [])])
        }
        #expect(throws: PluginManifestError.invalid("the plugin declares no actions")) { try read(actions: []) }
    }

    @Test func parameterCount() throws {
        let most = (0..<Int(ACTOMATON_MAX_PARAMETERS)).map { ("p\($0)", ACTOMATON_TYPE_INT32) }
        #expect(try read(actions: [("go", most)]).actions[0].parameters.count == 16)
        #expect(throws: PluginManifestError.invalid("action 'go' has 17 parameters, more than the limit of 16")) {
            try read(actions: [("go", most + [("extra", ACTOMATON_TYPE_BOOL)])])
        }
    }

    @Test func duplicatesAndUnknownTypes() {
        #expect(throws: PluginManifestError.invalid("action 'go' is declared twice")) { try read(actions: [("go", []), ("go", [])]) }
        #expect(throws: PluginManifestError.invalid("action 'go' has two parameters named 'x'")) {
            try read(actions: [("go", [("x", ACTOMATON_TYPE_BOOL), ("x", ACTOMATON_TYPE_BOOL)])])
        }
        let error = #expect(throws: PluginManifestError.self) { try read(actions: [("go", [("x", 99)])]) }
        #expect(error?.description.hasPrefix("invalid manifest: parameter 'x' of action 'go' has unknown type 99 (known: 1 = bool") == true)
    }

    @Test func abiVersionIsCheckedAlone() {
        var version: UInt32 = ManifestReader.supportedABIVersion + 1
        #expect(throws: PluginManifestError.unsupportedABIVersion(found: version, supported: ManifestReader.supportedABIVersion)) {
            try ManifestReader.checkABIVersion(&version)
        }
    }
}
