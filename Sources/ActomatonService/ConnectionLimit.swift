import Hummingbird
import HummingbirdCore
import NIOCore

/// The `--max-connections` limit: Hummingbird's `MaximumAvailableConnections`, made exact.
///
/// Hummingbird stops reading from the listening socket once the limit is reached; but one read
/// of a listening socket accepts every connection waiting, up to NIO's `maxMessagesPerRead`
/// (4), so a burst of connections arriving as one closed went past the limit by up to 3.
/// ``acceptOneConnectionPerRead(on:)`` makes each read accept one connection, and the limit
/// is checked before each.
enum ConnectionLimit {
    /// Hummingbird's delegate for `limit` connections at a time.
    static func delegate(_ limit: Int) -> MaximumAvailableConnections {
        MaximumAvailableConnections(limit)
    }

    /// Has the listening `channel` accept one connection per read; called once it listens.
    static func acceptOneConnectionPerRead(on channel: any Channel) async {
        // Fails only for a channel already closed: then nothing is accepted anyway.
        try? await channel.setOption(ChannelOptions.maxMessagesPerRead, value: 1).get()
    }
}
