#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One end of the conversation between the host and a worker: whole frames out, whole frames
/// in, within a deadline (see `WorkerProtocol`).
///
/// Frames travel through two rings in shared memory (``SharedRings``); the socket between the
/// two processes only wakes a side that sleeps, and tells it when the other end is gone. A side
/// that waits for a frame first spins on its ring for ``spinWindow``, saying so in the region,
/// and the other side does not ring while it spins: a quick action's round trip makes no
/// system call at all. Then it says it sleeps, looks once more, and sleeps in `poll` on the
/// socket (and, on the host's side, the worker's pidfd); the other side rings with one byte.
/// A side spins only while spinning pays (``SpinAdvice``): on a loaded machine, where the other
/// side seldom answers within the window, the spin would take the core the answer needs.
struct WorkerChannel: @unchecked Sendable {
    /// The socket: a doorbell, and the other end's hang-up.
    let descriptor: Int32
    /// The host's side only: a pidfd of the worker (or -1). A read ends as `closed` once the
    /// worker ended and its ring is drained, even if a process it forked holds the socket open.
    var processDescriptor: Int32 = -1
    /// Whether a read yields the core between polls while it spins: the worker's side, which
    /// waits for the host's next request while the host may be running on this very core
    /// (spinning it out there made one round trip in three cost 40 µs instead of 7).
    var yieldsWhileSpinning = false
    /// The rings the frames travel through.
    let rings: SharedRings
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

    /// The violation of a ring whose other side wrote a position it cannot have.
    private static let corruptRing = Failure.violation(.init("the shared ring's positions are corrupt"))

    // MARK: Typed frames

    /// Sends a request to the worker; throws `timedOut` when the worker has not made room for
    /// it by `deadline`.
    func send(_ request: WorkerRequest, deadline: ContinuousClock.Instant) throws(Failure) {
        try send(bytes: request.frame, deadline: deadline)
    }

    /// Sends a reply to the host, from any thread of the worker.
    func send(_ reply: WorkerReply) throws(Failure) {
        try send(bytes: reply.frame, deadline: nil)
    }

    /// Whether this side's next wait for a frame spins first, as it stands (for tests).
    var spinAdvice: SpinAdvice { received.spinAdvice }

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

    /// The worker's next reply if a whole one is here or the ring holds the rest of it now;
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

    /// Whether the inbound ring holds bytes not yet taken (or is corrupt): work for
    /// ``receiveReplyIfReady(vocabulary:)`` without the socket becoming readable.
    var ringHoldsBytes: Bool { rings.inboundHoldsBytes }

    /// Takes what the ring holds now, if anything, and the doorbells the socket holds (a
    /// bounded read: a worker that floods the socket gets one read per look).
    private func receiveWithoutWaiting() throws(Failure) {
        let hungUp = try readDoorbells()
        // Room for one byte at least.
        if try takeFromRing(atLeast: received.count + 1) == 0, hungUp { throw .closed }
    }

    // MARK: Frames

    /// Writes a whole frame (or, for tests, any bytes) into the outbound ring, waiting for room
    /// when the other side has not taken enough yet, until `deadline` (`nil`: as long as it
    /// takes).
    ///
    /// The host waits for room asleep on the socket, rung when the worker takes. A worker
    /// waits for room in naps of a millisecond instead: its plugin's threads may send log
    /// lines while its main thread sleeps on the socket for the next request, and two threads
    /// asleep on one socket take each other's doorbells.
    func send(bytes frame: [UInt8], deadline: ContinuousClock.Instant?) throws(Failure) {
        var offset = 0
        var spinUntil: ContinuousClock.Instant?
        while true {
            let count = try put(frame, from: offset)
            offset += count
            if count > 0 {
                spinUntil = nil
                if !rings.readerSpins { try ringDoorbell() }
            }
            if offset == frame.count { return }
            // Full: the other side takes what is there, then there is room. Checked on every
            // pass: a worker that takes a byte at a time keeps the host within its deadline.
            let now = ContinuousClock.now
            if let deadline, now >= deadline { throw .timedOut }
            if spinUntil == nil { spinUntil = now + Self.spinWindow }
            if now < spinUntil! {
                if yieldsWhileSpinning { sched_yield() }
                continue
            }
            if rings.side == .worker {
                var nap = timespec(tv_sec: 0, tv_nsec: 1_000_000)
                nanosleep(&nap, nil)
                continue
            }
            rings.setWaitingForRoom(true)
            defer { rings.setWaitingForRoom(false) }
            // Once more after saying so: room made meanwhile rang no doorbell.
            if try roomWasMade(putting: frame, from: &offset) { continue }
            if try sleep(until: deadline) { throw .closed }
        }
    }

