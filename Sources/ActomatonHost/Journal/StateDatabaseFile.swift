import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A state database's files, judged before SQLite opens any of them, and the lock that lets one
/// host at a time use the database.
///
/// The rules, those of plugin files (``FileTrust``) made stricter for a file the host writes:
///
/// 1. Every directory from `/` down to the database belongs to root or to the user running the
///    host, and none can be written by group or others unless its sticky bit is set.
/// 2. The database, and its `-wal`, `-shm` and `-journal` files when they exist, are regular
///    files — not symbolic links — that belong to the user running the host (or to root, for
///    reading only) and that group and others cannot write.
/// 3. A non-empty `-wal` file beside a missing or empty database is refused: it is another
///    database's log, or what is left of one.
/// 4. Writing takes an exclusive `flock` on the database, held until ``release()``: a second
///    host (another process, or another journal in this one) is refused at once.
///
/// All of this happens before SQLite opens the file, so a refused database is never written.
final class StateDatabaseFile: @unchecked Sendable {
    /// The databases this process holds, by device and inode: a second journal on one of them is
    /// refused without opening the file (closing any descriptor of a file drops every POSIX
    /// lock this process holds on it — SQLite's included).
    private static let held = Mutex<Set<FileKey>>([])

    private struct FileKey: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    /// The descriptor the lock is taken on.
    let descriptor: Int32
    private let key: FileKey

    private init(descriptor: Int32, key: FileKey) {
        self.descriptor = descriptor
        self.key = key
    }

    /// The companion files SQLite keeps beside a database.
    static let companionSuffixes = ["-wal", "-shm", "-journal"]

    /// Judges `path` and its companions for reading only (rules 1–3); the database must exist.
    static func vetForReading(_ path: String) throws(PluginJournalError.Reason) {
        try vet(path, owners: { FileTrust.isTrusted(owner: $0) })
        var info = stat()
        guard lstat(path, &info) == 0 else { throw .unreadable(errno == ENOENT ? "no such file" : systemMessage(errno)) }
        guard info.st_size > 0 else { throw .emptyFile }
    }

    /// Judges `path` for writing (rules 1–3), creates it (mode 0600) when missing, and takes the
    /// lock (rule 4).
    static func lockForWriting(_ path: String) throws(PluginJournalError.Reason) -> StateDatabaseFile {
        try vet(path, owners: { $0 == geteuid() })
        var before = stat()
        if stat(path, &before) == 0 {
            let key = FileKey(device: UInt64(before.st_dev), inode: UInt64(before.st_ino))
            if held.withLock({ $0.contains(key) }) { throw .inUse }
        }
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0o600)
        guard descriptor >= 0 else { throw .unreadable(systemMessage(errno)) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let message = systemMessage(errno)
            close(descriptor)
            throw .unreadable(message)
        }
        // Judged again on what was opened: the file may have been swapped since `vet`.
        if let why = whyUntrusted(info, owners: { $0 == geteuid() }) {
            close(descriptor)
            throw .untrustedFile(path, why: why)
        }
        let key = FileKey(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        let claimed = held.withLock { $0.insert(key).inserted }
        guard claimed else {
            // Another journal of this process holds it: this descriptor must stay open (see
            // `held`), so it is leaked deliberately rather than closed.
            throw .inUse
        }
        do throws(Errno) {
            try SystemCall.flock(descriptor, LOCK_EX | LOCK_NB)
        } catch {
            held.withLock { _ = $0.remove(key) }
            SystemCall.close(descriptor)
            throw error == .wouldBlock ? .inUse : .unreadable("cannot lock it: \(error)")
        }
        return StateDatabaseFile(descriptor: descriptor, key: key)
    }

