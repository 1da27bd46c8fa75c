import ActomatonHost

/// What is wrong with a file the service reads at start (its tokens, its certificate chain,
/// its private key), in words that name that file: the checks are a plugin file's
/// (``TrustedFile``), whose own words said "refusing to load a plugin file" of a key.
enum ServiceFileProblem {
    /// `reason`, said of `file` (`the tokens file`, `the private key`).
    static func describe(_ reason: PluginLoadError.Reason, of file: String) -> String {
        switch reason {
        case .untrustedOwner(let uid):
            "\(file) belongs to another user (uid \(uid)); it must belong to root or to the user running the host"
        case .writableByOthers:
            "other users can write \(file); run `chmod 600` on it"
        case let .untrustedDirectory(directory, why):
            "\(file) is in a directory others can change: \(directory) \(why)"
        case let .tooLarge(size, limit):
            "\(file) is \(size) bytes, more than the limit of \(limit) bytes"
        default:
            reason.description
        }
    }
}
