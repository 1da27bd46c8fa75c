import ActomatonHost
import ActomatonPluginContract
import Synchronization

/// The plugins a service runs, by name: the machine types.
public struct PluginCatalog: Sendable {
    /// The types, by plugin name.
    public let types: [String: PluginType]

    /// A catalog of `types`; a later one with the name of an earlier one is left out.
    public init(_ types: [PluginType]) {
        var byName: [String: PluginType] = [:]
        for type in types where byName[type.name] == nil { byName[type.name] = type }
        self.types = byName
    }

    /// The plugin named `name`, or ``ServiceError/notFound(_:)`` naming the known ones.
    /// The name must be the plugin's byte for byte: a dictionary compares strings by canonical
    /// equivalence, and `\u{212A}ounter` (a Kelvin sign) found `Kounter`, while the instance's
    /// journal name kept the client's spelling; an action acknowledged under it was then not
    /// brought back by a restart (review).
    public func type(named name: String) throws(ServiceError) -> PluginType {
        guard let type = types[name], type.name.utf8.elementsEqual(name.utf8) else {
            let known = types.keys.sorted()
            // A name from the path is the client's: cut past the longest a plugin may have
            // (the audit sent 8,000 bytes, echoed whole in the answer and the log).
            let shown = name.utf8.count > 64 ? name.prefix(utf8Bytes: 64) + "…" : name
            throw .notFound("no plugin named '\(shown)' is loaded (loaded: \(known.isEmpty ? "none" : known.joined(separator: ", ")))")
        }
        return type
    }

    /// The names, sorted.
    public var names: [String] { types.keys.sorted() }
}

/// The journal of a service started with `--state`: one database for every instance, each
/// instance's actions, snapshots and timers journaled under `plugin/key`, and the instances it
/// held when it was opened.
///
/// With a ``InstancePlacement`` (a cluster's shared database), the instances belong to
/// whichever host claims them: none is listed at start, each is claimed and brought back from
/// the journal by its first request on this host, and an idempotent request's receipt is
/// looked up in the journal by the instance's owner.
public struct ServiceJournal: Sendable {
    /// The journal.
    public let journal: PluginJournal
    /// The instances it holds records of (none with a placement).
    public let instances: [InstanceAddress]
    /// Those of ``instances`` with a delayed or repeating action pending: a service brings
    /// them back when it starts (``InstanceRegistry/resumeTimedInstances()``).
    public let timedInstances: [InstanceAddress]
    /// The answers to idempotent requests it keeps, not yet expired (the latest to expire
    /// first; none with a placement).
    public let receipts: [JournaledReceipt]
    /// Which host runs each instance, in a cluster.
    public let placement: (any InstancePlacement)?

    /// Reads which instances `journal` holds, and its receipts; throws when it cannot be read.
    ///
    /// - Parameters:
    ///   - journal: The journal.
    ///   - placement: Which host runs each instance, in a cluster; `nil` for one host.
    ///   - maxReceipts: The most receipts read (the service's `--max-idempotency-keys`).
    ///   - maxAnswerBytes: The most bytes of their answers read (the service's
    ///     `--max-idempotency-bytes`); the rest are read from the journal when a retry asks.
    public init(_ journal: PluginJournal, placement: (any InstancePlacement)? = nil,
                maxReceipts: Int = ServiceConfiguration().maxIdempotencyKeys,
                maxAnswerBytes: Int = ServiceConfiguration().maxIdempotencyBytes) throws(PluginJournalError) {
        self.journal = journal
        self.placement = placement
        if placement != nil {
            instances = []
            timedInstances = []
            receipts = []
        } else {
            let summaries = try journal.summaries()
            instances = summaries.compactMap { InstanceRegistry.address(journaledAs: $0.plugin) }
            timedInstances = summaries.filter { $0.timerCount > 0 }.compactMap { InstanceRegistry.address(journaledAs: $0.plugin) }
            receipts = try journal.receipts(keptAfter: ServiceClock.wallMilliseconds(), limit: maxReceipts, answerBytes: maxAnswerBytes)
        }
    }
}

