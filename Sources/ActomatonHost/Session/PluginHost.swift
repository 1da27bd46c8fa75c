/// Every plugin a host runs, each on its own ``PluginMachine``, addressed by name; what
/// `actomaton-host serve` is built on.
///
/// A plugin can also run as many keyed instances, each a machine of its own, addressed
/// `plugin/key` (`counter/room-1`; the key follows ``InstanceKeyRule``): ``machine(at:)``
/// starts one from the plugin's initial state the first time it is addressed, up to
/// ``maxInstancesPerPlugin`` per plugin. With a journal, each instance's records are kept
/// under its address — as the network service keeps them — and the instances the journal holds
/// are brought back when their plugin loads, pending timers included.
///
/// A bad plugin file is refused with an error and changes nothing: the plugins already loaded
/// keep running with their state. ``reloadChangedPlugins()`` reloads a plugin whose file was
/// replaced, and every instance of it, carrying their states over through snapshot / restore.
public actor PluginHost {
    /// What a scan of the plugin files did.
    public enum Event: Sendable, Hashable, CustomStringConvertible {
        /// A plugin was loaded for the first time, at the version its manifest gives.
        case loaded(name: String, version: String, path: String)
        /// A replaced plugin file was reloaded, its state carried over: the versions before and
        /// after.
        case reloaded(name: String, from: String, to: String, path: String)
        /// A plugin file could not be loaded or reloaded; what was running goes on unchanged.
        case failed(PluginLoadError)
        /// The plugin directory could not be read.
        case directoryUnreadable(PluginHostError)
        /// Something the journal held could not be brought back (see ``PluginMachine/recover()``).
        case journalReport(String)
        /// A plugin file was skipped, reported once: why (see ``PluginDirectory/pathsNotUTF8``).
        case skipped(String)

        /// The line `serve` prints.
        public var description: String {
            switch self {
            case let .loaded(name, version, path): "loaded plugin \(name) \(version) from \(path)"
            case let .reloaded(name, from, to, path): "reloaded plugin \(name) \(to) from \(path) (was \(from)), state carried over"
            case let .failed(error): "error: \(error)"
            case let .directoryUnreadable(error): "error: \(error)"
            case let .journalReport(line): "error: \(line)"
            case let .skipped(line): "error: \(line)"
            }
        }
    }

    private struct Entry {
        let machine: PluginMachine
        var path: String
        var identity: FileIdentity
        /// The keyed instances, by key.
        var instances: [String: PluginMachine] = [:]
    }

    /// The default of ``maxInstancesPerPlugin``: each instance may be a worker process.
    public static let defaultMaxInstancesPerPlugin = 256

    /// The most keyed instances of one plugin (`--max-instances-per-plugin` when reading lines).
    public let maxInstancesPerPlugin: Int
    private let loadOptions: Plugin.LoadOptions
    private let journal: PluginJournal?
    /// Makes a machine for a plugin file on the host's clock (captured generically, so never
    /// an existential), in this process or in a worker, journaled under the name given (`nil`:
    /// the plugin's).
    private let machineFactory: @Sendable (String, String?) throws(PluginLoadError) -> PluginMachine
    private var entries: [String: Entry] = [:]
    /// The instances being started, by address: a second request for one waits for the first.
    private var startingInstances: [String: Task<(PluginMachine, [String]), any Error>] = [:]
    /// Plugin files that failed to load, with the identity they failed with, so a scan
    /// reports each bad version once.
    private var failedFiles: [String: FileIdentity] = [:]
    /// Plugin files that failed for a while only (``PluginLoadError/passes``), with the identity
    /// they failed with: tried again at every scan, and reported once per version of the file,
    /// until they load or fail for good.
    private var postponedFiles: [String: FileIdentity?] = [:]
    /// The files skipped for their names, reported once.
    private var skippedPaths: Set<String> = []
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
    ///   - maxInstancesPerPlugin: The most keyed instances of one plugin (at least 1).
    public init(
        clock: some Clock<Duration> = ContinuousClock(),
        loadOptions: Plugin.LoadOptions = .init(),
        describesState: Bool = false,
        observer: PluginMachine.Observer? = nil,
        observesSends: Bool = false,
        log: (@Sendable (String) -> Void)? = nil,
        maxEffects: Int = PluginLimits.defaultMaxEffects,
        isolation: PluginIsolation = .none,
        journal: PluginJournal? = nil,
        maxInstancesPerPlugin: Int = PluginHost.defaultMaxInstancesPerPlugin
    ) {
        self.loadOptions = loadOptions
        self.journal = journal
        self.maxInstancesPerPlugin = max(1, maxInstancesPerPlugin)
        machineFactory = { path, journalName throws(PluginLoadError) in
            try PluginMachine(pluginAt: path, isolation: isolation, loadOptions: loadOptions, clock: clock, describesState: describesState,
                              observer: observer, observesSends: observesSends, log: log, maxEffects: maxEffects, journal: journal,
                              journalName: journalName)
        }
    }

    /// The names of the loaded plugins, sorted.
    public var names: [String] { entries.keys.sorted() }

    /// Every machine's address, sorted: each plugin's name, and `plugin/key` for each instance.
    public var addresses: [String] {
        entries.flatMap { name, entry in [name] + entry.instances.keys.map { "\(name)/\($0)" } }.sorted()
    }

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
        let machine = try await onThreadOfItsOwn { () throws(PluginLoadError) in try factory(path, nil) }
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
        postponedFiles[path] = nil
        await bringBackInstances(of: machine.name)
        return machine
    }

    /// Starts the instances of `plugin` the journal holds records of (up to the limit), so
    /// that their timers run again; what cannot be brought back goes to the journal reports.
    private func bringBackInstances(of plugin: String) async {
        guard let journal else { return }
        let names: [String]
        do {
            names = try await onThreadOfItsOwn { () throws(PluginJournalError) in try journal.summaries().map(\.plugin) }
        } catch {
            journalReports.append("\(plugin): the journal's instances cannot be listed: \(error)")
            return
        }
        let prefix = plugin + "/"
        let keys = names.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
        for key in keys {
            do throws(PluginHostError) {
                _ = try await machine(at: prefix + key)
            } catch {
                // Said to come from the journal: the line is about no input of the user's.
                journalReports.append("\(plugin): an instance the journal holds records of is not brought back: \(error)")
            }
        }
    }

    /// The machine at `address`: the plugin named so, or, for `plugin/key`, that instance of the
    /// plugin — started from its initial state (or from the journal's records under the
    /// address) the first time it is addressed.
    ///
    /// Throws when no such plugin is loaded, when the key breaks ``InstanceKeyRule``, when the
    /// plugin already has ``maxInstancesPerPlugin`` instances, or when the instance cannot be
    /// started.
    public func machine(at address: String) async throws(PluginHostError) -> PluginMachine {
        guard let slash = address.utf8.firstIndex(of: UInt8(ascii: "/")) else { return try machine(named: address) }
        let plugin = String(address[..<slash])
        let key = String(address[address.index(after: slash)...])
        guard let entry = entries[plugin] else { throw .unknownPlugin(plugin, known: names) }
        if let problem = InstanceKeyRule.problem(with: key) { throw .badInstanceKey(address, problem: problem) }
        if let running = entry.instances[key] { return running }
        if let starting = startingInstances[address] {
            do { return try await starting.value.0 } catch { throw Self.notStarted(address, error) }
        }
        let count = entry.instances.count + startingInstances.keys.count { $0.hasPrefix(plugin + "/") }
        guard count < maxInstancesPerPlugin else { throw .tooManyInstances(plugin: plugin, limit: maxInstancesPerPlugin) }
        let (factory, path) = (machineFactory, entry.path)
        let starting = Task { () throws -> (PluginMachine, [String]) in
            // Starting a worker waits for its hello, and recovery reads the journal: not on the pool.
            let machine = try await onThreadOfItsOwn { () throws(PluginLoadError) in try factory(path, address) }
            let problems = try await machine.recover()
            return (machine, problems)
        }
        startingInstances[address] = starting
        defer { startingInstances[address] = nil }
        do {
            let (machine, problems) = try await starting.value
            journalReports += problems
            entries[plugin]?.instances[key] = machine
            return machine
        } catch {
            throw Self.notStarted(address, error)
        }
    }

    private static func notStarted(_ address: String, _ error: any Error) -> PluginHostError {
        error as? PluginHostError ?? .instanceNotStarted(address, reason: "\(error)")
    }

    /// Loads every `*.so` and `*.wasm` file of `directory` not loaded yet, and reloads every loaded plugin
    /// whose file was replaced. Returns what it did, one event per file that changed.
    public func scan(directory: String) async -> [Event] {
        let listing: PluginDirectory
        do {
            listing = try PluginDirectory.read(directory)
        } catch {
            return [.directoryUnreadable(error)]
        }
        var events = await reloadChangedPlugins()
        for path in listing.pathsNotUTF8 where !skippedPaths.contains(path) {
            skippedPaths.insert(path)
            events.append(.skipped(PluginDirectory.skipped(path)))
        }
        for path in listing.paths where !entries.values.contains(where: { $0.path == path }) && !loadingPaths.contains(path) {
            let identity = PluginFile.identity(of: path)
            if let identity, failedFiles[path] == identity { continue }
            do {
                let machine = try await load(path: path)
                events.append(.loaded(name: machine.name, version: await machine.pluginVersion, path: path))
                events += takeJournalReports().map(Event.journalReport)
            } catch {
                // One that fails for a while only (the memory of the host's other .wasm
                // instances) is tried again at the next scan.
                if !error.passes { failedFiles[path] = identity }
                if reportsFailure(error, of: path, identity: identity) { events.append(.failed(error)) }
            }
        }
        return events
    }

    /// Whether a scan reports `error` of the file at `path` (as `identity`): a failure that
    /// passes is reported once per version of the file, not at every scan that tries it again.
    private func reportsFailure(_ error: PluginLoadError, of path: String, identity: FileIdentity?) -> Bool {
        guard error.passes else {
            postponedFiles[path] = nil
            return true
        }
        if let reported = postponedFiles[path], reported == identity { return false }
        postponedFiles[path] = .some(identity)
        return true
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
            let before = await entry.machine.pluginVersion
            do {
                try await entry.machine.reload(fromFile: entry.path)
                for key in entry.instances.keys.sorted() { try await entry.instances[key]?.reload(fromFile: entry.path) }
                failedFiles[entry.path] = nil
                postponedFiles[entry.path] = nil
                events.append(.reloaded(name: name, from: before, to: await entry.machine.pluginVersion, path: entry.path))
            } catch {
                if error.passes {
                    // Tried again at the next scan.
                    entries[name]?.identity = entry.identity
                } else {
                    failedFiles[entry.path] = identity
                }
                if reportsFailure(error, of: entry.path, identity: identity) { events.append(.failed(error)) }
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

    /// Waits until no machine of this host, instances included, has an effect running or waiting.
    public func waitUntilIdle() async {
        for entry in entries.values {
            await entry.machine.waitUntilIdle()
            for instance in entry.instances.values { await instance.waitUntilIdle() }
        }
    }

}

