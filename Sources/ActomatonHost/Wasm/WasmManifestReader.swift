import ActomatonPluginABI
import ActomatonPluginContract
import WasmKit

/// Reads a wasm manifest (`actomaton_wasm_manifest`) from linear memory and validates it with
/// ``ManifestValidator``, the same rules as a `.so` manifest.
///
///     manifest = abi:u32 name:str version:str summary:str actions:u32 count:u32 capabilities:u32
///                and from version 2: diagram:str active:u32           (40 bytes, 52 from version 2)
///     str      = offset:u32 length:u32          ({0, 0}: none)
///     action   = name:str parameters:u32 parameterCount:u32                 (16 bytes)
///     parameter = name:str type:u32                                          (12 bytes)
struct WasmManifestReader {
    /// How many bytes the memory has.
    let byteCount: Int
    /// `length` bytes at `offset`, or `nil` when they are not all inside the memory.
    let bytes: (_ offset: Int, _ length: Int) -> [UInt8]?

    init(memory: Memory) {
        byteCount = memory.byteCount
        bytes = { ActomatonHost.readMemory(memory, offset: $0, length: $1) }
    }

    /// A reader of plain bytes standing for a module's memory (for tests).
    init(memory: [UInt8]) {
        byteCount = memory.count
        bytes = { offset, length in
            guard offset >= 0, length >= 0, offset <= memory.count - length else { return nil }
            return Array(memory[offset..<offset + length])
        }
    }

    func read(at offset: UInt32) throws(PluginManifestError) -> PluginManifest {
        var source = Source(reader: self, base: Int(offset))
        let version = try source.word(source.base, "the manifest")
        guard WasmPluginModule.abiVersions.contains(version) else {
            throw .unsupportedABIVersion(found: version, supported: WasmPluginModule.abiVersion)
        }
        return try ManifestValidator.read(&source, abiVersion: version)
    }

    /// The fields at their offsets in memory; every offset read is checked against its size.
    private struct Source: ManifestSource {
        let reader: WasmManifestReader
        let base: Int

        func text(_ field: ManifestField, limit: Int, what: String) throws(PluginManifestError) -> ManifestText {
            let at: Int
            switch field {
            case .name: at = base + 4
            case .version: at = base + 12
            case .summary: at = base + 20
            case .diagram: at = base + 40
            case let .actionName(action): at = try actionEntry(action)
            case let .parameterName(action, parameter): at = try parameterEntry(action, parameter)
            case .actionCount, .parameterCount, .parameterType, .activeFunction: return .absent
            }
            let start = Int(try word(at, what)), length = Int(try word(at + 4, what))
            if start == 0 && length == 0 { return .absent }
            guard length <= limit else { return .tooLong }
            guard let bytes = reader.bytes(start, length) else {
                throw .invalid("\(what) points outside the module's memory (\(length) bytes at offset \(start))")
            }
            return String(validating: bytes, as: UTF8.self).map(ManifestText.text) ?? .invalidUTF8
        }

        func number(_ field: ManifestField, what: String) throws(PluginManifestError) -> UInt32 {
            switch field {
            case .actionCount: try word(base + 32, what)
            case let .parameterCount(action): try word(try actionEntry(action) + 12, what)
            case let .parameterType(action, parameter): try word(try parameterEntry(action, parameter) + 8, what)
            case .activeFunction: try word(base + 48, what)
            case .name, .version, .summary, .actionName, .parameterName, .diagram: 0
            }
        }

        func checkOwnRules() throws(PluginManifestError) {
            let capabilities = try word(base + 36, "the manifest")
            guard capabilities == 0 else {
                throw .invalid("the module asks for capabilities \(capabilities) (file system, network, clock…), which this host does not grant: plugins run with none")
            }
        }

        func willReadActions(count: Int) throws(PluginManifestError) {
            try checkTable("the action table", at: Int(try word(base + 28, "the manifest")), count: count, entrySize: 16)
        }

        func willReadParameters(ofAction index: Int, named name: String, count: Int) throws(PluginManifestError) {
            let table = Int(try word(try actionEntry(index) + 8, "action '\(name)'"))
            try checkTable("the parameter table of '\(name)'", at: table, count: count, entrySize: 12)
        }

        private func actionEntry(_ index: Int) throws(PluginManifestError) -> Int {
            Int(try word(base + 28, "the manifest")) + 16 * index
        }

        private func parameterEntry(_ action: Int, _ parameter: Int) throws(PluginManifestError) -> Int {
            Int(try word(try actionEntry(action) + 8, "the manifest")) + 12 * parameter
        }

        /// Checks that a table of `count` entries at `offset` lies inside memory, so a wrong table
        /// offset is reported as one rather than as its first entry's field pointing outside.
        private func checkTable(_ what: String, at offset: Int, count: Int, entrySize: Int) throws(PluginManifestError) {
            guard count > 0, offset + count * entrySize > reader.byteCount else { return }
            let entries = count == 1 ? "1 entry" : "\(count) entries"
            throw .invalid("the offset of \(what) is wrong: \(entries) of \(entrySize) bytes at offset \(offset) would end past the module's memory (\(reader.byteCount) bytes)")
        }

        func word(_ offset: Int, _ what: String) throws(PluginManifestError) -> UInt32 {
            guard let bytes = reader.bytes(offset, 4) else {
                throw .invalid("\(what) points outside the module's memory (offset \(offset))")
            }
            return bytes.reversed().reduce(0) { $0 << 8 | UInt32($1) }
        }
    }
}
