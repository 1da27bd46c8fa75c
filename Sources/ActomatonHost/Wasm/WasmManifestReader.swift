import ActomatonPluginABI
import ActomatonPluginContract
import WasmKit

/// Reads and validates a wasm manifest (`actomaton_wasm_manifest`) from linear memory, with
/// the same rules as a `.so` manifest.
struct WasmManifestReader {
    let memory: Memory

    func read(at offset: UInt32) throws(PluginManifestError) -> PluginManifest {
        let base = Int(offset)
        let version = try word(base, "the manifest")
        guard version == WasmPluginModule.abiVersion else {
            throw .unsupportedABIVersion(found: version, supported: WasmPluginModule.abiVersion)
        }
        let name = try self.name(at: base + 4, what: "the plugin name")
        guard let version = try text(at: base + 12, limit: Int(ACTOMATON_MAX_NAME_LENGTH), what: "the version") else {
            throw .invalid("the version is missing")
        }
        let summary = try text(at: base + 20, limit: 1024, what: "the summary")
        let capabilities = try word(base + 36, "the manifest")
        guard capabilities == 0 else {
            throw .invalid("the module asks for capabilities \(capabilities) (file system, network, clock…), which this host does not grant: plugins run with none")
        }
        let actions = Int(try word(base + 28, "the manifest"))
        let count = Int(try word(base + 32, "the manifest"))
        guard (1...Int(ACTOMATON_MAX_ACTIONS)).contains(count) else {
            throw .invalid("action_count is \(count); it must be 1...\(ACTOMATON_MAX_ACTIONS)")
        }
        try checkTable("the action table", at: actions, count: count, entrySize: 16)
        var result: [PluginManifest.Action] = []
        var names = Set<String>()
        for index in 0..<count {
            let entry = actions + 16 * index
            let actionName = try self.name(at: entry, what: "the name of action \(index + 1)")
            guard names.insert(actionName).inserted else { throw .invalid("two actions are named '\(actionName)'") }
            let parameters = Int(try word(entry + 8, "action '\(actionName)'"))
            let parameterCount = Int(try word(entry + 12, "action '\(actionName)'"))
            guard parameterCount <= Int(ACTOMATON_MAX_PARAMETERS) else {
                throw .invalid("action '\(actionName)' has \(parameterCount) parameters; at most \(ACTOMATON_MAX_PARAMETERS)")
            }
            try checkTable("the parameter table of '\(actionName)'", at: parameters, count: parameterCount, entrySize: 12)
            var parameterNames = Set<String>()
            var list: [PluginManifest.Parameter] = []
            for position in 0..<parameterCount {
                let item = parameters + 12 * position
                let parameterName = try self.name(at: item, what: "parameter \(position + 1) of '\(actionName)'")
                guard parameterNames.insert(parameterName).inserted else {
                    throw .invalid("action '\(actionName)' has two parameters named '\(parameterName)'")
                }
                let code = try word(item + 8, "action '\(actionName)'")
                guard let type = PluginValueType(rawValue: code) else {
                    throw .invalid("parameter '\(parameterName)' of '\(actionName)' has unknown type \(code)")
                }
                list.append(.init(name: parameterName, type: type))
            }
            result.append(.init(name: actionName, parameters: list))
        }
        return PluginManifest(abiVersion: WasmPluginModule.abiVersion, name: name, version: version, summary: summary, actions: result)
    }

    /// Checks that a table of `count` entries at `offset` lies inside memory, so a wrong table
    /// offset is reported as one rather than as its first entry's field pointing outside.
    private func checkTable(_ what: String, at offset: Int, count: Int, entrySize: Int) throws(PluginManifestError) {
        guard count > 0, offset + count * entrySize > memory.byteCount else { return }
        let entries = count == 1 ? "1 entry" : "\(count) entries"
        throw .invalid("the offset of \(what) is wrong: \(entries) of \(entrySize) bytes at offset \(offset) would end past the module's memory (\(memory.byteCount) bytes)")
    }

    private func word(_ offset: Int, _ what: String) throws(PluginManifestError) -> UInt32 {
        guard let value = u32(memory, offset) else { throw .invalid("\(what) points outside the module's memory (offset \(offset))") }
        return value
    }

    /// An (offset, length) string; `nil` for (0, 0).
    private func text(at offset: Int, limit: Int, what: String) throws(PluginManifestError) -> String? {
        let start = Int(try word(offset, what)), length = Int(try word(offset + 4, what))
        if start == 0 && length == 0 { return nil }
        guard length <= limit else { throw .invalid("\(what) is longer than \(limit) bytes") }
        guard let bytes = ActomatonHost.readMemory(memory, offset: start, length: length) else {
            throw .invalid("\(what) points outside the module's memory (\(length) bytes at offset \(start))")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .invalid("\(what) is not valid UTF-8") }
        return text
    }

    private func name(at offset: Int, what: String) throws(PluginManifestError) -> String {
        guard let text = try text(at: offset, limit: Int(ACTOMATON_MAX_NAME_LENGTH), what: what) else { throw .invalid("\(what) is missing") }
        guard ManifestReader.isValidName(text) else {
            throw .invalid("\(what) \(PluginValue.quoted(text)) is not a valid name (letters, digits and _, not starting with a digit)")
        }
        return text
    }
}
