#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A plugin file, vetted and copied to a private place before `dlopen` sees it.
///
/// The checks and the copy read the same open file descriptor, so the file cannot be swapped
/// between them. The private copy has a name no other load used: the dynamic loader reuses a
/// library already loaded under the same name, so loading a replaced file by its own path
/// would give back the old code. The copy (and its directory) is removed as soon as it is mapped.
enum PluginFile {

    /// Reads `path` and writes a private copy; returns the copy's path.
    ///
    /// - Parameter allowWritableByOthers: Loads a file that group or other users can write,
    ///   which is refused by default: whoever can write it can run code in the host.
    static func makePrivateCopy(of path: String, allowWritableByOthers: Bool) throws(PluginError) -> (copy: String, identity: FileIdentity) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw PluginError(.fileNotFound, at: path) }
            throw PluginError(.unreadable(systemMessage(code)), at: path)
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw PluginError(.unreadable(systemMessage(errno)), at: path) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw PluginError(.notARegularFile, at: path) }
        if !allowWritableByOthers && info.st_mode & (S_IWGRP | S_IWOTH) != 0 {
            throw PluginError(.writableByOthers(mode: UInt32(info.st_mode)), at: path)
        }
        let bytes = try readAll(descriptor, path: path)
        guard bytes.count >= 4, bytes[0] == 0x7F, bytes[1] == 0x45, bytes[2] == 0x4C, bytes[3] == 0x46 else {
            throw PluginError(.notASharedLibrary("it is not an ELF file"), at: path)
        }
        let copy = try privatePath(for: path)
        let output = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o500)
        guard output >= 0 else {
            removePrivateCopy(copy)
            throw PluginError(.unreadable("cannot write a private copy: \(systemMessage(errno))"), at: path)
        }
        defer { close(output) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(output, $0.baseAddress! + written, bytes.count - written) }
            guard n > 0 else {
                removePrivateCopy(copy)
                throw PluginError(.unreadable("cannot write a private copy: \(systemMessage(errno))"), at: path)
            }
            written += n
        }
        return (copy, FileIdentity(info))
    }

    /// The identity of the file at `path` now, or `nil` if there is none.
    static func identity(of path: String) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileIdentity(info)
    }

    private static func readAll(_ descriptor: Int32, path: String) throws(PluginError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw PluginError(.unreadable(systemMessage(errno)), at: path)
            }
            if n == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<n])
        }
    }

    /// A path for the private copy of `path`, in a new directory only this user can read.
    private static func privatePath(for path: String) throws(PluginError) -> String {
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(base)/actomaton-host-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw PluginError(.unreadable("cannot make a private directory in \(base): \(systemMessage(errno))"), at: path)
        }
        let name = path.split(separator: "/").last.map(String.init) ?? "plugin.so"
        let directory = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return directory + "/" + name
    }

    /// Removes a private copy and its directory, once the library is mapped (or failed to).
    static func removePrivateCopy(_ copy: String) {
        unlink(copy)
        if let slash = copy.lastIndex(of: "/") { rmdir(String(copy[..<slash])) }
    }
}

/// Identifies one version of a file: replacing or rewriting it changes the identity.
struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: Int64
    let modifiedNanoseconds: Int64

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int64(info.st_mtim.tv_nsec)
    }
}

/// The system's message for an `errno` value.
func systemMessage(_ code: Int32) -> String {
    String(cString: strerror(code))
}
