import ActomatonHost
import CoreMetrics
import Synchronization
import class Prometheus.PrometheusCollectorRegistry
import struct Prometheus.PrometheusMetricsFactory

/// The service's metrics, through swift-metrics, kept in a Prometheus registry of their own
/// (no global `MetricsSystem.bootstrap`, so several services — and tests — can coexist) and
/// served at `GET /metrics` in Prometheus' text format.
///
/// - `actomaton_actions_total{plugin, outcome}`: actions sent by clients to a loaded plugin,
///   by outcome (`ok`, `bad_request`, `not_found`, `refused` — by the plugin, or an
///   `Idempotency-Key` reused with another body —, `over_limit`, `too_large`, `unavailable`,
///   `failed`, `replayed`; a replayed answer is counted but not timed). One forwarded to the
///   host that owns its instance is counted there. A request refused before it names a loaded
///   plugin (401, 403, 429 for its token, 404 for the plugin) is not an action.
/// - `actomaton_action_duration_seconds{plugin}`: how long an action's request took, from its
///   route to its answer — its body's arrival and its turn's wait included, and refusals too
///   (not a replayed answer).
/// - `actomaton_effect_actions_total{plugin, outcome}`: actions no client sent — a delayed or
///   repeating action, or one an effect fed back — by outcome (`ok`, `failed`): a timer's
///   failure, which no request answers, is counted here.
/// - `actomaton_instances_active`: instances in memory.
/// - `actomaton_instances_passivated`: instances passivated (their state kept, their machine freed).
/// - `actomaton_watchers`: WebSocket watchers connected.
/// - `actomaton_effects_in_flight`: delayed and repeating actions running or waiting, all
///   instances in memory together (counted when `/metrics` is read).
/// - `actomaton_watch_history_bytes`: what the instances' watch histories keep together, as
///   `--watch-history-total-bytes` counts it (read when `/metrics` is).
/// - `actomaton_passivated_bytes`: what passivated instances keep in memory together, their
///   snapshots and descriptions, as `--max-passivated-bytes` counts it (read when `/metrics` is;
///   0 with `--state`, where the journal keeps them).
/// - `actomaton_idempotency_bytes`: what the answers kept for idempotency keys take in memory,
///   as `--max-idempotency-bytes` counts it (read when `/metrics` is).
/// - `actomaton_wasm_memory_bytes` and `actomaton_wasm_memory_limit_bytes`: the linear memory
///   the `.wasm` instances in memory hold together, and what they may (`--wasm-memory-total`;
///   read when `/metrics` is; both 0 when no `.wasm` plugin is loaded).
/// - `actomaton_journal_commit_duration_seconds`: how long each journal commit took, its disk
///   sync included; `actomaton_journal_records_total`: records committed (with `--state` only).
/// - `actomaton_requests_forwarded_total` and `actomaton_fencing_refusals_total`: in a cluster
///   only.
public final class ServiceMetrics: Sendable {
    /// The registry `GET /metrics` reads.
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let instances: Gauge
    private let passivated: Gauge
    private let passivatedCount = Atomic<Int>(0)
    private let watchers: Gauge
    private let effects: Gauge
    private let wasmMemory: Gauge
    private let watchHistory: Gauge
    private let passivatedBytes: Gauge
    private let idempotencyBytes: Gauge
    private let wasmMemoryLimit: Gauge
    private let commits: CoreMetrics.Timer?
    private let records: Counter?
    private let forwarded: Counter?
    private let fenced: Counter?
    private let instanceCount = Atomic<Int>(0)
    private let watcherCount = Atomic<Int>(0)
    private let actions = Mutex<[String: Counter]>([:])
    private let latencies = Mutex<[String: CoreMetrics.Timer]>([:])
    private let effectActions = Mutex<[String: Counter]>([:])
    /// The most distinct plugin names metrics are kept for (plugins come from the catalog, so
    /// this only guards against a mistake).
    static let maxPlugins = 1024

