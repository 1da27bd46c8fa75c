/// Why a plugin's manifest was refused: it breaks a rule of the contract in `actomaton_plugin.h`.
public enum PluginManifestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The manifest was built for an ABI version the host does not accept (it accepts
    /// ``ManifestReader/oldestSupportedABIVersion`` to `supported`); nothing after the version
    /// was read.
    case unsupportedABIVersion(found: UInt32, supported: UInt32)
    /// The manifest breaks a rule of the contract: which one, and where.
    case invalid(String)

    /// The reason, one line.
    public var description: String {
        switch self {
        case let .unsupportedABIVersion(found, supported):
            supported > ManifestReader.oldestSupportedABIVersion
                ? "plugin ABI version \(found) is not supported (this host speaks versions \(ManifestReader.oldestSupportedABIVersion) to \(supported))"
                : "plugin ABI version \(found) is not supported (this host speaks \(supported))"
        case let .invalid(message): "invalid manifest: \(message)"
        }
    }
}
