import Logging

/// `serve --listen`'s log: swift-log's `StreamLogHandler` on standard error, line for line,
/// except that the logger's metadata is formatted only when a line is written.
///
/// Hummingbird gives every request's logger a request ID. `StreamLogHandler` formats its whole
/// metadata each time an item is set, whether anything is logged or not: a few percent of a
/// request's time at the default level, where a request logs nothing.
struct ServiceLogHandler: LogHandler {
    private var stream: StreamLogHandler
    var metadata = Logger.Metadata()

    init(label: String, level: Logger.Level) {
        stream = StreamLogHandler.standardError(label: label)
        stream.logLevel = level
    }

    var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// What Hummingbird logs as errors when a graceful shutdown's time runs out and its tasks
    /// are cancelled: the service says that itself, once, at warning (`--shutdown-timeout …
    /// ran out`). Logged at debug.
    static let shutdownCancellationLines = ["Waiting on child channel: CancellationError()", "Server shutdown error: Already closed"]

    func log(event: LogEvent) {
        var event = event
        if event.level == .error, Self.shutdownCancellationLines.contains(event.message.description) {
            guard logLevel <= .debug else { return }
            event.level = .debug
        }
        // The line's own metadata wins over the logger's, as in `StreamLogHandler`.
        event.metadata = metadata.merging(event.metadata ?? [:]) { _, line in line }
        stream.log(event: event)
    }
}
