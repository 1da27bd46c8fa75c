import Foundation

/// A raw TCP connection to a loopback port, blocking: for tests that hold connections open
/// and look at what the server sends, byte for byte. Call it through `offThePool`.
final class LoopbackConnection: @unchecked Sendable {
    private let descriptor: Int32

    /// Connects to `127.0.0.1:port`; the kernel completes a connection the server has not accepted yet.
    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let error = errno
            Foundation.close(descriptor)
            throw POSIXError(.init(rawValue: error) ?? .EIO)
        }
    }

    deinit { Foundation.close(descriptor) }

    /// Writes all of `text`.
    func send(_ text: String) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            bytes = bytes.dropFirst(written)
        }
    }

    /// The first response's bytes (its head, and a body of its `Content-Length`), or `nil` when
    /// none is complete within `timeout`.
    func response(within timeout: Duration) throws -> String? {
        let deadline = ContinuousClock.now + timeout
        var received: [UInt8] = []
        while true {
            if let complete = Self.completeResponse(received) { return complete }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, 60_000))
            let ready = poll(&poller, 1, milliseconds)
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return Self.completeResponse(received) ?? (received.isEmpty ? nil : String(decoding: received, as: UTF8.self)) }
            received += buffer[..<count]
        }
    }

    private static func completeResponse(_ bytes: [UInt8]) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let headEnd = text.range(of: "\r\n\r\n") else { return nil }
        let head = text[..<headEnd.lowerBound].lowercased()
        let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        let bodyBytes = text[headEnd.upperBound...].utf8.count
        return bodyBytes >= length ? text : nil
    }
}