    /// Creates metrics in a new registry; the journal's with `journaled`, the cluster's with
    /// `clustered` (they were served at 0 where they cannot count).
    public init(journaled: Bool = false, clustered: Bool = false) {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
            .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(100), .seconds(1),
        ]
        self.registry = registry
        self.factory = factory
        instances = Gauge(label: "actomaton_instances_active", dimensions: [], factory: factory)
        watchers = Gauge(label: "actomaton_watchers", dimensions: [], factory: factory)
        passivated = Gauge(label: "actomaton_instances_passivated", dimensions: [], factory: factory)
        effects = Gauge(label: "actomaton_effects_in_flight", dimensions: [], factory: factory)
        wasmMemory = Gauge(label: "actomaton_wasm_memory_bytes", dimensions: [], factory: factory)
        watchHistory = Gauge(label: "actomaton_watch_history_bytes", dimensions: [], factory: factory)
        passivatedBytes = Gauge(label: "actomaton_passivated_bytes", dimensions: [], factory: factory)
        idempotencyBytes = Gauge(label: "actomaton_idempotency_bytes", dimensions: [], factory: factory)
        wasmMemoryLimit = Gauge(label: "actomaton_wasm_memory_limit_bytes", dimensions: [], factory: factory)
        commits = journaled ? CoreMetrics.Timer(label: "actomaton_journal_commit_duration_seconds", dimensions: [], factory: factory) : nil
        records = journaled ? Counter(label: "actomaton_journal_records_total", dimensions: [], factory: factory) : nil
        forwarded = clustered ? Counter(label: "actomaton_requests_forwarded_total", dimensions: [], factory: factory) : nil
        fenced = clustered ? Counter(label: "actomaton_fencing_refusals_total", dimensions: [], factory: factory) : nil
        effects.record(0)
        instances.record(0)
        passivated.record(0)
        watchers.record(0)
    }

    /// Counts an action of `plugin` that an effect sent (no client), applied or not.
    func effectActionFinished(plugin: String, applied: Bool) {
        counter("actomaton_effect_actions_total", in: effectActions, plugin: plugin, outcome: applied ? "ok" : "failed", most: Self.maxPlugins * 2)?
            .increment()
    }

    /// The counter `label` of `plugin` and `outcome`, made in `counters` the first time, up to
    /// `most` of them.
    private func counter(_ label: String, in counters: borrowing Mutex<[String: Counter]>, plugin: String, outcome: String,
                         most: Int) -> Counter? {
        let key = plugin + "\u{0}" + outcome
        return counters.withLock { counters in
            if let counter = counters[key] { return counter }
            guard counters.count < most else { return nil }
            let counter = Counter(label: label, dimensions: [("plugin", plugin), ("outcome", outcome)], factory: factory)
            counters[key] = counter
            return counter
        }
    }

    /// Counts an action of `plugin` with its `outcome`, and how long it took (`nil` for a
    /// replayed answer, which ran nothing).
    func actionFinished(plugin: String, outcome: String, duration: Duration?) {
        counter("actomaton_actions_total", in: actions, plugin: plugin, outcome: outcome, most: Self.maxPlugins * 8)?.increment()
        guard let duration else { return }
        let timer: CoreMetrics.Timer? = latencies.withLock { latencies in
            if let timer = latencies[plugin] { return timer }
            guard latencies.count < Self.maxPlugins else { return nil }
            let timer = CoreMetrics.Timer(label: "actomaton_action_duration_seconds", dimensions: [("plugin", plugin)], factory: factory)
            latencies[plugin] = timer
            return timer
        }
        let (seconds, attoseconds) = duration.components
        timer?.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    func instancesChanged(by delta: Int) {
        instances.record(instanceCount.add(delta, ordering: .relaxed).newValue)
    }

    func instancesPassivatedChanged(by delta: Int) {
        passivated.record(passivatedCount.add(delta, ordering: .relaxed).newValue)
    }

    func watchersChanged(by delta: Int) {
        watchers.record(watcherCount.add(delta, ordering: .relaxed).newValue)
    }

    func effectsInFlight(_ count: Int) {
        effects.record(count)
    }

    func watchHistoryKept(_ bytes: Int) {
        watchHistory.record(bytes)
    }

    func passivatedInstancesKeep(_ bytes: Int) {
        passivatedBytes.record(bytes)
    }

    func idempotentAnswersKeep(_ bytes: Int) {
        idempotencyBytes.record(bytes)
    }

    /// Records what the `.wasm` instances of `catalog` hold of the memory they may have together.
    func wasmMemory(of catalog: PluginCatalog) {
        var budgets: [WasmMemoryBudget] = []
        for type in catalog.types.values {
            if let total = type.plugin.wasmMemory?.total, !budgets.contains(where: { $0 === total }) { budgets.append(total) }
        }
        wasmMemory.record(budgets.reduce(0) { $0 + $1.used })
        wasmMemoryLimit.record(budgets.reduce(0) { $0 + $1.limit })
    }

    /// Records a journal commit: how long it took and how many records it held.
    func journalCommitted(duration: Duration, records count: Int) {
        let (seconds, attoseconds) = duration.components
        commits?.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        records?.increment(by: count)
    }

    /// Counts a request forwarded to the host that owns its instance.
    func requestForwarded() {
        forwarded?.increment()
    }

    /// Counts `count` instances whose records were refused because another host took them over.
    public func fencingRefused(_ count: Int) {
        fenced?.increment(by: count)
    }

    /// How many watchers are connected.
    public var watcherTotal: Int { watcherCount.load(ordering: .relaxed) }

    /// What each metric counts: its `# HELP` line. swift-metrics has no place for it, and the
    /// registry stops the process when one name is made with two texts, so the lines are
    /// added to the text the registry writes.
    static let help: [String: String] = [
        "actomaton_actions_total": "Actions sent by clients to a loaded plugin, by outcome.",
        "actomaton_action_duration_seconds": "How long an action's request took, from its route to its answer (replayed answers aside).",
        "actomaton_effect_actions_total": "Actions no client sent (a timer's, or one an effect fed back), by outcome.",
        "actomaton_instances_active": "Instances in memory.",
        "actomaton_instances_passivated": "Instances passivated: their state kept, their machine freed.",
        "actomaton_watchers": "WebSocket watchers connected.",
        "actomaton_effects_in_flight": "Delayed and repeating actions running or waiting, all instances in memory together.",
        "actomaton_watch_history_bytes": "What the instances' watch histories keep together (--watch-history-total-bytes counts it).",
        "actomaton_passivated_bytes": "What passivated instances keep in memory together (--max-passivated-bytes counts it).",
        "actomaton_idempotency_bytes": "What the answers kept for idempotency keys take in memory (--max-idempotency-bytes counts it).",
        "actomaton_wasm_memory_bytes": "Linear memory the .wasm instances in memory hold together.",
        "actomaton_wasm_memory_limit_bytes": "Linear memory the .wasm instances may hold together (--wasm-memory-total).",
        "actomaton_journal_commit_duration_seconds": "How long each journal commit took, its disk sync included.",
        "actomaton_journal_records_total": "Records committed to the journal.",
        "actomaton_requests_forwarded_total": "Requests forwarded to the host that owns their instance.",
        "actomaton_fencing_refusals_total": "Instances whose records were refused because another host had taken them over.",
    ]

    /// Every metric in Prometheus' text format, each with its `# HELP` line.
    public func prometheusText() -> String {
        Self.withHelp(registry.emitToString())
    }

    /// `text` with a `# HELP` line before each `# TYPE` line of a metric ``help`` describes.
    static func withHelp(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count + 1024)
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# TYPE "), let name = line.dropFirst("# TYPE ".count).split(separator: " ").first,
               let help = help[String(name)] {
                result += "# HELP \(name) \(help)\n"
            }
            result += line
            result += "\n"
        }
        // The split gave one empty piece after the last newline: no line of its own.
        if text.hasSuffix("\n") || text.isEmpty { result.removeLast() }
        return result
    }
}
