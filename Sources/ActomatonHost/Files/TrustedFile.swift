#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A small file other layers read with the checks a plugin file gets (``Plugin/load(path:options:)``):
/// links resolved; every directory down to it, and the file itself, owned by root or by the user
/// running the host and not writable by group or others; a regular file; at most `maxSize` bytes.
///
/// The service's tokens file is read this way, so whoever can change it is someone who could
/// change the plugins too.
public enum TrustedFile {
    /// The bytes of the file at `path` after the checks above, and its permission bits
    /// (`st_mode & 0o7777`), so the caller can refuse a file others can read.
    ///
    /// Throws a ``PluginLoadError`` whose ``PluginLoadError/reason`` says which check failed.
    public static func read(_ path: String, maxSize: Int64) throws(PluginLoadError) -> (bytes: [UInt8], permissions: UInt32) {
        let (bytes, _) = try PluginFile.readVetted(path, options: Plugin.LoadOptions(maxFileSize: maxSize))
        var info = stat()
        guard stat(path, &info) == 0 else { throw PluginLoadError(.unreadable(systemMessage(errno)), at: path) }
        return (bytes, UInt32(info.st_mode) & 0o7777)
    }
}
