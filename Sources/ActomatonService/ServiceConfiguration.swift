import ActomatonHost

/// The service's limits and windows; each is a flag of `actomaton-host serve --listen`, and
/// each default is documented here.
public struct ServiceConfiguration: Sendable {
    /// The largest request body, in bytes (`--max-body-size`, default 64 KiB); past it, 413.
    public var maxBodySize = 64 << 10
    /// The largest size of a request's header fields, in bytes (`--max-header-size`, default
    /// 16 KiB, at most 64 KiB); past it, 431. Each field counts as `name: value` and a line break.
    public var maxHeaderSize = 16 << 10
    /// The most connections open at a time (`--max-connections`, default 1,024); more wait to be
    /// accepted, each once one closes.
    public var maxConnections = 1024
    /// How long a connection may wait between requests, or take to send a request — its head,
    /// and its body — before it is closed (`--connection-idle-timeout`, default 60 s; a request
    /// cut off is answered 408): a client cannot hold a connection by sending nothing, half a
    /// request, or a body a byte at a time. A WebSocket, once upgraded, is not idle.
    public var connectionIdleTimeout: Duration = .seconds(60)
    /// The most instances in memory (`--max-instances`, default 100,000); past it, 429.
    public var maxInstances = 100_000
    /// The most instances of one plugin (`--max-instances-per-plugin`, default 100,000); past it, 429.
    public var maxInstancesPerPlugin = 100_000
    /// The most instances in memory whose plugin runs in worker processes, one each
    /// (`--max-workers`, default 1,024): past it, the least recently used idle one is
    /// passivated, its worker stopped; when none is idle, 429. A worker costs about 1 MB of
    /// memory of its own and a thread of the host's, where an instance in this process costs
    /// about 5 KB: without this bound, a client that made 100,000 keys would start 100,000
    /// processes.
    public var maxWorkers = 1024
    /// The most watchers of one instance (`--max-watchers-per-instance`, default 64); past it, 429.
    public var maxWatchersPerInstance = 64
    /// The most watchers of the whole service (`--max-watchers`); past it, 429. `nil`, the
    /// default, is ``maxConnections`` less a quarter of them, at most 64 (960 of 1,024): the
    /// connections kept from watchers stay for requests and health checks.
    public var maxWatchers: Int?
    /// ``maxWatchers``, or its default.
    public var watcherLimit: Int { maxWatchers ?? maxConnections - min(64, max(1, maxConnections / 4)) }
    /// The most transitions buffered for one watcher (`--watcher-buffer`, default 256); past
    /// it the watcher is closed (1008) with a reason.
    public var watcherBuffer = 256
    /// The most bytes of messages buffered for one watcher (`--watcher-buffer-bytes`, default
    /// 1 MiB); past it the watcher is closed (1008) with a reason. Each message carries the
    /// instance's state: 256 messages of a large state took hundreds of MB for one watcher that
    /// read nothing.
    public var watcherBufferBytes = 1 << 20
    /// How long a watcher the service ended (too slow, its instance deleted, a shutdown) has to
    /// take the messages buffered for it and the close, before its connection is cut
    /// (`--watcher-close-timeout`, default 10 s): a client that reads nothing cannot hold a
    /// connection and a place among the watchers for ever; once the close is written, the
    /// client has 1 s (or this, if shorter) to answer it. In a cluster, also how long a
    /// watcher fed from the journal (an instance another host owns) may take nothing of what is
    /// written to it. (Any watcher that answers no ping of the service's, every 30 s, is closed
    /// at the next.)
    public var watcherCloseTimeout: Duration = .seconds(10)
    /// How many of an instance's last transitions are kept for a watcher that reconnects with
    /// `?after=SEQ` (`--watch-history`, default 1,000; 0 keeps none). Not kept across a
    /// passivation or a restart: an `after` older than what is kept is 410.
    public var watchHistory = 1000
    /// The most bytes of an instance's kept transitions (`--watch-history-bytes`, default 1 MiB),
    /// their states counted: the oldest are let go first, even below ``watchHistory``, so that
    /// an instance with a large state keeps a bounded history (1,000 states of a few MB each
    /// took hundreds of MB).
    public var watchHistoryBytes = 1 << 20
    /// The most bytes all instances' kept transitions may take together
    /// (`--watch-history-total-bytes`, default 256 MiB), counted as ``watchHistoryBytes``
    /// counts them, shared fairly: past it, the instances keeping more than their share (the
    /// total over the instances keeping some) are cut down to it for one keeping less, until
    /// half a share is free, and one at its share lets its own oldest go to keep a new one, or keeps none.
    /// Every active instance keeps its history, watched or not: without this bound,
    /// 100,000 instances could keep 1 MiB each.
    public var watchHistoryTotalBytes = 256 << 20
    /// The most bytes passivated instances may keep in memory together, their snapshots and
    /// their states' descriptions (`--max-passivated-bytes`, default 1 GiB, from 1 MiB to
    /// 1 TiB). Without `--state` a passivated instance keeps its state in memory, and the count
    /// of them is bounded only per plugin: without this bound a client could make instances
    /// with large states and have them passivated, one after another, past every bound on
    /// memory that holds while they are active (`--wasm-memory-total`, a worker's address
    /// space). Past it, an idle instance is not passivated but stays in memory, and a new
    /// instance that needs its room is 429, naming this flag. With `--state` a passivated
    /// instance keeps nothing in memory but its place.
    public var maxPassivatedBytes = 1 << 30
    /// Requests per second one token may send, in a burst of as many (`--max-requests-per-second`,
    /// default 1,000; 0 for no limit); past it, 429. Applies only with `--tokens`.
    public var maxRequestsPerSecond = 1000
    /// Failed authentications (401) one client address may make in a minute, in a burst of as
    /// many (`--max-failed-authentications-per-minute`, default 60; 0 for no limit); past it,
    /// its requests are 429 before their token is looked at, until time gives the budget back.
    /// An IPv6 address counts as its /64 network. Applies only with `--tokens`.
    public var maxFailedAuthenticationsPerMinute = 60
    /// The most client addresses whose failed authentications are counted at a time; past it,
    /// those whose budget time refilled are forgotten, and a new address that still finds no
    /// room is not counted.
    public static let maxFailingClients = 10_000
    /// How long an idempotent response is kept (`--idempotency-window`, default 24 hours).
    public var idempotencyWindow: Duration = .seconds(24 * 3600)
    /// The most idempotency keys kept at a time (`--max-idempotency-keys`, default 100,000); past it, 429.
    public var maxIdempotencyKeys = 100_000
    /// The most of them one token may have kept or in flight (`--max-idempotency-keys-per-token`);
    /// past it, 429. `nil`, the default, is an equal share: ``maxIdempotencyKeys`` divided by
    /// the number of tokens (all of them without `--tokens`), so that no client can take every
    /// key for the whole window and leave the others none.
    public var maxIdempotencyKeysPerToken: Int?
    /// The most bytes the answers kept for idempotency keys may take in memory
    /// (`--max-idempotency-bytes`, default 256 MiB, from 1 MiB to 1 TiB); each token may keep as
    /// large a share of them as of the keys (``idempotencyKeysPerToken(tokens:)`` of
    /// ``maxIdempotencyKeys``). An answer carries the instance's state: 100,000 keys of answers
    /// of a few MB each would take hundreds of GB. With `--state` the answers past it are kept
    /// only in the journal, with their actions, and read from it for a retry; without, a new key
    /// is refused (429) while the answers kept take them (an applied action's answer is always
    /// kept, so they may be passed by the answers of the requests under way).
    public var maxIdempotencyBytes = 256 << 20

