import Foundation

/// A raw TCP connection to a loopback port, blocking: for tests that hold connections open
/// and look at what the server sends, byte for byte. Call it through ``overLoopback(_:)``.
///
/// Also the tests' WebSocket client where the server closes a WebSocket at once:
/// HummingbirdWSClient sometimes misses a close frame that arrives with the handshake's
/// answer, and waits for ever.
final class LoopbackConnection: @unchecked Sendable {
    private let descriptor: Int32
    /// Read and not taken yet.
    private var received: [UInt8] = []
    /// Whether the server closed its side.
    private var ended = false

    /// Connects to `127.0.0.1:port`; the kernel completes a connection the server has not accepted yet.
    ///
    /// - Parameter receiveBuffer: The socket's receive buffer (`SO_RCVBUF`), for a client that
    ///   reads slowly; the system's default when `nil`.
    init(port: Int, receiveBuffer: Int32? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // A class's `deinit` runs when its initializer throws once every property is set: it
        // closes the socket (closing it here as well closed it twice, and the second close could
        // hit a descriptor another test had opened meanwhile).
        guard connected == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }

    /// Shut down first: a child process another test is starting holds a copy of every
    /// descriptor until it execs (`posix_spawn` clones the table), and while it does, `close`
    /// alone leaves the connection open, and the server sees no end of it.
    deinit {
        guard descriptor >= 0 else { return }
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        Foundation.close(descriptor)
    }

    /// Writes all of `text`.
    func send(_ text: String) throws {
        try send(bytes: Array(text.utf8))
    }

    /// Sends no more: the server reads the end of the stream, and can still answer.
    func shutdownWrite() {
        _ = shutdown(descriptor, Int32(SHUT_WR))
    }