    /// Puts what fits of `frame` after `offset`; whether anything did.
    private func roomWasMade(putting frame: [UInt8], from offset: inout Int) throws(Failure) -> Bool {
        let count = try put(frame, from: offset)
        offset += count
        if count > 0, !rings.readerSpins { try ringDoorbell() }
        return count > 0
    }

    /// Puts what fits of `frame` after `offset` into the outbound ring; how much.
    private func put(_ frame: [UInt8], from offset: Int) throws(Failure) -> Int {
        let rings = self.rings
        let result = frame.withUnsafeBytes { bytes in
            Result { () throws(SharedRings.Corrupt) in try rings.put(UnsafeRawBufferPointer(rebasing: bytes[offset...])) }
        }
        guard case let .success(count) = result else { throw Self.corruptRing }
        return count
    }

    /// Reads one whole frame before `deadline` (`nil`: wait as long as it takes): its tag, not
    /// yet checked, and its payload. One take from the ring usually brings a whole frame, and
    /// often the next ones too (log lines before a reply): they wait in ``received``.
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

    /// How long a side waiting for a frame (or for room) spins on its ring before it sleeps in
    /// `poll`.
    ///
    /// Waking a blocked process costs tens of microseconds on some machines (a socket pair
    /// round trip measured 53 µs blocking against 4 µs polling, and a shared-memory one 1–2 µs,
    /// on the 2-core VM the README's figures come from): the answer to a quick action usually
    /// arrives within this window. Between bursts of actions, both ends sleep.
    static let spinWindow: Duration = .microseconds(50)

    /// Takes from the ring until ``received`` holds at least `count` bytes.
    private func fill(atLeast count: Int, deadline: ContinuousClock.Instant?) throws(Failure) {
        guard received.count < count else { return }
        // Decided at the first look that finds the ring empty: whether this wait spins.
        var window: Duration?
        var spinUntil = ContinuousClock.now
        var spinning = false
        // A spin whose outcome is not recorded yet: it pays if the frame comes before the sleep.
        var spinUnsettled = false
        var hungUp = false
        defer { if spinning { rings.setSpinning(false) } }
        while received.count < count {
            if try takeFromRing(atLeast: count) > 0 {
                let now = ContinuousClock.now
                // A worker that sends a byte at a time keeps the host within its deadline.
                if let deadline, now >= deadline, received.count < count { throw .timedOut }
                if spinUnsettled {
                    received.spinAdvice.spun(paid: true)
                    spinUnsettled = false
                }
                spinUntil = now + (window ?? Self.spinWindow)
                continue
            }
            // What the other side wrote before it ended has been taken.
            if hungUp { throw .closed }
            if window == nil {
                window = received.spinAdvice.spinsThisWait() ? Self.spinWindow : .zero
                spinUntil = ContinuousClock.now + window!
            }
            if ContinuousClock.now < spinUntil {
                spinUnsettled = true
                if !spinning {
                    rings.setSpinning(true)
                    spinning = true
                }
                if yieldsWhileSpinning { sched_yield() }
                continue
            }
            if spinning {
                // Once more after saying so: a put meanwhile rang no doorbell.
                rings.setSpinning(false)
                spinning = false
                continue
            }
            if spinUnsettled {
                // The window passed without the frame.
                received.spinAdvice.spun(paid: false)
                spinUnsettled = false
            }
            hungUp = try sleep(until: deadline)
        }
    }

    /// Takes what the inbound ring holds into ``received``, making room for `count` bytes in
    /// all; rings the doorbell when the other side waits for the room this made. How much.
    private func takeFromRing(atLeast count: Int) throws(Failure) -> Int {
        let rings = self.rings
        var wakesProducer = false
        let result = received.appending(atLeast: count) { space in
            Result { () throws(SharedRings.Corrupt) in
                let (taken, wakes) = try rings.take(into: space)
                wakesProducer = wakes
                return taken
            }
        }
        guard case let .success(taken) = result else { throw Self.corruptRing }
        if wakesProducer { try ringDoorbell() }
        return taken
    }

    /// The byte a doorbell is.
    static let doorbell: UInt8 = 1

    /// Whether the other side wrote anything but doorbells on the socket (reading what it
    /// holds now): a worker of protocol 2, which sent its frames there, hello included.
    func sawBytesOtherThanDoorbells() -> Bool {
        _ = try? readDoorbells()
        return received.sawBytesOtherThanDoorbells
    }

