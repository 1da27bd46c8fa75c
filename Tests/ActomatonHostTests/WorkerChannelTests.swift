@testable import ActomatonHost
import CProcessControl
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A host's and a worker's channel in this process, over one socket pair and one shared region,
/// as `WorkerProcess` connects them across two.
final class ChannelPair: @unchecked Sendable {
    let host: WorkerChannel
    let worker: WorkerChannel
    /// The region again, mapped as a worker that scribbles on it would.
    let region: UnsafeMutableRawPointer
    private var sockets: [Int32] = [-1, -1]

    init() throws {
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &sockets) == 0 else {
            throw Errno.current
        }
        let (descriptor, hostRings) = try SharedRings.makeForWorker().get()
        defer { close(descriptor) }
        host = WorkerChannel(descriptor: sockets[0], rings: hostRings)
        worker = WorkerChannel(descriptor: sockets[1], yieldsWhileSpinning: true, rings: try SharedRings.map(descriptor, as: .worker).get())
        region = try #require(actomaton_shared_region_map(descriptor))
    }

    /// Closes the worker's end of the socket, as its process's end does. Shut down first: a
    /// child process another test's thread is starting holds a copy of every descriptor until
    /// it execs (`posix_spawn` clones the descriptor table), and while it does, `close` alone
    /// leaves the socket open and the host's end reads no hang-up (a full run once failed so).
    func closeWorkerSocket() {
        if sockets[1] >= 0 {
            _ = shutdown(sockets[1], Int32(SHUT_RDWR))
            close(sockets[1])
        }
        sockets[1] = -1
    }

    deinit {
        for socket in sockets where socket >= 0 { close(socket) }
        actomaton_shared_region_unmap(region)
    }
}

/// The channel's transport: frames through two rings in shared memory, the socket a doorbell.
///
/// Both sides of a test spin on their rings, as a host's machine thread and a worker do, and
/// wait in `poll`: each runs on a thread of its own (`onThreadOfItsOwn`), never on the
/// concurrency pool, whose two threads every other test's tasks need, and not among
/// `offThePool`'s slots, which tests waiting on the network hold for seconds (in them, the
/// 5 MiB frames took 146 s of a full run). One test at a time, so that at most two threads spin.
@Suite("Worker channel", .serialized)
struct WorkerChannelTests {
    /// Runs `body` on a thread of its own (it blocks), and waits for it.
    private static func onAnotherThread(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        let thread = Thread { body(); done.signal() }
        thread.start()
        return done
    }

    /// Frames past the ring's capacity (a snapshot at the contract's limit is 16 MiB; a ring
    /// holds 256 KiB) go through in pieces, each side waiting for the other to make room, in
    /// order; a round trip at a time, as the host asks.
    @Test func framesOfAnySizeGoThroughInOrder() async throws {
        let pair = try ChannelPair()
        let capacity = Int(ACTOMATON_RING_CAPACITY)
        // Past the ring four times over at most: each size is a few handoffs of the ring, and
        // a whole snapshot's 16 MiB would only take longer (5 MiB took minutes of spinning
        // beside the full suite on 2 cores).
        let sizes = [0, 1, 4091, capacity - 9, capacity - 8, capacity,
                     3 * capacity + 17, 1 << 20]
        let worker = pair.worker
        let echoed = Mutex<[Int]>([])
        let done = Self.onAnotherThread {
            for _ in sizes {
                guard case let .restore(bytes) = try? worker.receiveRequest(deadline: .now + .seconds(60)),
                      (try? worker.send(WorkerReply.snapshotTaken(bytes))) != nil else { return }
                echoed.withLock { $0.append(bytes.count) }
            }
        }
        let (wrong, ended) = try await onThreadOfItsOwn {
            var wrong: [Int] = []
            for (index, size) in sizes.enumerated() {
                let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
                try pair.host.send(WorkerRequest.restore(bytes), deadline: .now + .seconds(60))
                let reply = try pair.host.receiveReply(deadline: .now + .seconds(60), vocabulary: nil)
                if reply != .snapshotTaken(bytes) { wrong.append(size) }
            }
            return (wrong, done.wait(timeout: .now() + 60) == .success)
        }
        #expect(wrong.isEmpty, "the frames of these sizes came back otherwise: \(wrong)")
        #expect(ended)
        #expect(echoed.withLock { $0 } == sizes)
    }