    /// ``maxIdempotencyKeysPerToken``, or its default for `tokens` tokens (`nil`: no tokens file).
    public func idempotencyKeysPerToken(tokens: Int?) -> Int {
        maxIdempotencyKeysPerToken ?? tokens.map { max(1, maxIdempotencyKeys / max($0, 1)) } ?? maxIdempotencyKeys
    }
    /// The most keys one page of `GET /v1/machines/{plugin}` lists (`--max-page-size`, default
    /// 1,000, at most 100,000; also the default `limit`); a larger `limit` is 400.
    public var maxPageSize = 1000
    /// How many delayed and repeating actions one instance may have running or waiting (`--max-effects`).
    public var maxEffects = PluginLimits.defaultMaxEffects
    /// How many all instances may have running or waiting together (`--max-effects-total`,
    /// default 1,000,000: a pending delayed action took about 5 KB of memory in a release build, measured); past
    /// it an action asking for more fails with 422, as past `--max-effects` (its plugin may have changed its state first: not one to retry). Without it, a client sending `add_later` to the
    /// counter could make 10,000 per instance, at 100,000 instances.
    public var maxEffectsTotal = EffectBudget.defaultTotalLimit
    /// The most bytes of names and strings all instances' delayed and repeating actions carry
    /// together (`--max-effect-bytes-total`, default 1 GiB).
    public var maxEffectBytesTotal = EffectBudget.defaultTotalByteLimit
    /// The most actions a second all instances' delayed and repeating actions may send together
    /// (`--max-timer-actions-per-second`, default 10,000, in bursts of as many; 0 for no limit).
    /// Past it a timer's action waits for its slot, and a repeating one skips the ticks it
    /// missed. Before, one client starting a 1-ms ticker on a few hundred instances had the
    /// service spend both cores on them, every tick a busy machine missed sent at once: requests
    /// waited seconds each, and a shutdown did not end.
    public var maxTimerActionsPerSecond = EffectActionPace.defaultPerSecond
    /// How long an instance may be idle — no request, no watcher, no delayed or repeating action
    /// pending — before it is passivated: its state kept as bytes, its machine freed
    /// (`--idle-timeout`, default 5 minutes). The next request restores it.
    public var idleTimeout: Duration = .seconds(300)
    /// Host names a request may address without tokens besides this machine's own
    /// (`--allow-host`, repeatable, at most 64; none by default): the name a reverse proxy on
    /// this machine forwards requests with, or an alias of 127.0.0.1 in `/etc/hosts`. Without
    /// `--tokens`, a request must name this machine in its `Host` (and a page's request come
    /// from a page of it), or 403; with tokens, the token decides and these are not read. Each
    /// a DNS name, an IPv4 or an IPv6 address, compared in lowercase; a name that is none of
    /// these is left out, with a warning in the service's log.
    public var allowedHosts: [String] = []