    /// What became of the file at `path` since it was locked, when it is no longer the locked
    /// one: deleted, or replaced by another (renamed over it). `nil` while it is. A host whose
    /// database was removed under it went on committing into a file nothing could open again,
    /// and a second host could lock a new one at the same path.
    ///
    /// Also checks the write-ahead log: `log` is its key as first seen (set here when `nil` and
    /// the log exists), and a log deleted or replaced since loses what it held at the next
    /// crash.
    func problem(at path: String, log: inout (device: UInt64, inode: UInt64)?) -> (text: String, log: Bool)? {
        var named = stat()
        guard stat(path, &named) == 0 else { return ("it was deleted while the host ran (\(systemMessage(errno)))", false) }
        guard FileKey(device: UInt64(named.st_dev), inode: UInt64(named.st_ino)) == key else {
            return ("another file was put in its place while the host ran", false)
        }
        var wal = stat()
        let walExists = stat(path + "-wal", &wal) == 0
        if let known = log {
            guard walExists, UInt64(wal.st_dev) == known.device, UInt64(wal.st_ino) == known.inode else {
                return ("its write-ahead log (\(path)-wal) was deleted or replaced while the host ran", true)
            }
        } else if walExists {
            log = (UInt64(wal.st_dev), UInt64(wal.st_ino))
        }
        return nil
    }

    /// Drops the lock; call after the SQLite connection is closed.
    ///
    /// The key leaves the registry before the descriptor is closed: once closed, the file's
    /// inode can be reused at once by a new file (this one was deleted), which must not be
    /// found "in use" in between.
    ///
    /// The lock is dropped before the descriptor is closed: a child process forked meanwhile by
    /// another thread holds a copy of the descriptor until it execs, and closing this one alone
    /// would leave the file locked until then (a journal opened again at once was refused).
    func release() {
        Self.held.withLock { _ = $0.remove(key) }
        _ = flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    private static func vet(_ path: String, owners: (uid_t) -> Bool) throws(PluginJournalError.Reason) {
        let absolute = path.hasPrefix("/") ? path : currentDirectory() + "/" + path
        let slash = absolute.lastIndex(of: "/")!
        let parent = slash == absolute.startIndex ? "/" : String(absolute[..<slash])
        guard let resolvedParent = realpath(parent, nil) else {
            throw .unreadable("\(parent): \(systemMessage(errno))")
        }
        let directory = String(cString: resolvedParent)
        free(resolvedParent)
        let name = String(absolute[absolute.index(after: slash)...])
        if let (untrusted, why) = FileTrust.untrustedDirectory(holding: (directory == "/" ? "" : directory) + "/" + name) {
            throw .untrustedDirectory(untrusted, why: why)
        }
        var databaseSize: Int64 = 0
        for suffix in [""] + companionSuffixes {
            var info = stat()
            guard lstat(path + suffix, &info) == 0 else { continue }
            if let why = whyUntrusted(info, owners: owners) { throw .untrustedFile(path + suffix, why: why) }
            if suffix.isEmpty { databaseSize = Int64(info.st_size) }
            if suffix == "-wal" && info.st_size > 0 && databaseSize == 0 { throw .orphanedLog(path + suffix) }
        }
    }

    /// Why a file with `info` cannot be trusted as (part of) a state database, or `nil`.
    private static func whyUntrusted(_ info: stat, owners: (uid_t) -> Bool) -> String? {
        if info.st_mode & S_IFMT == S_IFLNK { return "it is a symbolic link (name the database file itself)" }
        if info.st_mode & S_IFMT != S_IFREG { return "it is \(fileKind(info.st_mode)), not a regular file" }
        if !owners(info.st_uid) { return "it belongs to another user (uid \(info.st_uid))" }
        if info.st_mode & (S_IWGRP | S_IWOTH) != 0 {
            return "it can be written by \(info.st_mode & S_IWOTH != 0 ? "every user" : "its group") (mode \(octal(UInt32(info.st_mode))))"
        }
        // SQLite finds a database's write-ahead log by its name: under another name, what the
        // log holds (acknowledged actions) would be missed, and a second host not locked out.
        if info.st_nlink > 1 { return "it has \(info.st_nlink) names (hard links)" }
        return nil
    }

    private static func currentDirectory() -> String {
        guard let buffer = getcwd(nil, 0) else { return "." }
        defer { free(buffer) }
        return String(cString: buffer)
    }
}
