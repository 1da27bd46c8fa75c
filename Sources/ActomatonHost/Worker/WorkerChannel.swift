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
    /// What was received and not yet read as a frame. One thread reads a channel: the host's
    /// machine thread, or the worker's main thread.
    private let received = ReceiveBuffer()

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

    /// The worker's next reply if a whole one is here or the socket holds the rest of it now;
    /// `nil` otherwise. Never waits: for reading what a worker sends between two requests.
    func receiveReplyIfReady(vocabulary plugin: Plugin?) throws(Failure) -> WorkerReply? {
        if !holdsWholeFrame { try receiveWithoutWaiting() }
        guard holdsWholeFrame else { return nil }
        return try receiveReply(deadline: .now, vocabulary: plugin)
    }

    /// Whether ``received`` starts with a whole frame (a log line that came with or after a
    /// reply), or with a header no frame can have (reading it reports the violation). Part of
    /// a frame is not one: its rest is waited for on the socket, not spun for.
    var holdsWholeFrame: Bool {
        guard received.count >= 5 else { return false }
        let length = received.withFrame { bytes in
            Int(bytes[0]) | Int(bytes[1]) << 8 | Int(bytes[2]) << 16 | Int(bytes[3]) << 24
        }
        guard length >= 1, length <= WorkerProtocol.maxFrameBytes else { return true }
        return received.count >= 4 + length
    }

    /// Takes what the socket holds now, if anything.
    private func receiveWithoutWaiting() throws(Failure) {
        // Room for one byte at least: a receive of 0 bytes means the other end closed.
        let result = received.appending(atLeast: received.count + 1) { space in
            Result { () throws(Errno) in
                try SystemCall.receive(descriptor, into: space, flags: Int32(MSG_DONTWAIT))
            }
        }
        switch result {
        case .success(0), .failure(.connectionReset): throw .closed
        case .success, .failure(.wouldBlock): return
        case let .failure(error): throw .system(error.description)
        }
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
    /// yet checked, and its payload. One `recv` usually brings a whole frame, and often the
    /// next ones too (log lines before a reply): they wait in ``received``.
    private func receive(deadline: ContinuousClock.Instant?) throws(Failure) -> (tag: UInt8, payload: [UInt8]) {
        try fill(atLeast: 5, deadline: deadline)
        let length = received.withFrame { bytes in
            // Little-endian, as `WorkerProtocol` writes it.
            Int(bytes[0]) | Int(bytes[1]) << 8 | Int(bytes[2]) << 16 | Int(bytes[3]) << 24
        }
        guard length >= 1, length <= WorkerProtocol.maxFrameBytes else {
            throw .violation(.init("a frame of \(length) bytes"))
        }
        try fill(atLeast: 4 + length, deadline: deadline)
        return received.take(4 + length) { frame in (frame[4], Array(frame[5...])) }
    }

    /// How long a read polls the socket without blocking before it sleeps in `poll`.
    ///
    /// Waking a blocked process costs tens of microseconds on some machines (a socket pair
    /// round trip measured 53 µs blocking against 4 µs polling on the 2-core VM the README's
    /// figures come from): the answer to a quick action usually arrives within this window.
    /// Between bursts of actions, both ends sleep.
    static let spinWindow: Duration = .microseconds(50)

    /// Receives until ``received`` holds at least `count` bytes.
    private func fill(atLeast count: Int, deadline: ContinuousClock.Instant?) throws(Failure) {
        guard received.count < count else { return }
        var spinUntil = ContinuousClock.now + Self.spinWindow
        var processEnded = false
        while received.count < count {
            let result = received.appending(atLeast: count) { space in
                Result { () throws(Errno) in
                    try SystemCall.receive(descriptor, into: space, flags: Int32(MSG_DONTWAIT))
                }
            }
            switch result {
            case .success(0):
                throw .closed
            case .success:
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

/// The bytes a channel received ahead of the frames read so far: one `recv` takes whatever the
/// socket holds, up to the buffer's room, so that a frame usually costs one system call, not two
/// (its header, then its payload).
private final class ReceiveBuffer: @unchecked Sendable {
    /// The room kept between frames; a larger frame grows it until the buffer is empty again.
    static let usualCapacity = 64 << 10
    private var storage = UnsafeMutableRawBufferPointer.allocate(byteCount: usualCapacity, alignment: 8)
    private var start = 0
    private var end = 0

    deinit { storage.deallocate() }

    /// The bytes received and not yet taken.
    var count: Int { end - start }

    /// Calls `body` with the bytes not yet taken.
    func withFrame<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T {
        body(UnsafeRawBufferPointer(rebasing: storage[start..<end]))
    }

    /// Takes the first `count` bytes, handing them to `body`.
    func take<T>(_ count: Int, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        defer {
            start += count
            if start == end {
                start = 0
                end = 0
                if storage.count > Self.usualCapacity {
                    storage.deallocate()
                    storage = .allocate(byteCount: Self.usualCapacity, alignment: 8)
                }
            }
        }
        return body(UnsafeRawBufferPointer(rebasing: storage[start..<start + count]))
    }

    /// Makes room for at least `needed` bytes from ``start``, then lets `receive` write into the
    /// free space; keeps what it says it wrote.
    func appending<E>(atLeast needed: Int, _ receive: (UnsafeMutableRawBufferPointer) -> Result<Int, E>) -> Result<Int, E> {
        if start + needed > storage.count {
            let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: max(storage.count, needed), alignment: 8)
            larger.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[start..<end]))
            storage.deallocate()
            storage = larger
            end -= start
            start = 0
        }
        let result = receive(UnsafeMutableRawBufferPointer(rebasing: storage[end...]))
        if case let .success(count) = result { end += count }
        return result
    }
}
