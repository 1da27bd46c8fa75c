import Logging

extension DebugLogSink {
    /// Writes each entry to `logger` at `level`, for servers that collect logs.
    ///
    /// The sink is enabled while the logger's level lets `level` through, so with a logger at
    /// `.info` and the default `.debug` entries, the logging reducer formats nothing.
    public static func logger(_ logger: Logger, level: Logger.Level = .debug) -> DebugLogSink {
        DebugLogSink(
            isEnabled: { logger.logLevel <= level },
            write: { logger.log(level: level, Logger.Message(stringLiteral: $0)) }
        )
    }
}

