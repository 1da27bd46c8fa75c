import ActomatonHost

/// The bytes of watch history all the instances of a service keep together
/// (`--watch-history-total-bytes`), counted as ``WatcherSet`` counts a kept transition.
///
/// `--watch-history` and `--watch-history-bytes` bound one instance's history; this bounds
/// them all. Every active instance keeps its last transitions, watched or not (a client reads
/// the state at a seq, then watches from it), and 100,000 instances of 1 MiB each would have
/// been 100 GB. Past the total, an instance lets its own oldest transitions go to keep a new
/// one, and keeps none when it has none to let go; a watcher asking for what was let go is
/// answered 410, as for any transition no longer kept (with `--state`, the journal bridges it).
typealias WatchHistoryBudget = BoundedTotal