    /// Many small round trips, the pattern of a burst of actions: none lost, none twice, none
    /// waiting for a doorbell that was not rung (which would take the deadline).
    @Test func manyRoundTripsNeverWaitForTheirDeadline() async throws {
        let pair = try ChannelPair()
        let worker = pair.worker
        // Enough for a lost doorbell to show (it waits out the deadline); 20,000 spun for
        // 24 s beside the full suite, and slowed every other test.
        let count = 2_000
        let done = Self.onAnotherThread {
            for _ in 0..<count {
                guard case let .perform(name, _) = try? worker.receiveRequest(deadline: .now + .seconds(60)),
                      (try? worker.send(WorkerReply.log(name))) != nil else { return }
            }
        }
        let (firstWrong, ended) = try await onThreadOfItsOwn {
            for index in 0..<count {
                try pair.host.send(WorkerRequest.perform(name: "n\(index)", arguments: []), deadline: .now + .seconds(60))
                guard try pair.host.receiveReply(deadline: .now + .seconds(60), vocabulary: nil) == .log("n\(index)") else {
                    return (Optional(index), done.wait(timeout: .now() + 60) == .success)
                }
            }
            return (nil, done.wait(timeout: .now() + 60) == .success)
        }
        #expect(firstWrong == nil, "round trip \(firstWrong ?? 0) came back otherwise")
        #expect(ended)
    }

    /// A wait spins while spinning pays: after a spin that was not answered within its window,
    /// waits sleep at once, but every `probeInterval`-th, which spins to see whether spinning
    /// pays again; one that does brings the spinning back.
    @Test func waitsSpinWhileSpinningPays() {
        var advice = SpinAdvice()
        let first = advice.spinsThisWait()
        #expect(first, "a first wait spins")
        advice.spun(paid: true)
        let goingOn = (0..<100).map { _ in advice.spinsThisWait() }
        #expect(!goingOn.contains(false), "spins that pay go on")
        advice.spun(paid: false)
        for round in 0..<3 {
            let spins = (1...SpinAdvice.probeInterval).map { _ in advice.spinsThisWait() }
            #expect(spins == Array(repeating: false, count: SpinAdvice.probeInterval - 1) + [true], "round \(round)")
            advice.spun(paid: false)
        }
        let probes = (1...SpinAdvice.probeInterval).map { _ in advice.spinsThisWait() }
        #expect(probes.last == true, "the probe")
        advice.spun(paid: true)
        let back = (0..<2).map { _ in advice.spinsThisWait() }
        #expect(back == [true, true], "a probe that paid brings the spinning back")
    }

    /// A wait whose spin window passes without its frame (the other side is asleep, or waits
    /// for a core) stops the spinning; the channel still delivers every frame, spinning or not.
    @Test func aSpinWindowThatPassesWithoutTheFrameStopsTheSpinning() async throws {
        let pair = try ChannelPair()
        let worker = pair.worker
        #expect(pair.host.spinAdvice.lastSpinPaid)
        let done = Self.onAnotherThread {
            for index in 0..<40 {
                guard (try? worker.receiveRequest(deadline: .now + .seconds(60))) != nil,
                      (try? worker.send(WorkerReply.log("n\(index)"))) != nil else { return }
            }
        }
        let (stopped, replies) = try await onThreadOfItsOwn { () throws -> (Bool, [WorkerReply]) in
            // Nothing was asked: the whole window spins, then the wait ends at its deadline.
            let waited = Result { () throws(WorkerChannel.Failure) in try pair.host.receiveReply(deadline: .now, vocabulary: nil) }
            guard case .failure(.timedOut) = waited else { return (false, []) }
            let stopped = !pair.host.spinAdvice.lastSpinPaid
            var replies: [WorkerReply] = []
            for _ in 0..<40 {
                try pair.host.send(WorkerRequest.describe, deadline: .now + .seconds(60))
                replies.append(try pair.host.receiveReply(deadline: .now + .seconds(60), vocabulary: nil))
            }
            return (stopped, replies)
        }
        #expect(stopped, "a spin whose window passed did not pay")
        #expect(replies == (0..<40).map { .log("n\($0)") })
        #expect(done.wait(timeout: .now() + 60) == .success)
    }

