import CProcessControl
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A plugin file, vetted and copied to a private place before `dlopen` sees it.
///
/// The rules, checked in this order on the file a symbolic link finally points to:
///
/// 1. Every directory from `/` down to the file belongs to root or to the user running the
///    host, and none can be written by group or others unless its sticky bit is set (then
///    others cannot rename or replace a file they do not own). These are the rules sshd's
///    `StrictModes` applies to `authorized_keys`.
/// 2. The file is opened once, without blocking (`O_NONBLOCK`): a FIFO, a device or a
///    directory is refused at once, from `fstat` on that descriptor.
/// 3. The file belongs to root or to the user running the host, and group and others cannot
///    write it.
/// 4. It is at most ``Plugin/LoadOptions/maxFileSize`` bytes.
/// 5. Its first bytes are an ELF header of a shared library for this machine.
///
/// `allowUntrustedFiles` skips 1 and 3 (`--allow-writable`). The checks and the copy read the
/// same open file descriptor, so the file cannot be swapped between them; the copy is made in
/// chunks and stops at the size limit even if the file grows meanwhile. The private copy has a
/// name no other load used: the dynamic loader reuses a library already loaded under the same
/// name, so loading a replaced file by its own path would give back the old code. The copy
/// (and its directory) is removed as soon as it is mapped, or on any error. In a worker, which may
/// write no file, the copy is an anonymous memory file instead (``copiesInMemory``).
enum PluginFile {
    /// Whether private copies are anonymous memory files, loaded as `/proc/self/fd/N`, rather
    /// than files in a new directory of `TMPDIR`: a worker's, whose Landlock domain lets it write
    /// no file. Such a copy stays open for the life of the process: the dynamic loader knows a
    /// library by its path, which must never name another copy later.
    static let copiesInMemory = Atomic<Bool>(false)

    /// Vets `path` and writes a private copy; returns the copy's path and the file's identity.
    static func makePrivateCopy(of path: String, options: Plugin.LoadOptions) throws(PluginLoadError) -> (copy: String, identity: FileIdentity) {
        do {
            return try copy(path, options: options)
        } catch {
            throw PluginLoadError(error, at: path)
        }
    }

    /// Whether the file at `path` starts with the WebAssembly magic number (it is not vetted
    /// here: loading it is).
    static func isWasm(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var magic = [UInt8](repeating: 0, count: 4)
        return (try? readFully(descriptor, into: &magic)) == 4 && WasmPluginModule.isWasm(magic)
    }

    /// Vets `path` as ``makePrivateCopy(of:options:)`` does and returns the file's bytes (a
    /// `.wasm` module is read, not mapped).
    static func readVetted(_ path: String, options: Plugin.LoadOptions) throws(PluginLoadError) -> (bytes: [UInt8], identity: FileIdentity) {
        do {
            let (descriptor, info) = try openVetted(path, options: options)
            defer { close(descriptor) }
            var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
            let count = try readFully(descriptor, into: &bytes)
            return (Array(bytes[..<count]), FileIdentity(info))
        } catch {
            throw PluginLoadError(error, at: path)
        }
    }

