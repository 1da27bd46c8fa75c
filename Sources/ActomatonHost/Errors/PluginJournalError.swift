/// Why a state database (`--state`) cannot be used: the host never starts empty over one it
/// cannot read.
public struct PluginJournalError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The database file.
    public var path: String
    /// What is wrong.
    public var reason: Reason

    /// Creates an error.
    public init(_ reason: Reason, at path: String) {
        self.reason = reason
        self.path = path
    }

    /// What is wrong with a state database.
    public enum Reason: Error, Sendable, Hashable, CustomStringConvertible {
        /// SQLite cannot open or read it: its message.
        case unreadable(String)
        /// It is a SQLite database, but not one of this host's.
        case notAStateDatabase
        /// Read only: the file is empty; no host has written to it (one opened for writing
        /// starts a new state database in it).
        case emptyFile
        /// A newer host wrote it, in a format this one does not know.
        case newerFormat(found: Int64, supported: Int64)
        /// SQLite's integrity check failed: its first finding.
        case corrupt(String)
        /// A record cannot be read (an argument's encoding).
        case badRecord(String)
        /// Writing failed: SQLite's message. Nothing after the last durable record is
        /// acknowledged, and the journal refuses every later record.
        case writeFailed(String)
        /// Another host (another process, or another journal in this one) is using the database.
        case inUse
        /// The database, or one of its `-wal`, `-shm` and `-journal` files, is not a file this
        /// host can trust: a link, not a regular file, another user's, or writable by others.
        case untrustedFile(String, why: String)
        /// A directory on the way to the database can be changed by another user.
        case untrustedDirectory(String, why: String)
        /// A write-ahead log lies beside a missing or empty database.
        case orphanedLog(String)
        /// The journal was closed.
        case closed
        /// Another host owns the name now (its lease was taken over): this host's record for
        /// it was not written.
        case fenced(String)
        /// The plugin refused every snapshot the journal keeps of the name (the newest
        /// refusal), and the actions before them were pruned: its state cannot be brought
        /// back, and the host does not start it over a new one, which would lose its
        /// `unreplayed` journaled actions and journal the next ones after them.
        case stateLost(String, refusal: String, unreplayed: Int)
        /// The name's state could not be brought back now, for a reason that passes (`cause`:
        /// the host's `.wasm` instances held too much memory for its snapshot or an action's
        /// replay). Nothing was skipped: the next recovery replays the same records.
        indirect case recoveryPostponed(String, cause: PluginCallError.Reason)

        /// The reason, one line.
        public var description: String {
            switch self {
            // Said of a read too (a receipt, a recovery), not only of opening the file.
            case let .unreadable(message): "cannot open or read the state database: \(message)"
            case .notAStateDatabase: "not a state database of actomaton-host (another application's SQLite file); refusing to use it"
            case .emptyFile: "the file is empty: no host has written a state database to it yet"
            case let .newerFormat(found, supported):
                "the state database was written by a newer actomaton-host (format \(found); this host reads format \(supported)); refusing to use it"
            case let .corrupt(finding): "the state database is corrupt (\(finding)); refusing to start over it — restore it from a backup, or move it away to start empty"
            case let .badRecord(what): "the state database holds a record this host cannot read: \(what)"
            case let .writeFailed(message): "cannot write the state database: \(message)"
            case .inUse: "another actomaton-host is using this state database (one host per state database); refusing to start"
            case let .untrustedFile(file, why):
                "refusing \(file): \(why); a state database and its -wal, -shm and -journal files must be regular files, "
                    + "each with one name, of the user running the host, that no one else can write"
            case let .untrustedDirectory(directory, why): "refusing the state database: the directory \(directory) \(why)"
            case let .orphanedLog(file):
                "\(file) is a write-ahead log without its database (another database's, or what is left of one); refusing to start "
                    + "over it — move it away to start empty"
            case .closed: "the state database is closed"
            case let .fenced(name): "another host owns \(name) now (this host's lease on it was taken over); the record was not written"
            case let .stateLost(name, refusal, unreplayed):
                "\(name) cannot be brought back: the plugin refused every snapshot the journal keeps (the newest, \(refusal)) and the "
                    + "actions before them were pruned; refusing to start it over a new state, which would lose its \(unreplayed) "
                    + "journaled actions — load the plugin's version that wrote the snapshots, or fix its restore"
            case let .recoveryPostponed(name, cause):
                "\(name) cannot be brought back now, nothing skipped (a later try replays the same records): \(cause)"
            }
        }
    }

    /// `path: reason`.
    public var description: String { "\(path): \(reason)" }

    /// `path: reason`, as a command that only reads the database says it: without the advice
    /// on starting over, which it never does.
    public var readingDescription: String {
        if case let .corrupt(finding) = reason { return "\(path): the state database is corrupt (\(finding))" }
        return description
    }
}
