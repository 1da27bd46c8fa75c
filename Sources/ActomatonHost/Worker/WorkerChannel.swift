#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One end of the socket between the host and a worker: whole frames out, whole frames in,
/// within a deadline (see `WorkerProtocol`).
struct WorkerChannel: @unchecked Sendable {
    let descriptor: Int32
    /// The host's side only: a pidfd of the worker (or -1). A read ends as `closed` once the
    /// worker ended and the socket is drained, even if a process it forked holds the socket open.
    var processDescriptor: Int32 = -1

    /// Why a frame could not be had.
    enum Failure: Error {
        /// The other end closed the socket (it exited or crashed).
        case closed
        /// The worker ended before it said hello, and how (`exited with status 3`).
        case ended(String)
        /// No whole frame came within the deadline.
        case timedOut
        /// The frame breaks the protocol.
        case violation(WorkerProtocol.Violation)
        /// The system refused; `errno`'s message.
        case system(String)
    }

    /// Writes a whole frame.
    func send(_ frame: [UInt8]) throws(Failure) {
        var offset = 0
        while offset < frame.count {
            let n = frame.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE || errno == ECONNRESET { throw .closed }
                throw .system(systemMessage(errno))
            }
            offset += n
        }
    }

    /// Reads one whole frame before `deadline` (`nil`: wait as long as it takes).
    func receive(deadline: ContinuousClock.Instant?) throws(Failure) -> (tag: WorkerProtocol.Tag, payload: [UInt8]) {
        var header = [UInt8](repeating: 0, count: 5)
        try read(into: &header, deadline: deadline)
        let length = Int(header[0..<4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard length >= 1, length <= WorkerProtocol.maxFrameBytes else {
            throw .violation(.init("a frame of \(length) bytes"))
        }
        guard let tag = WorkerProtocol.Tag(rawValue: header[4]) else { throw .violation(.init("unknown frame tag \(header[4])")) }
        var payload = [UInt8](repeating: 0, count: length - 1)
        try read(into: &payload, deadline: deadline)
        return (tag, payload)
    }

    /// How long a read polls the socket without blocking before it sleeps in `poll`.
    ///
    /// Waking a blocked process costs tens of microseconds on some machines (a socket pair
    /// round trip measured 53 µs blocking against 4 µs polling on the 2-core VM the README's
    /// figures come from): the answer to a quick action usually arrives within this window.
    /// Between bursts of actions, both ends sleep.
    static let spinWindow: Duration = .microseconds(50)

    private func read(into buffer: inout [UInt8], deadline: ContinuousClock.Instant?) throws(Failure) {
        var filled = 0
        var spinUntil = ContinuousClock.now + Self.spinWindow
        var processEnded = false
        while filled < buffer.count {
            let n = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress! + filled, $0.count - filled, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                filled += n
                spinUntil = ContinuousClock.now + Self.spinWindow
                continue
            }
            if n == 0 { throw .closed }
            if errno == EINTR { continue }
            if errno == ECONNRESET { throw .closed }
            guard errno == EAGAIN || errno == EWOULDBLOCK else { throw .system(systemMessage(errno)) }
            if processEnded { throw .closed }
            let now = ContinuousClock.now
            if now < spinUntil { continue }
            var milliseconds: Int32 = -1
            if let deadline {
                let left = now.duration(to: deadline)
                guard left > .zero else { throw .timedOut }
                milliseconds = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            }
            // poll skips a negative descriptor.
            // On the stack: no allocation per wait on the round trip's path.
            var pollers = (pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: processDescriptor, events: Int16(POLLIN), revents: 0))
            let ready = withUnsafeMutableBytes(of: &pollers) { poll($0.baseAddress!.assumingMemoryBound(to: pollfd.self), 2, milliseconds) }
            if ready < 0 {
                if errno == EINTR { continue }
                throw .system(systemMessage(errno))
            }
            if ready == 0 { throw .timedOut }
            // Whatever the worker wrote before it ended is read first.
            if pollers.1.revents != 0 { processEnded = true }
        }
    }
}
