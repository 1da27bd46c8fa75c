/// Every plugin a host runs, each on its own ``PluginMachine``, addressed by name; what
/// `actomaton-host serve` is built on.
///
/// A bad plugin file is refused with an error and changes nothing: the plugins already loaded
/// keep running with their state. ``reloadChangedPlugins()`` reloads a plugin whose file was
/// replaced, carrying its state over through snapshot / restore.
public actor PluginHost {
    /// What a scan of the plugin files did.
    public enum Event: Sendable, Hashable, CustomStringConvertible {
        /// A plugin was loaded for the first time.
        case loaded(name: String, path: String)
        /// A replaced plugin file was reloaded, its state carried over.
        case reloaded(name: String, path: String)
        /// A plugin file could not be loaded or reloaded; what was running goes on unchanged.
        case failed(PluginLoadError)
        /// The plugin directory could not be read.
        case directoryUnreadable(PluginHostError)
        /// Something the journal held could not be brought back (see ``PluginMachine/recover()``).
        case journalReport(String)

        /// The line `serve` prints.
        public var description: String {
            switch self {
            case let .loaded(name, path): "loaded plugin \(name) from \(path)"
            case let .reloaded(name, path): "reloaded plugin \(name) from \(path), state carried over"
            case let .failed(error): "error: \(error)"
            case let .directoryUnreadable(error): "error: \(error)"
            case let .journalReport(line): "error: \(line)"
            }
        }
    }

    private struct Entry {
        let machine: PluginMachine
        var path: String
        var identity: FileIdentity
    }

    private let loadOptions: Plugin.LoadOptions
    /// Makes a machine for a plugin file on the host's clock (captured generically, so never
    /// an existential), in this process or in a worker.
    private let machineFactory: @Sendable (String) throws(PluginLoadError) -> PluginMachine
    private var entries: [String: Entry] = [:]
    /// Plugin files that failed to load, with the identity they failed with, so a scan
    /// reports each bad version once.
    private var failedFiles: [String: FileIdentity] = [:]
    /// What recovering machines from the journal could not bring back, not yet reported.
    private var journalReports: [String] = []
    /// The files being loaded and the names their machines took, while their recovery awaits:
    /// a scan meanwhile neither loads the file again nor lets another file take the name.
    private var loadingPaths: Set<String> = []
    private var loadingNames: Set<String> = []

    /// Creates a host with no plugin.
    ///
    /// - Parameters:
    ///   - clock: The clock every machine's effects sleep on; tests pass a test clock.
    ///   - loadOptions: How plugin files are loaded (e.g. allowing files others can write).
    ///   - describesState: Whether transitions handed to `observer` carry the state's description.
    ///   - observer: Told about the transitions every machine makes on its own
    ///     (``PluginMachine/Observer``).
    ///   - observesSends: Whether `observer` is also told about the transitions of sends.
    ///   - log: Where plugins' `host->log` lines go (standard error by default).
    ///   - maxEffects: How many delayed and repeating actions each machine may have running
    ///     or waiting.
    ///   - isolation: Whether each plugin runs in this process or in a worker process.
    ///   - journal: Where every machine's actions, snapshots and timers are journaled, so that
    ///     a restarted host brings them back; none when `nil`.
    public init(
        clock: some Clock<Duration> = ContinuousClock(),
        loadOptions: Plugin.LoadOptions = .init(),
        describesState: Bool = false,
        observer: PluginMachine.Observer? = nil,
        observesSends: Bool = false,
        log: (@Sendable (String) -> Void)? = nil,
        maxEffects: Int = PluginLimits.defaultMaxEffects,
        isolation: PluginIsolation = .none,
        journal: PluginJournal? = nil
    ) {
        self.loadOptions = loadOptions
        machineFactory = { path throws(PluginLoadError) in
            try PluginMachine(pluginAt: path, isolation: isolation, loadOptions: loadOptions, clock: clock, describesState: describesState,
                              observer: observer, observesSends: observesSends, log: log, maxEffects: maxEffects, journal: journal)
        }
    }

    /// The names of the loaded plugins, sorted.
    public var names: [String] { entries.keys.sorted() }

    /// Loads the plugin at `path` and starts a machine for it.
    ///
    /// Refuses a second plugin with the same name as a loaded one, or as one being loaded, and
    /// a file that is being loaded already: one load per file at a time, one machine per name.
    @discardableResult
    public func load(path: String) async throws(PluginLoadError) -> PluginMachine {
        guard loadingPaths.insert(path).inserted else { throw PluginLoadError(.alreadyLoading, at: path) }
        defer { loadingPaths.remove(path) }
        // Starting a worker waits for its hello: not on a thread of the pool.
        let factory = machineFactory
        let machine = try await onThreadOfItsOwn { () throws(PluginLoadError) in try factory(path) }
        if let existing = entries[machine.name] {
            throw PluginLoadError(.duplicateName(machine.name, loadedFrom: existing.path), at: path)
        }
        guard loadingNames.insert(machine.name).inserted else {
            throw PluginLoadError(.alreadyLoading, at: path)
        }
        defer { loadingNames.remove(machine.name) }
        do {
            journalReports += try await machine.recover()
        } catch {
            throw PluginLoadError(.journal(error), at: path)
        }
        entries[machine.name] = Entry(machine: machine, path: path, identity: machine.plugin.fileIdentity)
        failedFiles[path] = nil
        return machine
    }

    /// Loads every `*.so` and `*.wasm` file of `directory` not loaded yet, and reloads every loaded plugin
    /// whose file was replaced. Returns what it did, one event per file that changed.
    public func scan(directory: String) async -> [Event] {
        guard let files = pluginFiles(in: directory) else {
            return [.directoryUnreadable(.notADirectory(directory))]
        }
        var events = await reloadChangedPlugins()
        for path in files where !entries.values.contains(where: { $0.path == path }) && !loadingPaths.contains(path) {
            let identity = PluginFile.identity(of: path)
            if let identity, failedFiles[path] == identity { continue }
            do {
                let machine = try await load(path: path)
                events.append(.loaded(name: machine.name, path: path))
                events += takeJournalReports().map(Event.journalReport)
            } catch {
                failedFiles[path] = identity
                events.append(.failed(error))
            }
        }
        return events
    }

    /// Reloads every loaded plugin whose file was replaced or rewritten since it was loaded,
    /// carrying its state over; see ``PluginMachine/reload(with:)``.
    public func reloadChangedPlugins() async -> [Event] {
        var events: [Event] = []
        for name in entries.keys.sorted() {
            guard let entry = entries[name], let identity = PluginFile.identity(of: entry.path),
                  identity != entry.identity
            else { continue }
            // Marked before the reload awaits, so a scan that runs meanwhile does not reload
            // this version again.
            entries[name]?.identity = identity
            do {
                try await entry.machine.reload(fromFile: entry.path)
                failedFiles[entry.path] = nil
                events.append(.reloaded(name: name, path: entry.path))
            } catch {
                failedFiles[entry.path] = identity
                events.append(.failed(error))
            }
        }
        return events
    }

    /// The machine of the plugin named `name`.
    public func machine(named name: String) throws(PluginHostError) -> PluginMachine {
        guard let entry = entries[name] else {
            throw .unknownPlugin(name, known: names)
        }
        return entry.machine
    }

    /// The lines recovery from the journal reported since the last call (``load(path:)``
    /// collects them; ``scan(directory:)`` returns them as events).
    public func takeJournalReports() -> [String] {
        defer { journalReports = [] }
        return journalReports
    }

    /// Waits until no machine of this host has an effect running or waiting.
    public func waitUntilIdle() async {
        for entry in entries.values { await entry.machine.waitUntilIdle() }
    }

}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The plugin files of `directory`: `*.so` and `*.wasm`, sorted; hidden files are skipped.
private func pluginFiles(in directory: String) -> [String]? {
    guard let stream = opendir(directory) else { return nil }
    defer { closedir(stream) }
    var paths: [String] = []
    while let entry = readdir(stream) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        guard name.hasSuffix(".so") || name.hasSuffix(".wasm"), !name.hasPrefix(".") else { continue }
        paths.append(directory.hasSuffix("/") ? directory + name : directory + "/" + name)
    }
    return paths.sorted()
}