    /// Sends a WebSocket frame as a client does (masked, here with a key of zeros).
    func sendWebSocketFrame(opcode: UInt8, fin: Bool = true, payload: [UInt8]) throws {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame += [0x80 | 127] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) }
        }
        try send(bytes: frame + [0, 0, 0, 0] + payload)
    }

    /// Answers the server's WebSocket close with a close (1000), masked as a client's frames are.
    func answerWebSocketClose() throws {
        try send(bytes: [0x88, 0x82, 0, 0, 0, 0, 0x03, 0xE8])
    }

    private func send(bytes all: [UInt8]) throws {
        var bytes = all[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            bytes = bytes.dropFirst(written)
        }
    }

    /// The next response's bytes (its head, and a body of its `Content-Length`), or `nil` when
    /// none is complete within `timeout`.
    func response(within timeout: Duration) throws -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let length = Self.completeResponseLength(received) {
                defer { received.removeFirst(length) }
                return String(decoding: received[..<length], as: UTF8.self)
            }
            guard try readMore(before: deadline) else { return nil }
        }
    }

    /// Sends a WebSocket handshake for `path` (with `headers`, each `Name: value`) and returns
    /// the answer's head.
    func webSocketHandshake(_ path: String, headers: [String] = [], within timeout: Duration) throws -> String? {
        try send("GET \(path) HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                 + headers.map { $0 + "\r\n" }.joined() + "\r\n")
        return try response(within: timeout)
    }

    /// Reads WebSocket frames from the server (unmasked), dropping others, until a close frame:
    /// its code and reason, and how many frames came before it; `nil` when none comes within `timeout`.
    func webSocketClose(within timeout: Duration) throws -> (code: Int, reason: String, framesBefore: Int)? {
        let deadline = ContinuousClock.now + timeout
        var framesBefore = 0
        while true {
            while let (opcode, payload, length) = Self.frame(received) {
                received.removeFirst(length)
                if opcode == 8 {
                    let code = payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : 1005
                    return (code, String(decoding: payload.dropFirst(2), as: UTF8.self), framesBefore)
                }
                framesBefore += 1
            }
            guard try readMore(before: deadline) else { return nil }
        }
    }

    /// The next WebSocket text or close frame (others dropped): its opcode (1 or 8) and
    /// payload; `nil` when none comes within `timeout`.
    func webSocketTextOrClose(within timeout: Duration) throws -> (opcode: UInt8, payload: [UInt8])? {
        let deadline = ContinuousClock.now + timeout
        while true {
            while let (opcode, payload, length) = Self.frame(received) {
                received.removeFirst(length)
                if opcode == 1 || opcode == 8 { return (opcode, Array(payload)) }
            }
            guard try readMore(before: deadline) else { return nil }
        }
    }

    /// The next WebSocket text frame's payload (others dropped); `nil` at a close, or when
    /// none comes within `timeout`.
    func webSocketTextFrame(within timeout: Duration) throws -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            while let (opcode, payload, length) = Self.frame(received) {
                received.removeFirst(length)
                if opcode == 8 { return nil }
                if opcode == 1 { return String(decoding: payload, as: UTF8.self) }
            }
            guard try readMore(before: deadline) else { return nil }
        }
    }

    /// Everything the server sends until it closes the connection, or until `timeout`.
    func textUntilClosed(within timeout: Duration) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while try readMore(before: deadline) {}
        defer { received.removeAll() }
        return String(decoding: received, as: UTF8.self)
    }

    /// Reads and drops everything until the server closes the connection; `false` when it is
    /// still open after `timeout`.
    func readsUntilClosed(within timeout: Duration) throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while try readMore(before: deadline) { received.removeAll() }
        return ended
    }

    /// Reads what comes before `deadline`; `false` at the deadline or once the server closed.
    private func readMore(before deadline: ContinuousClock.Instant) throws -> Bool {
        while !ended {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, 60_000))
            let ready = poll(&poller, 1, milliseconds)
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count < 0, errno == ECONNRESET { ended = true; return false }
            guard count >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            if count == 0 { ended = true; return false }
            received += buffer[..<count]
            return true
        }
        return false
    }

    /// The length of the complete HTTP response at the front of `bytes`, if there is one.
    private static func completeResponseLength(_ bytes: [UInt8]) -> Int? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let headEnd = bytes.indices.dropLast(3).first(where: { bytes[$0..<$0 + 4].elementsEqual(separator) }) else { return nil }
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self).lowercased()
        let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        let end = headEnd + 4 + length
        return bytes.count >= end ? end : nil
    }

    /// The WebSocket frame at the front of `bytes`: its opcode, payload and whole length.
    private static func frame(_ bytes: [UInt8]) -> (opcode: UInt8, payload: [UInt8], length: Int)? {
        guard bytes.count >= 2 else { return nil }
        var length = Int(bytes[1] & 0x7f)
        var offset = 2
        if length == 126 {
            guard bytes.count >= 4 else { return nil }
            length = Int(bytes[2]) << 8 | Int(bytes[3])
            offset = 4
        } else if length == 127 {
            guard bytes.count >= 10 else { return nil }
            length = bytes[2..<10].reduce(0) { $0 << 8 | Int($1) }
            offset = 10
        }
        guard bytes.count >= offset + length else { return nil }
        return (bytes[0] & 0x0f, Array(bytes[offset..<offset + length]), offset + length)
    }
}

/// Runs `body`, which waits on loopback sockets to a server of this test process (a
/// ``LoopbackConnection``), on a thread of its own, taking none of the slots child processes
/// share (``offThePool(takingASlot:_:)``): the server's clocks run while the body waits.
func overLoopback<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await offThePool(takingASlot: false, body)
}

extension Duration {
    /// How long a test waits on a socket for what must come: an answer, a frame, a close. Only a
    /// safety net, reached when something is wrong: passing, no test waits that long. Two
    /// minutes, since the suite pinned to one core beside other builds left 20–30 s too short
    /// for a handful of exchanges.
    static var answerDeadline: Duration { .seconds(120) }
}
