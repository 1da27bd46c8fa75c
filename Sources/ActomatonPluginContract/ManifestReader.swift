import ActomatonPluginABI

/// Reads a plugin's C manifest into a ``PluginManifest``, checking every rule of the contract
/// (with ``ManifestValidator``) before trusting a value: a manifest comes from code the host
/// does not control.
///
/// The ABI version is checked first and alone (``checkABIVersion(_:)``): when it differs,
/// the layout of everything after it may differ too, so nothing else is read.
public enum ManifestReader {
    /// The version of the contract this host speaks.
    public static let supportedABIVersion = UInt32(ACTOMATON_PLUGIN_ABI_VERSION)

    /// Reads only the manifest's first field, the ABI version, and checks it.
    public static func checkABIVersion(_ manifest: UnsafeRawPointer) throws(PluginManifestError) {
        let found = manifest.load(as: UInt32.self)
        guard found == supportedABIVersion else {
            throw .unsupportedABIVersion(found: found, supported: supportedABIVersion)
        }
    }

    /// Reads and validates the whole manifest; the ABI version must already be checked.
    public static func read(_ pointer: UnsafePointer<actomaton_manifest>) throws(PluginManifestError) -> PluginManifest {
        var source = CManifestSource(manifest: pointer.pointee)
        return try ManifestValidator.read(&source, abiVersion: pointer.pointee.abi_version)
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
        case let .actionName(action): pointer = manifest.actions![action].name
        case let .parameterName(action, parameter): pointer = manifest.actions![action].parameters![parameter].name
        case .actionCount, .parameterCount, .parameterType: pointer = nil
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
        case .name, .version, .summary, .actionName, .parameterName: 0
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
