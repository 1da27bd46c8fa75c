import ActomatonPluginContract

/// Why a plugin file could not be loaded or reloaded: the file, the library, its manifest, or
/// its first state.
///
/// Its description is the one line the CLI prints after `error: `, written for someone who has
/// never seen the project, e.g.
/// `/srv/plugins/x.so: plugin ABI version 3 is not supported (this host speaks versions 1 to 2)`.
/// Whatever the error, nothing changed: no plugin state, no other plugin; on a reload the
/// machine goes on with the version it had.
public struct PluginLoadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The plugin file, as given.
    public var path: String
    /// What went wrong.
    public var reason: Reason

    /// Creates an error.
    public init(_ reason: Reason, at path: String) {
        self.path = path
        self.reason = reason
    }

    /// `path: reason`.
    public var description: String { "\(path): \(reason)" }

    /// Whether the load may succeed later with nothing changed: it failed for the memory the
    /// host's other `.wasm` instances held (``WasmMemoryBudget``).
    public var passes: Bool {
        switch reason {
        case .wasmMemoryTotalReached: true
        case let .journal(error): if case .recoveryPostponed = error.reason { true } else { false }
        case let .stateNotCarriedOver(call): if case .wasmMemoryTotalReached = call { true } else { false }
        default: false
        }
    }

    /// What went wrong while loading.
    public enum Reason: Error, Sendable, Hashable, CustomStringConvertible {
        /// The path names no file (or a symbolic link to none).
        case fileNotFound
        /// The path names something other than a regular file: a directory, a FIFO, a device.
        case notARegularFile(kind: String)
        /// The file could not be opened or read; the system's message.
        case unreadable(String)
        /// The file belongs to a user other than root and the user running the host.
        case untrustedOwner(uid: UInt32)
        /// The file is writable by users other than its owner; refused unless allowed.
        case writableByOthers(mode: UInt32)
        /// A directory on the way to the file can be written by others without the sticky bit
        /// protecting it (or belongs to an untrusted user); refused unless allowed.
        case untrustedDirectory(String, why: String)
        /// The file is larger than the host's limit.
        case tooLarge(size: Int64, limit: Int64)
        /// The file does not start with an ELF header.
        case notELF
        /// `dlopen` refused the file; its message.
        case notASharedLibrary(String)
        /// The library does not export the entry symbol.
        case missingEntrySymbol(String)
        /// The entry symbol returned `NULL`.
        case noManifest
        /// The manifest was built for another ABI version, or breaks a rule of the contract.
        case manifest(PluginManifestError)
        /// The plugin's state could not be read from the journal.
        case journal(PluginJournalError)
        /// libffi could not prepare a call or a closure.
        case libffi(String)
        /// The plugin's `create` returned `NULL`.
        case stateCreationFailed
        /// A plugin of the same name is already loaded, from another file.
        case duplicateName(String, loadedFrom: String)
        /// The file, or another plugin of the same name, is being loaded right now.
        case alreadyLoading
        /// A reload found a plugin of another name in the file.
        case renamed(from: String, to: String)
        /// The worker process that was loading the plugin failed: it crashed, exited, hung,
        /// broke the protocol, or could not be started.
        case workerFailed(String)
        /// The worker reported the load error (its one-line description).
        case reportedByWorker(String)
        /// A reload could not carry the state over: the old version's snapshot or the new
        /// version's restore failed.
        case stateNotCarriedOver(PluginCallError.Reason)
        /// A `.wasm` module the host cannot run: invalid, an import it does not provide, an
        /// export missing or of the wrong signature.
        case wasm(String)
        /// A `.wasm` instance could not be made: the host's instances already hold too much of
        /// the memory they may have together, `limit` bytes (``WasmMemoryBudget``).
        case wasmMemoryTotalReached(limit: Int)

        /// The reason, as one line.
        public var description: String {
            switch self {
            case .fileNotFound:
                return "no such file"
            case let .notARegularFile(kind):
                return "not a regular file (it is \(kind))"
            case let .unreadable(message):
                return "cannot read the file: \(message)"
            case let .untrustedOwner(uid):
                return "refusing to load a plugin file owned by another user (uid \(uid)): "
                    + "its owner could change the code the host runs; it must belong to root or to the user running the host"
            case let .writableByOthers(mode):
                return "refusing to load a plugin file that other users can write (mode \(octal(mode))); "
                    + "run `chmod go-w` on it, or pass --allow-writable to load it anyway"
            case let .untrustedDirectory(directory, why):
                return "refusing to load a plugin from a directory others can change: \(directory) \(why); "
                    + "move the plugin to a directory only you and root can write, or pass --allow-writable to load it anyway"
            case let .tooLarge(size, limit):
                return "the file is \(size) bytes, more than the limit of \(limit) bytes (--max-plugin-size raises it)"
            case .notELF:
                return "not a shared library this host can load (it is not an ELF file)"
            case let .notASharedLibrary(message):
                return "not a shared library this host can load (\(message))"
            case let .missingEntrySymbol(symbol):
                return "no entry symbol `\(symbol)`: this shared library is not an Actomaton plugin"
            case .noManifest:
                return "the plugin's entry symbol returned no manifest"
            case let .manifest(error):
                return error.description
            case let .journal(error):
                return "its state cannot be brought back from the journal: \(error)"
            case .alreadyLoading:
                return "not loaded: this file, or a plugin of the same name, is being loaded right now"
            case let .libffi(message):
                return "libffi: \(message)"
            case .stateCreationFailed:
                return "the plugin could not create its state (create returned NULL)"
            case let .duplicateName(name, otherPath):
                return "a plugin named '\(name)' is already loaded from \(otherPath)"
            case let .renamed(old, new):
                return "invalid manifest: the new version is named '\(new)', not '\(old)'"
            case let .workerFailed(cause):
                return "the plugin's worker process \(cause) while loading it"
            case let .reportedByWorker(message):
                return message
            case let .wasm(message):
                return message
            case let .wasmMemoryTotalReached(limit):
                return "cannot instantiate the module: \(WasmMemoryBudget.reachedPhrase(limit: limit))"
            case let .stateNotCarriedOver(reason):
                return "not reloaded, the running version goes on: \(reason)"
            }
        }
    }
}

/// A file mode's permission bits as `chmod` takes them: `757`, `1777`.
func octal(_ mode: UInt32) -> String {
    String(mode & 0o7777, radix: 8)
}
