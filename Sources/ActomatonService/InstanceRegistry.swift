import ActomatonHost
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
    public func type(named name: String) throws(ServiceError) -> PluginType {
        guard let type = types[name] else {
            let known = types.keys.sorted()
            throw .notFound("no plugin named '\(name)' is loaded (loaded: \(known.isEmpty ? "none" : known.joined(separator: ", ")))")
        }
        return type
    }

    /// The names, sorted.
    public var names: [String] { types.keys.sorted() }
}

/// The instances a service holds, by address, with the limits on how many.
///
/// An instance is made by the first action sent to it (``instance(at:creating:)``), in its
/// plugin's initial state; two requests to a new address meanwhile get the same instance.
public actor InstanceRegistry {
    /// The limits on instances.
    public struct Limits: Sendable {
        /// The most instances in memory, all plugins together.
        public var maxInstances: Int
        /// The most instances of one plugin.
        public var maxInstancesPerPlugin: Int
        /// The most watchers of one instance.
        public var maxWatchersPerInstance: Int
        /// How many delayed and repeating actions one instance may have running or waiting.
        public var maxEffects: Int

        /// Creates limits; the defaults are ``ServiceConfiguration``'s.
        public init(maxInstances: Int = 100_000, maxInstancesPerPlugin: Int = 100_000, maxWatchersPerInstance: Int = 64,
                    maxEffects: Int = PluginLimits.defaultMaxEffects) {
            self.maxInstances = maxInstances
            self.maxInstancesPerPlugin = maxInstancesPerPlugin
            self.maxWatchersPerInstance = maxWatchersPerInstance
            self.maxEffects = maxEffects
        }
    }

    private enum Slot {
        case ready(Instance)
        case creating(Task<Instance, any Error>)
    }

    /// The plugins.
    public nonisolated let catalog: PluginCatalog
    /// The limits.
    public nonisolated let limits: Limits
    private let metrics: ServiceMetrics
    private let log: (@Sendable (String) -> Void)?
    private var slots: [InstanceAddress: Slot] = [:]
    /// Each plugin's keys, sorted, for paging.
    private var keys: [String: [InstanceKey]] = [:]

    /// Creates an empty registry.
    public init(catalog: PluginCatalog, limits: Limits, metrics: ServiceMetrics, log: (@Sendable (String) -> Void)? = nil) {
        self.catalog = catalog
        self.limits = limits
        self.metrics = metrics
        self.log = log
    }

    /// How many instances there are (being made included).
    public var count: Int { slots.count }

    /// The instance at `address`; made from the plugin's initial state when `creating` and
    /// there is none. Throws 404 for an unknown plugin (or instance, when not `creating`),
    /// 429 past a limit, 500 when the plugin cannot make a state.
    public func instance(at address: InstanceAddress, creating: Bool) async throws(ServiceError) -> Instance {
        let type = try catalog.type(named: address.plugin)
        switch slots[address] {
        case let .ready(instance)?:
            return instance
        case let .creating(task)?:
            return try await Self.value(of: task)
        case nil:
            break
        }
        guard creating else { throw .notFound("no instance \(address)") }
        guard slots.count < limits.maxInstances else {
            throw .overLimit("the service already holds \(limits.maxInstances) instances, its limit (--max-instances)")
        }
        guard keys[address.plugin, default: []].count < limits.maxInstancesPerPlugin else {
            throw .overLimit("plugin \(address.plugin) already has \(limits.maxInstancesPerPlugin) instances, its limit (--max-instances-per-plugin)")
        }
        let (limits, metrics, log) = (self.limits, self.metrics, self.log)
        // Made off the registry's actor: a worker's start must not hold up other instances.
        let task = Task.detached { () throws -> Instance in
            let watchers = WatcherSet(address: address, limit: limits.maxWatchersPerInstance) { metrics.watchersChanged(by: $0) }
            let machine = try InstanceMachine(type: type, maxEffects: limits.maxEffects, log: log) { watchers.broadcast($0) }
            await machine.start()
            return Instance(address: address, machine: machine, watchers: watchers)
        }
        slots[address] = .creating(task)
        insertKey(address)
        metrics.instancesChanged(by: 1)
        do {
            let instance = try await Self.value(of: task)
            if case let .creating(current)? = slots[address], current == task { slots[address] = .ready(instance) }
            return instance
        } catch {
            if case let .creating(current)? = slots[address], current == task { forget(address) }
            throw error
        }
    }

    private static func value(of task: Task<Instance, any Error>) async throws(ServiceError) -> Instance {
        do {
            return try await task.value
        } catch let error as ServiceError {
            throw error
        } catch {
            throw .pluginFailed("cannot make an instance: \(error)")
        }
    }

    /// Forgets the instance at `address` and returns it, or `nil` when there is none; its
    /// watchers are ended, and its effects cancelled once the requests using it are done.
    public func remove(_ address: InstanceAddress) -> Instance? {
        guard let slot = slots[address] else { return nil }
        forget(address)
        switch slot {
        case let .ready(instance):
            instance.machine.detach()
            instance.watchers.endAll(.instanceDeleted)
            return instance
        case let .creating(task):
            task.cancel()
            return nil
        }
    }

    private func forget(_ address: InstanceAddress) {
        slots[address] = nil
        metrics.instancesChanged(by: -1)
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
            if case let .ready(instance) = slot { instance.watchers.endAll(why) }
        }
    }
}