    /// Opens `path` after the checks above (links resolved, directories, owner, mode, size).
    private static func openVetted(_ path: String, options: Plugin.LoadOptions) throws(PluginLoadError.Reason) -> (Int32, stat) {
        let resolved = try resolve(path)
        if !options.allowWritableByOthers { try checkDirectories(of: resolved) }

        let descriptor = open(resolved, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw .fileNotFound }
            throw .unreadable(systemMessage(code))
        }
        var info = stat()
        do throws(PluginLoadError.Reason) {
            guard fstat(descriptor, &info) == 0 else { throw PluginLoadError.Reason.unreadable(systemMessage(errno)) }
            guard info.st_mode & S_IFMT == S_IFREG else { throw PluginLoadError.Reason.notARegularFile(kind: fileKind(info.st_mode)) }
            if !options.allowWritableByOthers {
                guard isTrusted(owner: info.st_uid) else { throw PluginLoadError.Reason.untrustedOwner(uid: UInt32(info.st_uid)) }
                guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else { throw PluginLoadError.Reason.writableByOthers(mode: UInt32(info.st_mode)) }
            }
            guard Int64(info.st_size) <= options.maxFileSize else {
                throw PluginLoadError.Reason.tooLarge(size: Int64(info.st_size), limit: options.maxFileSize)
            }
        } catch {
            close(descriptor)
            throw error
        }
        return (descriptor, info)
    }

    private static func copy(_ path: String, options: Plugin.LoadOptions) throws(PluginLoadError.Reason) -> (copy: String, identity: FileIdentity) {
        let (descriptor, info) = try openVetted(path, options: options)
        defer { close(descriptor) }

        var header = [UInt8](repeating: 0, count: ELFHeader.size)
        let headerLength = try readFully(descriptor, into: &header)
        try ELFHeader.check(header[0..<headerLength])

        let table = try ELFHeader.programHeaderTable(header)
        let (copy, output) = try makeCopy(of: path)
        do {
            defer { if !copy.hasPrefix(memoryCopyPrefix) { SystemCall.close(output) } }
            try write(header[0..<headerLength], andRestOf: descriptor, to: output, limit: options.maxFileSize)
        } catch {
            removePrivateCopy(copy)
            throw error
        }
        do {
            try checkSegments(of: copy, table: table)
        } catch {
            removePrivateCopy(copy)
            throw error
        }
        return (copy, FileIdentity(info))
    }

    /// Checks that the segments of the private `copy` — the bytes that are mapped — lie within it.
    private static func checkSegments(of copy: String, table: (offset: UInt64, length: Int)) throws(PluginLoadError.Reason) {
        let descriptor: Int32
        do throws(Errno) {
            descriptor = try SystemCall.open(copy, O_RDONLY | O_CLOEXEC)
        } catch {
            throw .unreadable("cannot read the private copy: \(error)")
        }
        defer { SystemCall.close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .unreadable(systemMessage(errno)) }
        let size = UInt64(info.st_size)
        var bytes = [UInt8](repeating: 0, count: table.length)
        if table.offset < size, lseek(descriptor, off_t(table.offset), SEEK_SET) >= 0 {
            bytes.removeLast(table.length - (try readFully(descriptor, into: &bytes)))
        } else {
            bytes = []
        }
        guard bytes.count == table.length else {
            throw .notASharedLibrary("it is truncated: its program headers end past the file's \(size) bytes")
        }
        try ELFHeader.checkSegments(bytes, tableOffset: table.offset, fileSize: size)
    }

    /// The file a path finally names, with every symbolic link resolved.
    private static func resolve(_ path: String) throws(PluginLoadError.Reason) -> String {
        guard let resolved = realpath(path, nil) else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw .fileNotFound }
            throw .unreadable(systemMessage(code))
        }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Checks every directory from `/` down to the one holding `resolved` (an absolute path
    /// without links).
    private static func checkDirectories(of resolved: String) throws(PluginLoadError.Reason) {
        if let (directory, why) = FileTrust.untrustedDirectory(holding: resolved) { throw .untrustedDirectory(directory, why: why) }
    }

    private static func isTrusted(owner: uid_t) -> Bool { FileTrust.isTrusted(owner: owner) }

    /// Reads until `buffer` is full or the file ends; returns how many bytes were read.
    private static func readFully(_ descriptor: Int32, into buffer: inout [UInt8]) throws(PluginLoadError.Reason) -> Int {
        var filled = 0
        while filled < buffer.count {
            let n: Int
            do throws(Errno) {
                n = try buffer.withUnsafeMutableBytes { bytes in
                    Result { () throws(Errno) in try SystemCall.read(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: bytes[filled...])) }
                }.get()
            } catch {
                throw .unreadable(error.description)
            }
            if n == 0 { break }
            filled += n
        }
        return filled
    }

    /// Writes `head`, then the rest of `descriptor`, to `output`, in chunks; fails if the whole
    /// passes `limit` bytes (the file grew after `fstat`).
    private static func write(_ head: ArraySlice<UInt8>, andRestOf descriptor: Int32, to output: Int32, limit: Int64) throws(PluginLoadError.Reason) {
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var total = Int64(head.count)
        try writeAll(Array(head), count: head.count, to: output)
        while true {
            let n: Int
            do throws(Errno) {
                n = try chunk.withUnsafeMutableBytes { bytes in Result { () throws(Errno) in try SystemCall.read(descriptor, into: bytes) } }.get()
            } catch {
                throw .unreadable(error.description)
            }
            if n == 0 { return }
            total += Int64(n)
            guard total <= limit else { throw .tooLarge(size: total, limit: limit) }
            try writeAll(chunk, count: n, to: output)
        }
    }

    private static func writeAll(_ bytes: [UInt8], count: Int, to output: Int32) throws(PluginLoadError.Reason) {
        do throws(Errno) {
            try bytes.withUnsafeBytes { buffer in
                Result { () throws(Errno) in try SystemCall.writeAll(output, UnsafeRawBufferPointer(rebasing: buffer[..<count])) }
            }.get()
        } catch {
            throw .unreadable("cannot write a private copy: \(error)")
        }
    }

    /// The start of a memory copy's path.
    private static let memoryCopyPrefix = "/proc/self/fd/"

    /// A new private copy for `path`, empty: its path and a descriptor to write it. A memory
    /// file's descriptor is never closed (see ``copiesInMemory``).
    private static func makeCopy(of path: String) throws(PluginLoadError.Reason) -> (path: String, descriptor: Int32) {
        if copiesInMemory.load(ordering: .relaxed) {
            let descriptor = actomaton_memory_file("actomaton-plugin")
            guard descriptor >= 0 else { throw .unreadable("cannot make a private copy in memory: \(systemMessage(-descriptor))") }
            return (memoryCopyPrefix + "\(descriptor)", descriptor)
        }
        let copy = try privatePath(for: path)
        do throws(Errno) {
            return (copy, try SystemCall.open(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o500))
        } catch {
            removePrivateCopy(copy)
            throw .unreadable("cannot write a private copy: \(error)")
        }
    }

    /// A path for the private copy of `path`, in a new directory only this user can read.
    private static func privatePath(for path: String) throws(PluginLoadError.Reason) -> String {
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(base)/actomaton-host-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw .unreadable("cannot make a private directory in \(base): \(systemMessage(errno))")
        }
        let name = path.split(separator: "/").last.map(String.init) ?? "plugin.so"
        let directory = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return directory + "/" + name
    }

    /// Removes a private copy and its directory, once the library is mapped (or failed to).
    static func removePrivateCopy(_ copy: String) {
        guard !copy.hasPrefix(memoryCopyPrefix) else { return }
        unlink(copy)
        if let slash = copy.lastIndex(of: "/") { rmdir(String(copy[..<slash])) }
    }

    /// What `path` is when it exists and is not a regular file ("a directory"), else `nil`.
    static func kindUnlessRegular(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT != S_IFREG else { return nil }
        return fileKind(info.st_mode)
    }

    /// The identity of the file at `path` now, or of the link itself when it points nowhere;
    /// `nil` if there is nothing at `path`.
    static func identity(of path: String) -> FileIdentity? {
        var info = stat()
        if stat(path, &info) == 0 || lstat(path, &info) == 0 { return FileIdentity(info) }
        return nil
    }
}

/// What `st_mode` says a file is, for messages: "a directory", "a FIFO".
func fileKind(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFDIR: "a directory"
    case S_IFIFO: "a FIFO"
    case S_IFCHR: "a character device"
    case S_IFBLK: "a block device"
    case S_IFSOCK: "a socket"
    case S_IFLNK: "a symbolic link"
    default: "not a regular file"
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