    /// Wakes the other side: one byte on the socket. A full socket holds doorbells the other
    /// side has yet to drain, which wake it all the same.
    private func ringDoorbell() throws(Failure) {
        var bell = Self.doorbell
        let descriptor = self.descriptor
        do throws(Errno) {
            _ = try withUnsafeBytes(of: &bell) { bytes in
                Result { () throws(Errno) in try SystemCall.send(descriptor, bytes, flags: Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }
            }.get()
        } catch where error == .wouldBlock {
            return
        } catch where error == .brokenPipe || error == .connectionReset {
            throw .closed
        } catch {
            throw .system(error.description)
        }
    }

    /// Reads doorbells the socket holds, in one read of at most ``doorbellReadBytes``: a
    /// worker that floods the socket cannot hold the host in a loop (what is left wakes the
    /// next `poll` at once, and each wait checks its deadline). Whether the other end hung up.
    private func readDoorbells() throws(Failure) -> Bool {
        let descriptor = self.descriptor
        do throws(Errno) {
            let (count, foreign) = try received.withScratch { space in
                Result { () throws(Errno) in
                    let count = try SystemCall.receive(descriptor, into: space, flags: Int32(MSG_DONTWAIT))
                    return (count, space.prefix(count).contains { $0 != Self.doorbell })
                }
            }.get()
            if foreign { received.sawBytesOtherThanDoorbells = true }
            return count == 0
        } catch where error == .wouldBlock {
            return false
        } catch where error == .connectionReset {
            return true
        } catch {
            throw .system(error.description)
        }
    }

    /// The most doorbell bytes one read takes.
    static let doorbellReadBytes = 4096

    /// Sleeps until the other side rings or ends, or `deadline` passes (`nil`: no deadline);
    /// reads the doorbells. Whether the other side is gone (its ring may still hold its last
    /// frames).
    private func sleep(until deadline: ContinuousClock.Instant?) throws(Failure) -> Bool {
        var milliseconds: Int32 = -1
        if let deadline {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw .timedOut }
            milliseconds = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
        }
        // poll skips a negative descriptor.
        // On the stack: no allocation per wait.
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
        let hungUp = pollers.0.revents != 0 ? try readDoorbells() : false
        return hungUp || pollers.1.revents != 0
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
    /// Whether a byte other than a doorbell came on the socket (see
    /// ``WorkerChannel/sawBytesOtherThanDoorbells()``).
    var sawBytesOtherThanDoorbells = false
    /// Whether waits for frames spin first (see ``SpinAdvice``).
    var spinAdvice = SpinAdvice()
    /// Where doorbells are read into (and dropped).
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: WorkerChannel.doorbellReadBytes, alignment: 8)

    deinit {
        storage.deallocate()
        scratch.deallocate()
    }

    /// Calls `body` with room whose contents do not matter.
    func withScratch<T>(_ body: (UnsafeMutableRawBufferPointer) -> T) -> T {
        body(scratch)
    }

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
            // Twice the room when it grows: a frame taken a byte at a time (between two calls,
            // as it comes) copies its bytes a logarithmic number of times, not once per byte.
            // No more than the largest frame holds, though: a worker's header is what asks.
            let grown = max(needed, min(2 * storage.count, 4 + WorkerProtocol.maxFrameBytes))
            let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: needed > storage.count ? grown : storage.count, alignment: 8)
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

/// Whether a side waiting for a frame spins on its ring first: while spinning pays.
///
/// A spin pays when the frame comes within the window: the wait then costs neither side a
/// system call nor a wake-up. It does not when the other side cannot answer that soon — it
/// sleeps and must be woken, or the machine is loaded and it waits for a core — and then the
/// spin only takes the core from the other side, or from the server's other threads (under
/// `serve --listen` with many instances, a spin that seldom paid cut the actions a second by a
/// third). So a wait spins when the last wait that spun was answered while it spun; after one
/// that was not, it sleeps at once, and tries a spin again every ``probeInterval`` waits.
struct SpinAdvice {
    /// Whether the last wait that spun had its frame come while it spun.
    private(set) var lastSpinPaid = true
    /// The waits that did not spin since the last that did.
    private var waitsWithoutSpinning = 0
    /// How often a wait spins, at least, when spinning has stopped paying: often enough to
    /// notice within a few milliseconds of a burst that it pays again, seldom enough that a
    /// spin that does not pay costs a few percent of the waits.
    static let probeInterval = 16

    /// Whether this wait spins.
    mutating func spinsThisWait() -> Bool {
        if lastSpinPaid { return true }
        waitsWithoutSpinning += 1
        guard waitsWithoutSpinning >= Self.probeInterval else { return false }
        waitsWithoutSpinning = 0
        return true
    }

    /// Records whether a wait that spun had its frame come while it spun.
    mutating func spun(paid: Bool) {
        lastSpinPaid = paid
        if paid { waitsWithoutSpinning = 0 }
    }
}