    /// The most names ``allowedHosts`` may hold.
    public static let maxAllowedHosts = 64

    /// `text` as ``allowedHosts`` compares it — in lowercase, without a final dot, an IPv6
    /// address in its canonical text (RFC 5952) without brackets — or `nil` when it is no host:
    /// a DNS name (letters, digits, `-` and `.`, at most 253 bytes, labels of at most 63), an
    /// IPv4 or an IPv6 address; a port or a path is not part of it.
    public static func allowedHostName(_ text: String) -> String? {
        LocalRequests.allowedHostName(text)
    }
    /// How long a graceful shutdown may take before what is left is cancelled (`--shutdown-timeout`, default 10 s).
    public var shutdownTimeout: Duration = .seconds(10)

    /// How often a WebSocket's peer is pinged; one that has not answered by the next ping is
    /// closed (Hummingbird's default, 30 s). Not a flag: tests lengthen it, so that only the
    /// mechanism they test can end a connection.
    var webSocketPingInterval: Duration = .seconds(30)
    /// The socket send buffer (`SO_SNDBUF`) of a watch's connection; the system's, which grows
    /// to megabytes, when `nil`. Not a flag: tests make it small, so that a few kilobytes fill it.
    var watchSendBufferBytes: Int?

    /// The defaults.
    public init() {}

    /// The registry's share of the limits.
    var registryLimits: InstanceRegistry.Limits {
        .init(maxInstances: maxInstances, maxInstancesPerPlugin: maxInstancesPerPlugin, maxWorkers: maxWorkers,
              maxWatchersPerInstance: maxWatchersPerInstance, maxEffects: maxEffects, maxEffectsTotal: maxEffectsTotal,
              maxEffectBytesTotal: maxEffectBytesTotal, maxTimerActionsPerSecond: maxTimerActionsPerSecond, idleTimeout: idleTimeout,
              watchHistory: watchHistory, watchHistoryBytes: watchHistoryBytes, watchHistoryTotalBytes: watchHistoryTotalBytes,
              maxPassivatedBytes: maxPassivatedBytes)
    }
}
