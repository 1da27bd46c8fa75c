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
    /// Whether a read yields the core between polls while it spins: the worker's side, which
    /// waits for the host's next request while the host may be running on this very core
    /// (spinning it out there made one round trip in three cost 40 µs instead of 7).
    var yieldsWhileSpinning = false

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

    // MARK: Typed frames

    /// Sends a request to the worker.
    func send(_ request: WorkerRequest) throws(Failure) {
        try send(request.frame)
    }

    /// Sends a reply to the host.
    func send(_ reply: WorkerReply) throws(Failure) {
        try send(reply.frame)
    }

    /// Reads the host's next request (`nil` deadline: wait as long as it takes).
    func receiveRequest(deadline: ContinuousClock.Instant?) throws(Failure) -> WorkerRequest {
        let (tag, payload) = try receive(deadline: deadline)
        do { return try WorkerRequest(tag: tag, payload: payload) } catch { throw .violation(error) }
    }

    /// Reads the worker's next reply, log lines included, before `deadline`; effect requests are
    /// checked against `plugin`'s vocabulary.
    func receiveReply(deadline: ContinuousClock.Instant?, vocabulary plugin: Plugin?) throws(Failure) -> WorkerReply {
        let (tag, payload) = try receive(deadline: deadline)
        do { return try WorkerReply(tag: tag, payload: payload, vocabulary: plugin) } catch { throw .violation(error) }
    }

    // MARK: Frames

    /// Writes a whole frame.
    private func send(_ frame: [UInt8]) throws(Failure) {
        var offset = 0
        while offset < frame.count {
            do throws(Errno) {
                offset += try frame.withUnsafeBytes { bytes in
                    Result { () throws(Errno) in
                        try SystemCall.send(descriptor, UnsafeRawBufferPointer(rebasing: bytes[offset...]), flags: Int32(MSG_NOSIGNAL))
                    }
                }.get()
            } catch where error == .brokenPipe || error == .connectionReset {
                throw .closed
            } catch {
                throw .system(error.description)
            }
        }
    }

    /// Reads one whole frame before `deadline` (`nil`: wait as long as it takes): its tag, not
    /// yet checked, and its payload.
    private func receive(deadline: ContinuousClock.Instant?) throws(Failure) -> (tag: UInt8, payload: [UInt8]) {
        var header = [UInt8](repeating: 0, count: 5)
        try read(into: &header, deadline: deadline)
        let length = Int(header[0..<4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard length >= 1, length <= WorkerProtocol.maxFrameBytes else {
            throw .violation(.init("a frame of \(length) bytes"))
        }
        var payload = [UInt8](repeating: 0, count: length - 1)
        try read(into: &payload, deadline: deadline)
        return (header[4], payload)
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
            let received = buffer.withUnsafeMutableBytes { bytes in
                Result { () throws(Errno) in
                    try SystemCall.receive(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: bytes[filled...]), flags: Int32(MSG_DONTWAIT))
                }
            }
            switch received {
            case .success(0):
                throw .closed
            case let .success(count):
                filled += count
                spinUntil = ContinuousClock.now + Self.spinWindow
                continue
            case .failure(.wouldBlock):
                break // nothing to read yet: spin, then sleep in `poll`
            case .failure(.connectionReset):
                throw .closed
            case let .failure(error):
                throw .system(error.description)
            }
            if processEnded { throw .closed }
            let now = ContinuousClock.now
            if now < spinUntil {
                if yieldsWhileSpinning { sched_yield() }
                continue
            }
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
            let ready: Int
            do throws(Errno) {
                ready = try withUnsafeMutableBytes(of: &pollers) { bytes in
                    Result { () throws(Errno) in
                        try SystemCall.poll(UnsafeMutableBufferPointer(start: bytes.baseAddress!.assumingMemoryBound(to: pollfd.self), count: 2),
                                            milliseconds: milliseconds)
                    }
                }.get()
            } catch {
                throw .system(error.description)
            }
            if ready == 0 { throw .timedOut }
            // Whatever the worker wrote before it ended is read first.
            if pollers.1.revents != 0 { processEnded = true }
        }
    }
}
