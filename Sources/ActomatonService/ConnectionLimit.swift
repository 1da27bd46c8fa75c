import Hummingbird
import HummingbirdCore
import NIOCore

/// The `--max-connections` limit: Hummingbird's `MaximumAvailableConnections`, made exact.
///
/// Hummingbird stops reading from the listening socket once the limit is reached; but one read
/// of a listening socket accepts every connection waiting, up to NIO's `maxMessagesPerRead`
/// (4), so a burst of connections arriving as one closed went past the limit by up to 3.
/// ``onServerRunning(_:)`` makes each read accept one connection, so that the limit is checked
/// before each.
enum ConnectionLimit {
    /// What the application runs once it listens: the listening channel made to accept one
    /// connection per read, then `onListening` told the port.
    static func onServerRunning(_ onListening: @escaping @Sendable (Int) async -> Void) -> @Sendable (any Channel) async -> Void {
        { channel in
            // Fails only for a channel already closed: then nothing is accepted anyway.
            try? await channel.setOption(ChannelOptions.maxMessagesPerRead, value: 1).get()
            await onListening(channel.localAddress?.port ?? 0)
        }
    }
}