/// The instances a service holds, by address, with the limits on how many.
///
/// An instance is made by the first action sent to it (``instance(at:creating:)``), in its
/// plugin's initial state; two requests to a new address meanwhile get the same instance.
///
/// An instance idle for ``Limits/idleTimeout`` — no request, no watcher, no delayed or
/// repeating action pending — is *passivated* by ``passivateIdle()``: its state is kept as the
/// plugin's snapshot (bytes) and its machine freed; the next request restores it, its `seq`
/// counted on. When ``Limits/maxInstances`` are in memory, the least recently used idle one is
/// passivated to make room for another; only when none is idle is the request refused (429).
/// Instances whose plugin runs in worker processes are bounded by ``Limits/maxWorkers`` too,
/// the least recently used idle one of them passivated alike; and `.wasm` instances by the
/// memory they may hold together (`WasmMemoryBudget`, `--wasm-memory-total`): one more is
/// made only when its plugin's initial memory fits, idle ones passivated to make room, and
/// ``makeRoom(inWasmMemoryOf:bytes:excluding:)`` frees what a refused `memory.grow` asked for.
public actor InstanceRegistry {
    /// The limits on instances.
    public struct Limits: Sendable {
        /// The most instances in memory (passivated ones are not counted), all plugins together.
        public var maxInstances: Int
        /// The most instances of one plugin, passivated ones included.
        public var maxInstancesPerPlugin: Int
        /// The most instances in memory whose plugin runs in worker processes (a worker each).
        public var maxWorkers: Int
        /// The most watchers of one instance.
        public var maxWatchersPerInstance: Int
        /// How many delayed and repeating actions one instance may have running or waiting.
        public var maxEffects: Int
        /// How many all instances may have running or waiting together, and the most bytes
        /// those carry (`EffectBudget.total`).
        public var maxEffectsTotal: Int
        /// See ``maxEffectsTotal``.
        public var maxEffectBytesTotal: Int
        /// The most actions a second all instances' delayed and repeating actions may send
        /// together (`EffectActionPace`); 0 for no limit.
        public var maxTimerActionsPerSecond: Int
        /// How long an instance is idle before ``InstanceRegistry/passivateIdle()`` passivates it.
        public var idleTimeout: Duration
        /// How many of an instance's last transitions are kept for watchers that reconnect.
        public var watchHistory: Int
        /// The most bytes of them kept, their states counted.
        public var watchHistoryBytes: Int
        /// The most bytes all instances' histories keep together (`WatchHistoryBudget`).
        public var watchHistoryTotalBytes: Int
        /// The most bytes passivated instances may keep in memory together: their snapshots and
        /// descriptions (without a journal; with one, a passivated instance keeps none). An idle
        /// instance whose snapshot does not fit is not passivated: it stays in memory.
        public var maxPassivatedBytes: Int

        /// Creates limits; the defaults are ``ServiceConfiguration``'s.
        public init(maxInstances: Int = 100_000, maxInstancesPerPlugin: Int = 100_000, maxWorkers: Int = 1024, maxWatchersPerInstance: Int = 64,
                    maxEffects: Int = PluginLimits.defaultMaxEffects, maxEffectsTotal: Int = EffectBudget.defaultTotalLimit,
                    maxEffectBytesTotal: Int = EffectBudget.defaultTotalByteLimit, maxTimerActionsPerSecond: Int = EffectActionPace.defaultPerSecond,
                    idleTimeout: Duration = .seconds(300), watchHistory: Int = 1000, watchHistoryBytes: Int = 1 << 20,
                    watchHistoryTotalBytes: Int = 256 << 20, maxPassivatedBytes: Int = 1 << 30) {
            self.maxPassivatedBytes = maxPassivatedBytes
            self.maxTimerActionsPerSecond = maxTimerActionsPerSecond
            self.watchHistory = watchHistory
            self.watchHistoryBytes = watchHistoryBytes
            self.watchHistoryTotalBytes = watchHistoryTotalBytes
            self.maxInstances = maxInstances
            self.maxInstancesPerPlugin = maxInstancesPerPlugin
            self.maxWorkers = maxWorkers
            self.maxWatchersPerInstance = maxWatchersPerInstance
            self.maxEffects = maxEffects
            self.maxEffectsTotal = maxEffectsTotal
            self.maxEffectBytesTotal = maxEffectBytesTotal
            self.idleTimeout = idleTimeout
        }
    }

    /// What a passivation did.
    private enum PassivationResult: Equatable {
        case passivated
        /// The instance goes on: it was busy, or forgotten meanwhile.
        case kept
        /// The instance goes on: its snapshot, of `bytes`, did not fit in
        /// ``Limits/maxPassivatedBytes``.
        case refused(bytes: Int)
    }

    /// The instances whose passivation was refused for ``Limits/maxPassivatedBytes``: the bytes
    /// they would have kept, and when they were last used then. Until used again, one is not
    /// snapshotted again while those bytes do not fit (a large idle state was snapshotted, for
    /// nothing, for every new instance).
    private var refusedPassivations: [InstanceAddress: (bytes: Int, used: Duration)] = [:]

    /// Whether the instance at `address` is known not to fit in the passivated bytes, `credit`
    /// of them about to come back (``refusedPassivations``).
    private func isKnownTooLarge(_ address: InstanceAddress, credit: Int = 0) -> Bool {
        guard let refused = refusedPassivations[address], refused.used == lastUsed[address] else { return false }
        return refused.bytes > passivatedBytes.available + credit
    }

    private enum Slot {
        case ready(Instance)
        case creating(Task<Instance, any Error>)
        /// Being passivated: requests wait for it, then restore it.
        /// The task passivates the instance and settles its slot before it ends: what it did.
        case passivating(Task<PassivationResult, Never>, Instance)
        /// Passivated; its watcher set is kept only when a watcher joined while it was passivated.
        case passivated(PassivatedInstance, WatcherSet?)
    }

    /// The plugins.
    public nonisolated let catalog: PluginCatalog
    /// What the instances' watch histories keep, all together (``Limits/watchHistoryTotalBytes``).
    nonisolated let historyBudget: WatchHistoryBudget
    /// What the instances' delayed and repeating actions count against, all together
    /// (``Limits/maxEffectsTotal``).
    public nonisolated let effectTotal: EffectBudget
    /// The limits.
    public nonisolated let limits: Limits
    /// What passivated instances keep in memory, all together (``Limits/maxPassivatedBytes``).
    public nonisolated let passivatedBytes: BoundedTotal
    private let metrics: ServiceMetrics
    /// Told, in one line, each failure no request answers (an action a timer sent), and what
    /// an instance brought back from the journal could not bring back.
    private let errorLog: (@Sendable (String) -> Void)?
    private let log: (@Sendable (String) -> Void)?
    private let now: @Sendable () -> Duration
    /// Where instances are journaled, each under `plugin/key`, if anywhere.
    nonisolated let journal: PluginJournal?
    /// Which host runs each instance, in a cluster.
    nonisolated let placement: (any InstancePlacement)?
    private var slots: [InstanceAddress: Slot] = [:]
    /// When each instance in memory was last asked for.
    private var lastUsed: [InstanceAddress: Duration] = [:]
    /// The instances in memory whose plugin runs in worker processes (``Limits/maxWorkers``).
    private var inWorkers: Set<InstanceAddress> = []
    /// In a cluster: the instances being given up; a request for one claims it only after.
    private var releasing: [InstanceAddress: Task<Void, Never>] = [:]
    /// The instances being deleted: a request for one waits until its machine is closed and
    /// the journal has forgotten it, then finds none. Without it, a request during the
    /// deletion made a second machine from the journal not yet forgotten, which went on with
    /// the deleted state beside the first, and whose records the forgetting then wiped.
    private var deleting: [InstanceAddress: Task<ServiceError?, Never>] = [:]
    /// How many requests wait for an instance to be deleted (for tests).
    private(set) var waitingForDeletion = 0
    /// How many requests wait for an instance to be given up (for tests).
    private(set) var waitingForRelease = 0
    private var passivatedCount = 0
    /// Each plugin's keys, sorted, for paging.
    private var keys: [String: [InstanceKey]] = [:]

    /// Creates an empty registry.
    ///
    /// - Parameters:
    ///   - catalog: The plugins instances are made of.
    ///   - limits: The registry's limits.
    ///   - metrics: Where instance counts are reported.
    ///   - log: Where the plugins' log lines go, each after its instance's address
    ///     (`counter/room-1: …`); without one, to standard error.
    ///   - errorLog: Told, in one line after the instance's address, each failure no request
    ///     answers: an action a delayed or repeating effect sent that failed, and each thing an
    ///     instance brought back from the journal could not bring back (`PluginMachine.recover()`);
    ///     without one, to standard error.
    ///   - now: The time idleness is measured on; tests pass one they move.
    ///   - journal: Where each instance's actions, snapshots and timers are journaled, under
    ///     `plugin/key` (see `PluginMachine.journalName`). The instances it holds for a
    ///     plugin of `catalog` are listed as passivated: each is brought back from the journal
    ///     by its first request.
    public init(catalog: PluginCatalog, limits: Limits, metrics: ServiceMetrics, log: (@Sendable (String) -> Void)? = nil,
                now: @escaping @Sendable () -> Duration = { ContinuousClock.now - ServiceClock.start },
                journal: ServiceJournal? = nil, errorLog: (@Sendable (String) -> Void)? = nil) {
        self.catalog = catalog
        self.limits = limits
        historyBudget = WatchHistoryBudget(limit: limits.watchHistoryTotalBytes)
        passivatedBytes = BoundedTotal(limit: limits.maxPassivatedBytes)
        effectTotal = EffectBudget(limit: limits.maxEffectsTotal, byteLimit: limits.maxEffectBytesTotal,
                                   pace: limits.maxTimerActionsPerSecond > 0 ? EffectActionPace(perSecond: limits.maxTimerActionsPerSecond) : nil)
        self.metrics = metrics
        self.log = log
        self.errorLog = errorLog
        self.now = now
        self.journal = journal?.journal
        placement = journal?.placement
        guard let journal else { return }
        timedAtStart = journal.timedInstances.filter { catalog.types[$0.plugin] != nil }
        for address in journal.instances {
            guard catalog.types[address.plugin] != nil, slots[address] == nil else { continue }
            // Brought back from the journal by its first request.
            slots[address] = .passivated(PassivatedInstance(snapshot: [], seq: 0, state: nil), nil)
            passivatedCount += 1
            metrics.instancesPassivatedChanged(by: 1)
            var list = keys[address.plugin, default: []]
            list.insert(address.key, at: Self.insertionIndex(of: address.key, in: list))
            keys[address.plugin] = list
        }
    }

    /// The instances the journal held with a delayed or repeating action pending when the
    /// registry was made, until ``resumeTimedInstances()`` brings them back.
    private var timedAtStart: [InstanceAddress] = []

    /// Brings back every instance the journal held with a delayed or repeating action pending,
    /// so that its timers run without waiting for a request (one that came due meanwhile
    /// fires at once): the service does it when it starts. An instance past a limit stays
    /// passivated until its first request; each such one is returned with why.
    ///
    /// Regression (audit): such instances stayed passivated after a restart, their timers
    /// frozen, until someone asked for them.
    public func resumeTimedInstances() async -> (resumed: Int, left: [(address: InstanceAddress, why: String)]) {
        let addresses = timedAtStart
        timedAtStart = []
        var resumed = 0
        var left: [(address: InstanceAddress, why: String)] = []
        for address in addresses {
            do throws(ServiceError) {
                _ = try await instance(at: address, creating: false)
                resumed += 1
            } catch .notFound {
                continue // deleted meanwhile
            } catch {
                left.append((address, error.description))
            }
        }
        return (resumed, left)
    }

    /// The name an instance's records are journaled under (see ``ServiceJournal``).
    public static func journalName(of address: InstanceAddress) -> String { "\(address.plugin)/\(address.key.text)" }

    /// The instance a journal name stands for; `nil` for a name that is not `plugin/key`.
    public static func address(journaledAs name: String) -> InstanceAddress? {
        guard let slash = name.firstIndex(of: "/"),
              let key = try? InstanceKey(String(name[name.index(after: slash)...])) else { return nil }
        // A plugin's name is ASCII: another spelling of it is not the plugin's (see `type(named:)`).
        let plugin = String(name[..<slash])
        guard ManifestValidator.isValidName(plugin) else { return nil }
        return InstanceAddress(plugin: plugin, key: key)
    }

    /// How many instances there are, passivated ones included (being made included).
    public var count: Int { slots.count }

    /// How many instances are in memory (being made or passivated included).
    public var activeCount: Int { slots.count - passivatedCount }

    /// How many instances in memory run in worker processes (being made or passivated included).
    public var workerCount: Int { inWorkers.count }

    /// How many instances are passivated.
    public var passivatedInstances: Int { passivatedCount }

    /// Whether an instance of the counter-like plugin at `key` has a slot, being made or made
    /// (tests: a request's instance exists once its first request reached the registry).
    func hasSlot(for key: String, plugin: String = "counter") -> Bool {
        guard let key = try? InstanceKey(key) else { return false }
        return slots[InstanceAddress(plugin: plugin, key: key)] != nil
    }

    /// Whether the instance at `address` is being passivated now (for tests).
    func isPassivating(_ address: InstanceAddress) -> Bool {
        if case .passivating? = slots[address] { return true }
        return false
    }

    /// Whether the instance at `address` is passivated.
    public func isPassivated(_ address: InstanceAddress) -> Bool {
        if case .passivated? = slots[address] { return true }
        return false
    }

    /// The instance at `address` — restored if it was passivated; made from the plugin's
    /// initial state when `creating` and there is none. Throws 404 for an unknown plugin (or
    /// instance, when not `creating`), 429 past a limit, 500 when the plugin cannot make (or
    /// restore) a state.
    public func instance(at address: InstanceAddress, creating: Bool) async throws(ServiceError) -> Instance {
        let type = try catalog.type(named: address.plugin)
        while true {
            switch slots[address] {
            case let .ready(instance)?:
                lastUsed[address] = now()
                return instance
            case let .creating(task)?:
                return try await Self.value(of: task, type: type)
            case let .passivating(task, _)?:
                // Its slot is settled when the task ends.
                _ = await task.value
                continue
            case let .passivated(passivated, watchers)?:
                // The room its state leaves in memory once it is made may go to the one it replaces.
                guard try await roomForOneMore(of: type, credit: passivated.byteCount) else { continue }
                guard case .passivated? = slots[address] else { continue }
                return try await make(address, type: type, restoring: passivated, watchers: watchers)
            case nil:
                if let deletion = deleting[address] {
                    waitingForDeletion += 1
                    _ = await deletion.value
                    waitingForDeletion -= 1
                    continue
                }
                if let release = releasing[address] {
                    // Claimed again only once given up: a claim meanwhile would find this host
                    // still the owner, and the release would then fence the new machine.
                    waitingForRelease += 1
                    await release.value
                    waitingForRelease -= 1
                    continue
                }
                if let placement {
                    return try await claim(address, type: type, creating: creating, placement: placement)
                }
                guard creating else { throw .notFound("no instance \(address)") }
                guard keys[address.plugin, default: []].count < limits.maxInstancesPerPlugin else {
                    throw .overLimit("plugin \(address.plugin) already has \(limits.maxInstancesPerPlugin) instances, its limit (--max-instances-per-plugin)")
                }
                guard try await roomForOneMore(of: type) else { continue }
                guard slots[address] == nil else { continue }
                return try await make(address, type: type, restoring: nil, watchers: nil)
            }
        }
    }

    /// In a cluster: claims the instance at `address` for this host and brings it back from the
    /// journal, or throws ``ServiceError/ownedElsewhere(name:owner:)``. One that has no
    /// transition yet is made only when `creating` (404 otherwise).
    private func claim(_ address: InstanceAddress, type: PluginType, creating: Bool,
                       placement: any InstancePlacement) async throws(ServiceError) -> Instance {
        let name = Self.journalName(of: address)
        let found: InstancePlace?
        do {
            found = try await onThreadOfItsOwn { () throws -> InstancePlace? in
                // Reads claim nothing for a name nobody made: each claim wrote a row that stayed,
                // so GETs of made-up keys grew the shared database without end.
                if !creating, try !placement.knows(name) { return nil }
                return try placement.place(name)
            }
        } catch {
            throw .unavailable("cannot find the owner of \(address): \(error)")
        }
        guard let place = found else { throw .notFound("no instance \(address)") }
        let epoch: Int64
        switch place {
        case let .elsewhere(owner): throw .ownedElsewhere(name: name, owner: owner)
        case let .here(claimed): epoch = claimed
        }
        // Another request claimed and made it meanwhile.
        if slots[address] != nil { return try await instance(at: address, creating: creating) }
        let made: Instance
        do throws(ServiceError) {
            guard keys[address.plugin, default: []].count < limits.maxInstancesPerPlugin else {
                throw .overLimit("plugin \(address.plugin) already has \(limits.maxInstancesPerPlugin) instances, its limit (--max-instances-per-plugin)")
            }
            guard try await roomForOneMore(of: type), slots[address] == nil else { return try await self.instance(at: address, creating: creating) }
            made = try await make(address, type: type, restoring: PassivatedInstance(snapshot: [], seq: 0, state: nil), watchers: nil,
                                      epoch: epoch)
        } catch {
            // Claimed and not served here (a limit, a plugin that failed to start): given up, so
            // that another host may take it. Kept, every host answered 429 for it.
            if slots[address] == nil, releasing[address] == nil {
                _ = try? await onThreadOfItsOwn { () throws in placement.release(name) }
            }
            throw error
        }
        if !creating, await made.machine.status().seq == 0 {
            await drop([name], why: .instanceDeleted)
            throw .notFound("no instance \(address)")
        }
        return made
    }

    /// In a cluster: gives up the instance at `address` (forgotten from the slots already);
    /// requests for it wait until it is given up before they claim it again.
    private func giveUp(_ address: InstanceAddress) async {
        guard let placement else { return }
        let name = Self.journalName(of: address)
        // Forgotten by the task itself, on this actor, before a waiter sees it end.
        let release = Task {
            await onThreadOfItsOwn { placement.release(name) }
            self.releasing[address] = nil
        }
        releasing[address] = release
        await release.value
    }

    /// Drops the instances journaled as `names` from memory, journal untouched (another host
    /// owns them now, or the instance never existed): their watchers are ended for `why`,
    /// their machines closed; the next request claims them again.
    public func drop(_ names: [String], why: Watcher.EndReason) async {
        for name in names {
            guard let address = Self.address(journaledAs: name), let slot = slots[address] else { continue }
            forget(address)
            switch slot {
            case let .ready(instance), let .passivating(_, instance):
                instance.watchers.endAll(why)
                await instance.machine.close()
            case let .passivated(_, watchers):
                watchers?.endAll(why)
            case let .creating(task):
                // Its machine, once made, is closed by `make`, which finds its slot gone.
                task.cancel()
            }
            await giveUp(address)
        }
    }

    /// Whether there is room in memory for one more instance of `type` now (`true`), or was
    /// made by passivating the least recently used idle one (`false`: the caller looks again,
    /// for the registry may have changed meanwhile); throws 429 when none is idle. `credit`:
    /// the bytes a passivated instance being restored keeps, which it gives back once made, so
    /// that the one passivated in its place may take them (``Limits/maxPassivatedBytes``).
    private func roomForOneMore(of type: PluginType, credit: Int = 0) async throws(ServiceError) -> Bool {
        if let memory = type.plugin.wasmMemory, memory.total.available < memory.perInstance {
            guard memory.perInstance <= memory.total.limit else {
                throw .overLimit("an instance of \(type.name) takes \(memory.perInstance) bytes of memory, more than the .wasm instances may hold "
                                 + "together, \(memory.total.limit) bytes (--wasm-memory-total)")
            }
            let result = await passivateLeastRecentlyUsed(credit: credit, where: { self.holdsMemory(of: memory.total, $0) })
            guard result == .passivated else {
                throw .overLimit("the .wasm instances in memory hold \(memory.total.used) of the \(memory.total.limit) bytes of memory they may have "
                                 + "together (--wasm-memory-total), too much for one more of \(type.name) (\(memory.perInstance) bytes), "
                                 + noneIdle(result, "none of them is idle"), retryAfter: 1)
            }
            return false
        }
        if type.runsInWorkers, inWorkers.count >= limits.maxWorkers {
            let result = await passivateLeastRecentlyUsed(credit: credit, where: { self.inWorkers.contains($0) })
            guard result == .passivated else {
                throw .overLimit("the service already runs \(limits.maxWorkers) worker processes, its limit (--max-workers), "
                                 + noneIdle(result, "none of their instances is idle"))
            }
            return false
        }
        guard activeCount >= limits.maxInstances else { return true }
        let result = await passivateLeastRecentlyUsed(credit: credit)
        guard result == .passivated else {
            throw .overLimit("the service already holds \(limits.maxInstances) instances, its limit (--max-instances), "
                             + noneIdle(result, "none is idle"))
        }
        return false
    }

    /// Why no idle instance was passivated, after a limit's message: `noneIdle`, or that the
    /// passivated instances keep all they may.
    private func noneIdle(_ result: PassivationResult, _ noneIdle: String) -> String {
        guard case let .refused(bytes) = result else { return "and \(noneIdle)" }
        return "and no idle one can be passivated: one's state takes \(bytes) bytes, more than the passivated instances may "
            + "still keep in memory (they keep \(passivatedBytes.used) of \(passivatedBytes.limit), --max-passivated-bytes)"
    }

    /// Whether the instance at `address` is a `.wasm` one whose memory counts against `total`.
    private func holdsMemory(of total: WasmMemoryBudget, _ address: InstanceAddress) -> Bool {
        catalog.types[address.plugin]?.plugin.wasmMemory?.total === total
    }

    /// Passivates idle `.wasm` instances whose memory counts against the total of `type`'s, the
    /// least recently used first, the one at `excluded` left alone, until `bytes` of that total
    /// are free; whether they are. The service calls it after an action a refused `memory.grow`
    /// failed, before it sends the action again.
    @discardableResult
    public func makeRoom(inWasmMemoryOf type: PluginType, bytes: Int, excluding excluded: InstanceAddress? = nil) async -> Bool {
        guard let total = type.plugin.wasmMemory?.total, bytes <= total.limit else { return false }
        while total.available < bytes {
            // Each passivated instance leaves the list this looks in: the loop ends.
            guard await passivateLeastRecentlyUsed(where: { $0 != excluded && self.holdsMemory(of: total, $0) }) == .passivated else { return false }
        }
        return true
    }

    /// One turn per `.wasm` memory total for the actions sent again once room is made in it
    /// (``makeRoom(inWasmMemoryOf:bytes:excluding:)``).
    private var roomTurns: [WasmMemoryBudget: TurnLock] = [:]

    /// The turn an action refused for `type`'s `.wasm` memory total takes before room is made
    /// for it and it is sent again; `nil` when the plugin has no total. Taken one at a time,
    /// the room made for one is not taken by the others sent again beside it: twelve first
    /// actions at once, each refused its grow, made room together and then took it together,
    /// all refused again (429) though the total held three of them.
    func roomTurn(of type: PluginType) -> TurnLock? {
        guard let total = type.plugin.wasmMemory?.total else { return nil }
        if let turn = roomTurns[total] { return turn }
        let turn = TurnLock()
        roomTurns[total] = turn
        return turn
    }

    /// Makes the instance at `address`, from the initial state or from `restoring`.
    private func make(_ address: InstanceAddress, type: PluginType, restoring: PassivatedInstance?,
                      watchers: WatcherSet?, epoch: Int64? = nil) async throws(ServiceError) -> Instance {
        let (limits, metrics, log, journal, historyBudget, effectTotal) = (self.limits, self.metrics, self.log, self.journal, self.historyBudget,
                                                                        self.effectTotal)
        // Made off the registry's actor: a worker's start must not hold up other instances.
        let task = Task.detached { () throws -> Instance in
            let watchers = watchers ?? WatcherSet(address: address, limit: limits.maxWatchersPerInstance, history: limits.watchHistory,
                                                historyBytes: limits.watchHistoryBytes, historyBudget: historyBudget) {
                metrics.watchersChanged(by: $0)
            }
            let onFailure = self.errorLog.map { errorLog in { @Sendable (line: String) in errorLog("\(address): \(line)") } }
            let instanceLog = log.map { log in { @Sendable (line: String) in log("\(address): \(line)") } }
            // A recovery's lines already begin with the instance's journal name, its address.
            let (errorLog, journalName) = (self.errorLog, Self.journalName(of: address))
            @Sendable func makeMachine() throws(PluginLoadError) -> InstanceMachine {
                try InstanceMachine(type: type, maxEffects: limits.maxEffects, effectTotal: effectTotal, log: instanceLog, restoring: restoring,
                                    journal: journal, journalName: journalName, journalEpoch: epoch, onFailure: onFailure,
                                    onEffectAction: { [metrics] applied in metrics.effectActionFinished(plugin: address.plugin, applied: applied) },
                                    onRecoveryProblem: errorLog) { watchers.broadcast($0) }
            }
            var madeRoom = false
            while true {
                do {
                    // A worker's start waits for its hello, and a module's start function runs
                    // until its fuel runs out: not on a thread of the pool.
                    let machine = type.plugin.isWebAssembly || type.isolation != .none
                        ? try await onThreadOfItsOwn(makeMachine) : try makeMachine()
                    try await machine.start()
                    // Not the machine's count: a transition made by now (a timer due at once)
                    // may not have reached the watchers yet, and would come twice.
                    watchers.began(at: machine.toldSeq)
                    return Instance(address: address, machine: machine, watchers: watchers)
                } catch {
                    // Short of .wasm memory (a restored state larger than a new one): once,
                    // the machine that failed freed, room is made for the size it reached.
                    guard !madeRoom, let size = Self.wasmMemoryShortage(error, of: type),
                          await self.makeRoom(inWasmMemoryOf: type, bytes: size, excluding: address) else { throw error }
                    madeRoom = true
                }
            }
        }
        let previous = slots.updateValue(.creating(task), forKey: address)
        if type.runsInWorkers { inWorkers.insert(address) }
        lastUsed[address] = now()
        if previous == nil {
            insertKey(address)
        } else {
            passivatedChanged(by: -1)
        }
        metrics.instancesChanged(by: 1)
        // The bytes `restoring` keeps stay counted until it is made, or again passivated.
        var keepsRestoringBytes = false
        defer { if !keepsRestoringBytes { passivatedBytes.release(restoring?.byteCount ?? 0) } }
        do throws(ServiceError) {
            let instance = try await Self.value(of: task, type: type)
            guard case let .creating(current)? = slots[address], current == task else {
                // Dropped or deleted while it was being made: a machine nobody holds must not
                // live on (its timers would fire and journal beside the next one made).
                instance.watchers.endAll(.movedToAnotherHost)
                await instance.machine.close()
                throw ServiceError.unavailable("\(address) was dropped while it was being made; try again")
            }
            slots[address] = .ready(instance)
            return instance
        } catch {
            if case let .creating(current)? = slots[address], current == task {
                if placement != nil {
                    // In a cluster, the next request claims it again (a slot kept here would
                    // be made without a claim).
                    forget(address)
                    await giveUp(address)
                } else if let restoring {
                    // The state is not lost: the next request tries again.
                    slots[address] = .passivated(restoring, watchers)
                    keepsRestoringBytes = true
                    lastUsed[address] = nil
                    inWorkers.remove(address)
                    metrics.instancesChanged(by: -1)
                    passivatedChanged(by: 1)
                } else {
                    forget(address)
                }
            }
            throw error
        }
    }

    private static func value(of task: Task<Instance, any Error>, type: PluginType) async throws(ServiceError) -> Instance {
        do {
            return try await task.value
        } catch let error as ServiceError {
            throw error
        } catch {
            if wasmMemoryShortage(error, of: type) != nil {
                throw .overLimit("cannot make an instance: \(error)", retryAfter: 1)
            }
            throw .pluginFailed("cannot make an instance: \(error)")
        }
    }

    /// When `error` says that the host's `.wasm` instances held too much memory together to
    /// make one of `type`: the size its memory was to have.
    private static func wasmMemoryShortage(_ error: any Error, of type: PluginType) -> Int? {
        if let error = error as? PluginLoadError, case .wasmMemoryTotalReached = error.reason { return type.plugin.wasmMemory?.perInstance }
        if let error = error as? PluginCallError, case let .wasmMemoryTotalReached(_, size, _, _) = error.reason { return size }
        return nil
    }

    // MARK: Passivation

    /// Passivates every instance idle for ``Limits/idleTimeout`` (see the type's summary);
    /// returns how many. The service calls it periodically; tests call it after moving `now`.
    @discardableResult
    public func passivateIdle() async -> Int {
        let deadline = now() - limits.idleTimeout
        let idle = lastUsed.filter { $0.value <= deadline }.sorted { $0.value < $1.value }.map(\.key)
        var passivated = 0
        for address in idle {
            guard case let .ready(instance)? = slots[address], let used = lastUsed[address], used <= deadline else { continue }
            // One known not to fit is not snapshotted again for nothing; the next may fit.
            guard !isKnownTooLarge(address) else { continue }
            // One whose action has run past the idle timeout is busy, not idle: waiting for its
            // turn held the whole sweep (for good, behind a `.wasm` loop under `--fuel off`).
            if await passivate(address, instance, unlessBusy: true) == .passivated { passivated += 1 }
        }
        return passivated
    }

    /// Passivates up to `count` idle instances — unused for ``minimumIdleToShed`` at least, no
    /// watcher, no delayed or repeating action pending — the least recently used first; returns
    /// how many. In a cluster each is given up (any host takes it at its next request): a host
    /// past its share sheds instances this way.
    @discardableResult
    public func shed(_ count: Int) async -> Int {
        var shed = 0
        let usedBefore = now() - Self.minimumIdleToShed
        for (address, used) in lastUsed.sorted(by: { $0.value < $1.value }) where shed < count {
            // Sorted: the rest were used later.
            guard used <= usedBefore else { break }
            if case let .ready(instance)? = slots[address], instance.watcherCount == 0,
               await passivate(address, instance, unlessBusy: true) == .passivated { shed += 1 }
        }
        return shed
    }

    /// How long an instance must have gone unused before ``shed(_:)`` gives it up: one in use
    /// is not moved. Busy instances were shed at every renewal, and the host their clients
    /// asked took them back at once: nothing was balanced, and requests meanwhile were 503.
    public static let minimumIdleToShed: Duration = .seconds(1)

    /// Passivates the least recently used idle instance among those `included`; `.kept` when
    /// none could be, `.refused` when one did not fit in ``Limits/maxPassivatedBytes`` (the
    /// next is tried; one known not to fit is not snapshotted again). `credit`: as
    /// ``roomForOneMore(of:credit:)``'s.
    private func passivateLeastRecentlyUsed(credit: Int = 0, where included: (InstanceAddress) -> Bool = { _ in true }) async -> PassivationResult {
        // One scan finds the least recently used; should it not be idle after all, the rest
        // are tried in order.
        var oldest: (address: InstanceAddress, used: Duration)?
        var refused: PassivationResult?
        for (address, used) in lastUsed where (oldest == nil || used < oldest!.used) && included(address) {
            guard case let .ready(instance)? = slots[address], instance.watcherCount == 0 else { continue }
            if isKnownTooLarge(address, credit: credit) {
                refused = refused ?? .refused(bytes: refusedPassivations[address]?.bytes ?? 0)
            } else {
                oldest = (address, used)
            }
        }
        guard let first = oldest else { return refused ?? .kept }
        if case let .ready(instance)? = slots[first.address] {
            let result = await passivate(first.address, instance, credit: credit)
            if result == .passivated { return result }
            if result != .kept { refused = result }
        }
        for (address, _) in lastUsed.sorted(by: { $0.value < $1.value }) where included(address) {
            guard case let .ready(instance)? = slots[address], instance.watcherCount == 0, !isKnownTooLarge(address, credit: credit) else { continue }
            let result = await passivate(address, instance, credit: credit)
            if result == .passivated { return result }
            if result != .kept { refused = result }
        }
        return refused ?? .kept
    }

    /// Passivates `instance` unless it has watchers or effects pending, or its snapshot does
    /// not fit in ``Limits/maxPassivatedBytes`` (past it by `credit` at most); what it did.
    /// `unlessBusy`: one with an action in its turn, or waiting for it, is kept at once;
    /// otherwise the passivation waits for those actions (making room for a request does: the
    /// least recently used instance is passivated once its action is answered).
    private func passivate(_ address: InstanceAddress, _ instance: Instance, credit: Int = 0, unlessBusy: Bool = false) async -> PassivationResult {
        guard instance.watcherCount == 0 else { return .kept }
        // The slot is settled within the task: a request waiting on it finds it settled (were it
        // settled after, a waiter would look again at once, and spin on this actor).
        let bytes = passivatedBytes
        let task = Task {
            await self.settlePassivation(address, instance, await instance.machine.passivate(admitting: { bytes.reserve($0, allowingOver: credit) },
                                                                                              unlessBusy: unlessBusy))
        }
        slots[address] = .passivating(task, instance)
        let result = await task.value
        if case let .refused(size) = result, let used = lastUsed[address] {
            refusedPassivations[address] = (size, used)
        } else {
            refusedPassivations[address] = nil
        }
        return result
    }

    /// The end of a passivation: the slot of `instance`, passivated (or not).
    private func settlePassivation(_ address: InstanceAddress, _ instance: Instance,
                                   _ outcome: InstanceMachine.Passivation) async -> PassivationResult {
        guard case let .passivated(passivated) = outcome else {
            if case let .passivating(_, current)? = slots[address], current === instance { slots[address] = .ready(instance) }
            if case let .refused(bytes) = outcome { return .refused(bytes: bytes) }
            return .kept
        }
        guard case let .passivating(_, current)? = slots[address], current === instance else {
            // Deleted meanwhile.
            passivatedBytes.release(passivated.byteCount)
            return .passivated
        }
        if passivated.seq == 0, instance.watcherCount == 0, placement == nil {
            // Nothing was applied to it (its first request's action failed, or has not had its
            // turn): forgotten, as ``discardIfUntouched(_:)`` forgets it, not kept passivated,
            // listed and counted ever after.
            passivatedBytes.release(passivated.byteCount)
            instance.watchers.endAll(.instanceDeleted)
            forget(address)
            try? await forgetJournaled(address)
            return .passivated
        }
        if placement != nil {
            // In a cluster, any host may take it from the journal next — once the passivation's
            // snapshot is committed: given up first, its commit was fenced, and the fencing
            // dropped the instance this host had meanwhile claimed again for its next request
            // (a 503 "another host owns it now", and a fencing counted on a host never paused).
            if let journal { try? await journal.waitUntilCommitted() }
            passivatedBytes.release(passivated.byteCount)
            forget(address)
            await giveUp(address)
            return .passivated
        }
        // A watcher that joined meanwhile is carried over to the restored instance.
        slots[address] = .passivated(passivated, instance.watcherCount > 0 ? instance.watchers : nil)
        lastUsed[address] = nil
        inWorkers.remove(address)
        passivatedChanged(by: 1)
        metrics.instancesChanged(by: -1)
        return .passivated
    }

    private func passivatedChanged(by delta: Int) {
        passivatedCount += delta
        metrics.instancesPassivatedChanged(by: delta)
    }

    /// Forgets the instance at `address` when it has made no transition and holds nothing —
    /// no watcher, no delayed or repeating action, no action waiting for its turn: what a first
    /// action the plugin refused or crashed on left behind. Such an instance was listed, counted
    /// against the limits, journaled and watchable ever after, though nothing was applied to
    /// it. Otherwise (an action came meanwhile) nothing changes. Returns whether it was forgotten.
    @discardableResult
    public func discardIfUntouched(_ address: InstanceAddress) async -> Bool {
        guard case let .ready(instance)? = slots[address], instance.watcherCount == 0, instance.machine.seq == 0 else { return false }
        let bytes = passivatedBytes
        let task = Task { () -> PassivationResult in
            // In its own turn, after the actions before it: one of those makes a transition.
            // Its bytes are counted whatever the total holds: nothing is kept of an untouched
            // one, and a refusal left it listed, and counted against the limits (review).
            let outcome = await instance.machine.passivate(admitting: { bytes.forceReserve($0); return true })
            // A watcher that joined meanwhile keeps the instance, passivated, as any other.
            guard case let .passivating(_, current)? = self.slots[address], current === instance,
                  case let .passivated(passivated) = outcome, passivated.seq == 0, instance.watcherCount == 0 else {
                return await self.settlePassivation(address, instance, outcome)
            }
            // One that joins from now on is refused (404), not left on a forgotten instance.
            bytes.release(passivated.byteCount)
            instance.watchers.endAll(.instanceDeleted)
            self.forget(address)
            try? await self.forgetJournaled(address)
            return .passivated
        }
        slots[address] = .passivating(task, instance)
        return await task.value == .passivated && slots[address] == nil
    }

    // MARK: Deleting

    /// Forgets the instance at `address`: its watchers are ended, its effects cancelled (the
    /// actions already waiting for their turn are still answered), and with a journal its
    /// records, acknowledged before this returns. Returns whether there was one; throws
    /// ``ServiceError/unavailable(_:)`` when the journal did not take the deletion.
    public func remove(_ address: InstanceAddress) async throws(ServiceError) -> Bool {
        guard let slot = slots[address] else { return false }
        if case let .creating(task) = slot {
            // Being made for a request: it is made (its action applied), then deleted — the
            // order they came in. Cancelled, the request was refused 503 and the delete said
            // 404, though it had destroyed the instance.
            _ = try? await task.value
            // The request that made it settles the slot when it resumes, on this actor.
            while case let .creating(current)? = slots[address], current == task { await Task.yield() }
            return try await remove(address)
        }
        forget(address)
        let deletion = Task { () -> ServiceError? in
            switch slot {
            case let .ready(instance), let .passivating(_, instance):
                instance.watchers.endAll(.instanceDeleted)
                await instance.machine.close()
            case let .passivated(_, watchers):
                watchers?.endAll(.instanceDeleted)
            case .creating:
                break // handled above
            }
            // Cleared here, on this actor, before any waiter resumes: a waiter that found it
            // still set would await the finished task again, and again, without letting go.
            defer { deleting[address] = nil }
            do throws(ServiceError) {
                try await forgetJournaled(address)
                return nil
            } catch {
                return error
            }
        }
        deleting[address] = deletion
        if let failure = await deletion.value { throw failure }
        return true
    }

    /// Forgets what the journal holds of the instance at `address`, once acknowledged. When
    /// the journal does not take it, the instance is listed again as passivated — the journal
    /// brings it back on its next request, as after a restart — and the deletion is refused.
    private func forgetJournaled(_ address: InstanceAddress) async throws(ServiceError) {
        guard let journal else { return }
        do {
            try await journal.forget(Self.journalName(of: address))
        } catch {
            if placement == nil, slots[address] == nil {
                slots[address] = .passivated(PassivatedInstance(snapshot: [], seq: 0, state: nil), nil)
                passivatedChanged(by: 1)
                insertKey(address)
            }
            throw .unavailable("the deletion of \(address) was not journaled (\(error.reason)); it is kept: retry")
        }
    }

    private func forget(_ address: InstanceAddress) {
        guard let slot = slots.removeValue(forKey: address) else { return }
        lastUsed[address] = nil
        refusedPassivations[address] = nil
        inWorkers.remove(address)
        if case let .passivated(passivated, _) = slot {
            passivatedBytes.release(passivated.byteCount)
            passivatedChanged(by: -1)
        } else {
            metrics.instancesChanged(by: -1)
        }
        guard var list = keys[address.plugin] else { return }
        let index = Self.insertionIndex(of: address.key, in: list)
        if index < list.count, list[index] == address.key { list.remove(at: index) }
        keys[address.plugin] = list.isEmpty ? nil : list
    }

    private func insertKey(_ address: InstanceAddress) {
        var list = keys[address.plugin, default: []]
        list.insert(address.key, at: Self.insertionIndex(of: address.key, in: list))
        keys[address.plugin] = list
    }

    /// The first index in `list` (sorted) whose key is not below `key`.
    private static func insertionIndex(of key: InstanceKey, in list: [InstanceKey]) -> Int {
        var low = 0
        var high = list.count
        while low < high {
            let middle = (low + high) / 2
            if list[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Up to `limit` keys of `plugin` after `after` (all from the first without it), in byte
    /// order, and whether more follow. Throws 404 for an unknown plugin.
    public func keys(of plugin: String, after: InstanceKey?, limit: Int) throws(ServiceError) -> (keys: [InstanceKey], more: Bool) {
        _ = try catalog.type(named: plugin)
        let list = keys[plugin] ?? []
        var start = 0
        if let after {
            start = Self.insertionIndex(of: after, in: list)
            if start < list.count, list[start] == after { start += 1 }
        }
        let end = min(list.count, start + limit)
        return (Array(list[start..<end]), end < list.count)
    }

    /// Ends every watcher of every instance for `why`.
    public func endAllWatchers(_ why: Watcher.EndReason) {
        for slot in slots.values {
            switch slot {
            case let .ready(instance), let .passivating(_, instance): instance.watchers.endAll(why)
            case let .passivated(_, watchers): watchers?.endAll(why)
            case .creating: break
            }
        }
    }
}