    /// A frame put while the other side does not spin on its ring rings the doorbell (one
    /// byte on the socket), which wakes a side asleep in `poll`. A frame taken without sleeping
    /// leaves its doorbell; the next look between calls reads it (else the idle thread's `poll`
    /// would wake for ever).
    @Test func aFramePutWhileTheOtherSideDoesNotSpinRingsItsDoorbell() throws {
        let pair = try ChannelPair()
        func doorbellRung() -> Bool {
            var poller = pollfd(fd: pair.host.descriptor, events: Int16(POLLIN), revents: 0)
            return poll(&poller, 1, 0) == 1
        }
        #expect(!doorbellRung())
        try pair.worker.send(WorkerReply.log("while the host sleeps"))
        #expect(doorbellRung())
        #expect(try pair.host.receiveReply(deadline: .now + .seconds(30), vocabulary: nil) == .log("while the host sleeps"))
        #expect(try pair.host.receiveReplyIfReady(vocabulary: nil) == nil)
        #expect(!doorbellRung(), "the doorbell was read")
    }

    /// A worker that writes positions its ring cannot have is a protocol violation, one line,
    /// never a read outside the ring: its head more than a ring ahead of the host's place, or
    /// behind it, or its tail (for the host's ring) ahead of what the host wrote.
    @Test func aRingWithPositionsItCannotHaveIsAViolation() throws {
        let capacity = UInt64(ACTOMATON_RING_CAPACITY)
        for (head, tail): (UInt64, UInt64) in [(capacity + 1, 1), (UInt64.max, capacity + 1), (1 << 62, 1 << 62)] {
            let pair = try ChannelPair()
            // Ring 1 (the worker's replies): its head, the first field of its header (64 bytes each).
            pair.region.storeBytes(of: head, toByteOffset: 256, as: UInt64.self)
            do {
                _ = try pair.host.receiveReply(deadline: .now + .seconds(30), vocabulary: nil)
                Issue.record("a ring whose head is \(head) was read")
            } catch let .violation(violation) {
                #expect(violation.description == "the shared ring's positions are corrupt")
            } catch {
                Issue.record("\(error)")
            }
            #expect(pair.host.ringHoldsBytes, "the idle thread is sent to read it, and finds the violation")
            // Ring 0 (the host's requests): its tail, the second field of its header, ahead of
            // what the host wrote.
            pair.region.storeBytes(of: tail, toByteOffset: 64, as: UInt64.self)
            do {
                try pair.host.send(WorkerRequest.snapshot, deadline: .now + .seconds(5))
                Issue.record("a send into a ring whose tail is \(tail) went through")
            } catch let .violation(violation) {
                #expect(violation.description == "the shared ring's positions are corrupt")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    /// Regression: in a full run, `receiveReplyIfReady` once returned `nil` after
    /// `closeWorkerSocket()` instead of seeing the hang-up: a child process started meanwhile by
    /// another test's thread still held a copy of the worker's end (until its exec). A copy made
    /// with `dup` stands in for the child's.
    @Test func aClosedWorkerSocketHangsUpWhileACopyOfItsDescriptorLives() throws {
        let pair = try ChannelPair()
        let copy = dup(pair.worker.descriptor)
        try #require(copy >= 0)
        defer { close(copy) }
        pair.closeWorkerSocket()
        #expect(throws: WorkerChannel.Failure.self) { try pair.host.receiveReplyIfReady(vocabulary: nil) }
    }

    /// A worker that ends is seen as gone, once what it wrote before it ended is taken.
    @Test func whatAWorkerWroteBeforeItEndedIsReadThenItIsGone() throws {
        let pair = try ChannelPair()
        try pair.worker.send(WorkerReply.log("last words"))
        pair.closeWorkerSocket()
        #expect(try pair.host.receiveReply(deadline: .now + .seconds(30), vocabulary: nil) == .log("last words"))
        do {
            _ = try pair.host.receiveReply(deadline: .now + .seconds(30), vocabulary: nil)
            Issue.record("a frame came from a worker that was gone")
        } catch .closed {
        } catch {
            Issue.record("\(error)")
        }
    }

    /// Runs `hostile` on a thread of its own, over and over, while `body` — a wait with a short
    /// deadline — runs on another; expects `body` to end with `.timedOut`, well within 10 s.
    private static func expectTimedOut(while hostile: @escaping @Sendable () -> Void,
                                       _ body: @escaping @Sendable () throws(WorkerChannel.Failure) -> Void) async throws {
        let running = Mutex(true)
        let done = onAnotherThread {
            while running.withLock({ $0 }) { hostile() }
        }
        let (failure, waited) = try await onThreadOfItsOwn { () -> (String?, Duration) in
            let start = ContinuousClock.now
            var failure: String?
            do throws(WorkerChannel.Failure) {
                try body()
                failure = "the wait ended without timing out"
            } catch .timedOut {
            } catch {
                failure = "\(error)"
            }
            return (failure, ContinuousClock.now - start)
        }
        running.withLock { $0 = false }
        if let failure { Issue.record(Comment(rawValue: failure)) }
        #expect(await onThreadOfItsOwn { done.wait(timeout: .now() + 60) == .success })
        #expect(waited < .seconds(10), "\(waited)")
    }

    /// Regression (review): a worker that floods the socket with doorbells held the host in
    /// its loop reading them (15 s and more, past a 1-s deadline); a read takes at most 4 KiB
    /// now, and the wait's deadline stands.
    @Test func aWorkerFloodingTheSocketCannotHoldTheHostPastItsDeadline() async throws {
        let pair = try ChannelPair()
        let descriptor = pair.worker.descriptor
        let bytes = [UInt8](repeating: 1, count: 65536)
        try await Self.expectTimedOut(while: { _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) } }) { () throws(WorkerChannel.Failure) in
            _ = try pair.host.receiveReply(deadline: .now + .milliseconds(300), vocabulary: nil)
        }
    }

    /// Regression (review): a worker that makes the host's ring look full for good (its
    /// position a whole ring behind what the host wrote: a position it can have) held the
    /// host's send for ever; the send has the action's deadline.
    @Test func aSendIntoARingThatStaysFullTimesOut() async throws {
        let pair = try ChannelPair()
        // Ring 0's tail, a ring behind the host's head (0).
        pair.region.storeBytes(of: 0 &- UInt64(ACTOMATON_RING_CAPACITY), toByteOffset: 64, as: UInt64.self)
        try await Self.expectTimedOut(while: {}) { () throws(WorkerChannel.Failure) in
            try pair.host.send(WorkerRequest.snapshot, deadline: .now + .milliseconds(200))
        }
    }

    /// Regression (review): a worker that sends a frame a byte at a time, each within the spin
    /// window, kept the host spinning past its deadline (only a sleep checked it).
    @Test func aFrameTrickledAByteAtATimeTimesOut() async throws {
        let pair = try ChannelPair()
        let worker = pair.worker
        // A header for 60 MiB (near the largest frame), then its bytes one at a time: more
        // than any machine sends that way within the deadline.
        try worker.send(bytes: [0, 0, 0xC0, 0x03], deadline: nil)
        try await Self.expectTimedOut(while: { try? worker.send(bytes: [72], deadline: .now + .seconds(1)) }) { () throws(WorkerChannel.Failure) in
            _ = try pair.host.receiveReply(deadline: .now + .milliseconds(300), vocabulary: nil)
        }
    }

    /// Regression (review): a worker that takes the host's request a byte at a time, each
    /// within the spin window, kept the host's send spinning past its deadline.
    @Test func aRequestTakenAByteAtATimeTimesOut() async throws {
        let pair = try ChannelPair()
        let region = UInt(bitPattern: pair.region)
        // Ring 0's tail, moved a byte at a time (what the worker's take would store).
        try await Self.expectTimedOut(while: {
            let base = UnsafeMutableRawPointer(bitPattern: region)!
            let (head, position) = (base.load(as: UInt64.self), base.load(fromByteOffset: 64, as: UInt64.self))
            if position < head { base.storeBytes(of: position + 1, toByteOffset: 64, as: UInt64.self) }
        }) { () throws(WorkerChannel.Failure) in
            try pair.host.send(WorkerRequest.restore([UInt8](repeating: 7, count: 60 << 20)), deadline: .now + .milliseconds(300))
        }
    }
}
