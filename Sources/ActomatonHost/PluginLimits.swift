import ActomatonPluginABI

/// The limits the host puts on what crosses the plugin boundary, in both directions.
///
/// The contract's limits are `#define`s in `actomaton_plugin.h`; the host's own defaults
/// (file size, effects per machine, feedback steps) can be changed per host.
public enum PluginLimits {
    /// The largest plugin file loaded by default: 256 MiB (`--max-plugin-size`).
    public static let defaultMaxFileSize: Int64 = 256 << 20
    /// The longest string argument, either way: `ACTOMATON_MAX_STRING_LENGTH` bytes.
    public static let maxStringArgumentBytes = Int(ACTOMATON_MAX_STRING_LENGTH)
    /// The longest effect ID or queue name: `ACTOMATON_MAX_ID_LENGTH` bytes.
    public static let maxIdentifierBytes = Int(ACTOMATON_MAX_ID_LENGTH)
    /// The longest `fail` or `log` message: `ACTOMATON_MAX_MESSAGE_LENGTH` bytes.
    public static let maxMessageBytes = Int(ACTOMATON_MAX_MESSAGE_LENGTH)
    /// The largest snapshot: `ACTOMATON_MAX_SNAPSHOT_SIZE` bytes.
    public static let maxSnapshotBytes = Int(ACTOMATON_MAX_SNAPSHOT_SIZE)
    /// The longest description: `ACTOMATON_MAX_DESCRIPTION_SIZE` bytes.
    public static let maxDescriptionBytes = Int(ACTOMATON_MAX_DESCRIPTION_SIZE)
    /// How many effects (delayed and repeating actions) one machine may have running or
    /// waiting by default: 10,000 (`--max-effects`).
    public static let defaultMaxEffects = 10_000
    /// How many `next_action` requests deep a chain may go from the action that started it:
    /// 64. Below the async layer's own limit (100), so the host, not the layer, cuts a loop
    /// off and reports it.
    public static let maxFeedbackDepth = 64
    /// How many actions `next_action` requests may run in all after the action that started
    /// them: 1,000 (the async layer's limit is 10,000).
    public static let maxFeedbackSteps = 1_000
    /// The most effect requests one action may make, of every kind: 65,536 (cancels had no
    /// limit in process, and a worker's answer refused them past it).
    public static let maxRequestsPerAction = 65_536
    /// The most bytes one action's effect requests may carry in all — their actions' names
    /// and string arguments, effect IDs and queue names: 16 MiB. One action reusing a 1 MiB
    /// string in every request made the host hold gigabytes; and a worker's answer must fit
    /// in one frame.
    public static let maxRequestBytesPerAction = 16 << 20
    /// The most bytes one machine's pending delayed and repeating actions may carry at once,
    /// counted as ``maxRequestBytesPerAction`` counts them: 64 MiB. The effect count
    /// (`--max-effects`) alone let 10,000 timers each hold a 1 MiB string. A request past it
    /// fails its action with an invalid-request line, as one past the count does.
    public static let maxPendingEffectBytes = 64 << 20
    /// The most bytes of an action — its name and arguments, as sent — that a transition line
    /// or an error line echoes: 1,024; the rest is counted (`… (N more bytes)`), not shown.
    public static let maxEchoedActionBytes = 1024
    /// The most `host->log` lines one plugin state gets through a second, in bursts of as
    /// many: 1,000. The lines past it are left out, and the next line let through first says
    /// how many were (a plugin logging in a loop filled a disk otherwise).
    public static let maxLogLinesPerSecond = 1000

    /// `action` (an action's or an effect request's text), or its first
    /// ``maxEchoedActionBytes`` bytes (whole characters) and how many more there were.
    public static func echo(_ action: String) -> String {
        action.cut(utf8Bytes: maxEchoedActionBytes)
    }
}
