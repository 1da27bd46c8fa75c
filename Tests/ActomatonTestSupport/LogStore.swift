import Logging
import Synchronization

/// What a test logger logged: each line's level and message, in order.
package final class LogStore: Sendable {
    package let records = Mutex<[(Logger.Level, String)]>([])

    package init() {}

    /// A logger that records every line from `level` up here.
    package func logger(level: Logger.Level) -> Logger {
        Logger(label: "test") { _ in RecordingLogHandler(store: self, logLevel: level) }
    }

    /// The messages logged at `level`, in order.
    package func messages(at level: Logger.Level) -> [String] {
        records.withLock { $0.filter { $0.0 == level }.map(\.1) }
    }
}

/// Records into a shared store, so that the test can read what was logged.
package struct RecordingLogHandler: LogHandler {
    let store: LogStore
    package var logLevel: Logger.Level
    package var metadata: Logger.Metadata = [:]

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        store.records.withLock { $0.append((event.level, event.message.description)) }
    }
}
