import Synchronization

/// The `error:` lines the host library prints to standard error on its own, where there is no
/// caller to hand the error to: a snapshot after an action that failed, in a worker, in the
/// sandbox or in the journal (the action itself went through, so the send does not throw).
///
/// A command line adds ``count`` to its exit status: `actomaton-host run` exits with 1 when any
/// was printed, as it does for the errors it prints itself. A server sends them to its logger
/// instead, with ``route(to:)``.
public enum HostErrorLines {
    private static let printed = Atomic<Int>(0)
    private static let sink = Mutex<(@Sendable (String) -> Void)?>(nil)

    /// How many `error:` lines the library has printed in this process.
    public static var count: Int { printed.load(ordering: .relaxed) }

    /// Sends every later line to `sink` (a server's logger) instead of standard error; `nil`
    /// sends them to standard error again. They are counted either way.
    public static func route(to sink: (@Sendable (String) -> Void)?) {
        self.sink.withLock { $0 = sink }
    }

    /// Prints `line` (which starts with `error: `) to standard error, or hands it to the sink
    /// given to ``route(to:)``, and counts it.
    static func report(_ line: String) {
        printed.add(1, ordering: .relaxed)
        if let sink = sink.withLock({ $0 }) {
            sink(line)
        } else {
            printToStandardError(line)
        }
    }
}
