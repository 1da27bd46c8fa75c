#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The plugin files of a directory: its `*.so` and `*.wasm` files, hidden files skipped — what
/// `serve` loads, read in one place for the command line and the network service.
public struct PluginDirectory: Sendable, Hashable {
    /// The plugin files' paths, sorted.
    public var paths: [String]
    /// The plugin files that cannot be loaded because their names are not UTF-8 (a path is
    /// text to the host): each path with the bad bytes shown as `\xHH`, sorted.
    public var pathsNotUTF8: [String]

    /// The line that says why a file in ``pathsNotUTF8`` is skipped.
    public static func skipped(_ path: String) -> String {
        "\(path): skipped: its name is not valid UTF-8; rename it to load it"
    }

    /// Lists `directory`; throws, with the system's reason, when it cannot be read.
    public static func read(_ directory: String) throws(PluginHostError) -> PluginDirectory {
        guard let stream = opendir(directory) else {
            let code = errno
            throw .directoryUnreadable(directory, reason: code == ENOENT ? "no such directory"
                                       : code == ENOTDIR ? "not a directory" : String(cString: strerror(code)))
        }
        defer { closedir(stream) }
        var listing = PluginDirectory(paths: [], pathsNotUTF8: [])
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        while let entry = readdir(stream) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            let shown = TerminalText.decoding(bytes)
            guard shown.hasSuffix(".so") || shown.hasSuffix(".wasm"), !shown.hasPrefix(".") else { continue }
            if String(validating: bytes, as: UTF8.self) == nil {
                listing.pathsNotUTF8.append(prefix + shown)
            } else {
                listing.paths.append(prefix + shown)
            }
        }
        listing.paths.sort()
        listing.pathsNotUTF8.sort()
        return listing
    }
}
