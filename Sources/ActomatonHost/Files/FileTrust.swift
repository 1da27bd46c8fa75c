#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The ownership rules plugin files and state databases share: the rules sshd's `StrictModes`
/// applies to `authorized_keys`.
enum FileTrust {
    /// Root and the user running the host.
    static func isTrusted(owner: uid_t) -> Bool {
        owner == 0 || owner == geteuid()
    }

    /// The first directory from `/` down to the one holding `resolved` (an absolute path without
    /// links) that another user could change, and why; `nil` when every one belongs to root or
    /// to the user running the host and none can be written by group or others (unless its
    /// sticky bit is set: others then cannot rename or replace a file they do not own).
    static func untrustedDirectory(holding resolved: String) -> (directory: String, why: String)? {
        var directory = resolved
        while let slash = directory.lastIndex(of: "/") {
            directory = slash == directory.startIndex ? "/" : String(directory[..<slash])
            var info = stat()
            guard lstat(directory, &info) == 0 else { return (directory, systemMessage(errno)) }
            guard isTrusted(owner: info.st_uid) else {
                return (directory, "belongs to another user (uid \(info.st_uid))")
            }
            if info.st_mode & (S_IWGRP | S_IWOTH) != 0 && info.st_mode & S_ISVTX == 0 {
                return (directory, "can be written by \(info.st_mode & S_IWOTH != 0 ? "every user" : "its group") (mode \(octal(UInt32(info.st_mode))))")
            }
            if directory == "/" { return nil }
        }
        return nil
    }
}
