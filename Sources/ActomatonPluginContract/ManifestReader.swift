import ActomatonPluginABI

/// Reads a plugin's C manifest into a ``PluginManifest``, checking every rule of the contract
/// (with ``ManifestValidator``) before trusting a value: a manifest comes from code the host
/// does not control.
///
/// The ABI version is checked first and alone (``checkABIVersion(_:)``): when the host does
/// not accept it, the layout of everything after it may differ too, so nothing else is read.
/// A manifest of an older version is read only as far as that version's struct goes.
public enum ManifestReader {
    /// The newest version of the contract this host speaks, `ACTOMATON_PLUGIN_ABI_VERSION`: the
    /// version it passes to the entry symbol and puts in the host table.
    public static let supportedABIVersion = UInt32(ACTOMATON_PLUGIN_ABI_VERSION)
    /// The oldest version this host accepts, `ACTOMATON_PLUGIN_MIN_ABI_VERSION`.
    public static let oldestSupportedABIVersion = UInt32(ACTOMATON_PLUGIN_MIN_ABI_VERSION)
    /// Every version this host accepts.
    public static var supportedABIVersions: ClosedRange<UInt32> { oldestSupportedABIVersion...supportedABIVersion }

    /// Reads only the manifest's first field, the ABI version, and checks that the host
    /// accepts it (``supportedABIVersions``).
    public static func checkABIVersion(_ manifest: UnsafeRawPointer) throws(PluginManifestError) {
        let found = manifest.load(as: UInt32.self)
        guard supportedABIVersions.contains(found) else {
            throw .unsupportedABIVersion(found: found, supported: supportedABIVersion)
        }
    }

    /// How many bytes of `actomaton_manifest` a plugin built for `version` has: a version-1
    /// manifest ends after `describe`.
    public static func manifestSize(forABIVersion version: UInt32) -> Int {
        version >= 2 ? MemoryLayout<actomaton_manifest>.size : version1ManifestSize
    }

    /// The end of `describe`, the last field of a version-1 manifest.
    private static let version1ManifestSize = MemoryLayout<actomaton_manifest>.offset(of: \actomaton_manifest.describe)!
        + MemoryLayout<UnsafeRawPointer?>.size

    /// Reads and validates the whole manifest; the ABI version must already be checked. Reads
    /// no byte past the struct of the manifest's version.
    public static func read(_ pointer: UnsafePointer<actomaton_manifest>) throws(PluginManifestError) -> PluginManifest {
        let manifest = fields(of: pointer)
        var source = CManifestSource(manifest: manifest)
        return try ManifestValidator.read(&source, abiVersion: manifest.abi_version)
    }

    /// A copy of the manifest at `pointer` (its ABI version already checked), made of the
    /// bytes its version has and zeros after them: the fields a version-1 manifest lacks
    /// (`diagram`, `active`) are `NULL` in the copy, and nothing past its end is read.
    public static func fields(of pointer: UnsafePointer<actomaton_manifest>) -> actomaton_manifest {
        let version = UnsafeRawPointer(pointer).load(as: UInt32.self)
        var manifest = actomaton_manifest()
        withUnsafeMutableBytes(of: &manifest) { copy in
            copy.copyMemory(from: UnsafeRawBufferPointer(start: pointer, count: manifestSize(forABIVersion: version)))
        }
        return manifest
    }
}

/// The fields of an `actomaton_manifest` in this process's memory. Strings are read with
/// ``CString`` (never past the limit and one); tables only after their pointers are checked.
private struct CManifestSource: ManifestSource {
    let manifest: actomaton_manifest

    func text(_ field: ManifestField, limit: Int, what: String) throws(PluginManifestError) -> ManifestText {
        let pointer: UnsafePointer<CChar>?
        switch field {
        case .name: pointer = manifest.name
        case .version: pointer = manifest.version
        case .summary: pointer = manifest.summary
        case .diagram: pointer = manifest.diagram
        case let .actionName(action): pointer = manifest.actions![action].name
        case let .parameterName(action, parameter): pointer = manifest.actions![action].parameters![parameter].name
        case .actionCount, .parameterCount, .parameterType, .activeFunction: pointer = nil
        }
        do throws(CString.Problem) {
            guard let text = try CString.read(pointer, limit: limit) else { return .absent }
            return .text(text)
        } catch .tooLong {
            return .tooLong
        } catch {
            return .invalidUTF8
        }
    }

    func number(_ field: ManifestField, what: String) throws(PluginManifestError) -> UInt32 {
        switch field {
        case .actionCount: manifest.action_count
        case let .parameterCount(action): manifest.actions![action].parameter_count
        case let .parameterType(action, parameter): manifest.actions![action].parameters![parameter].type
        case .activeFunction: manifest.active == nil ? 0 : 1
        case .name, .version, .summary, .actionName, .parameterName, .diagram: 0
        }
    }

    func checkOwnRules() throws(PluginManifestError) {
        guard manifest.create != nil else { throw .invalid("the function `create` is missing") }
        guard manifest.destroy != nil else { throw .invalid("the function `destroy` is missing") }
        guard manifest.snapshot != nil else { throw .invalid("the function `snapshot` is missing") }
        guard manifest.restore != nil else { throw .invalid("the function `restore` is missing") }
        guard manifest.describe != nil else { throw .invalid("the function `describe` is missing") }
    }

    func willReadActions(count: Int) throws(PluginManifestError) {
        guard manifest.actions != nil else { throw .invalid("action_count is \(count) but actions is NULL") }
    }

    func willReadParameters(ofAction index: Int, named name: String, count: Int) throws(PluginManifestError) {
        let action = manifest.actions![index]
        guard action.entry != nil else { throw .invalid("action '\(name)' has no entry point") }
        guard count == 0 || action.parameters != nil else {
            throw .invalid("action '\(name)' has parameter_count \(count) but parameters is NULL")
        }
    }
}
