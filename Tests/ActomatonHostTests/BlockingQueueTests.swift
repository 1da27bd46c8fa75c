@testable import ActomatonHost
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A value shared with a queue's thread.
private final class Shared<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>
    init(_ value: Value) { storage = Mutex(value) }
    var value: Value { storage.withLock { $0 } }
    func update(_ body: @Sendable (inout Value) -> Void) { storage.withLock { body(&$0) } }
}

@Suite("The blocking queue and the system calls")
struct BlockingQueueTests {
    @Test func runsWorkInOrderOnItsOwnThread() throws {
        let queue = try BlockingQueue(name: "test-order")
        let seen = Shared<[Int]>([])
        let onQueue = Shared<[Bool]>([])
        for index in 0..<1000 {
            try queue.enqueue {
                seen.update { $0.append(index) }
                let current = queue.isCurrent
                onQueue.update { $0.append(current) }
            }
        }
        queue.close()
        #expect(seen.value == Array(0..<1000))
        #expect(onQueue.value.count == 1000 && onQueue.value.allSatisfy { $0 })
        #expect(!queue.isCurrent)
    }

    @Test func closeFinishesTheQueuedWorkAndJoins() throws {
        let queue = try BlockingQueue(name: "test-close")
        let gate = Shared(false)
        let done = Shared(0)
        // The first item holds the thread until the test opens the gate; the rest wait behind it.
        try queue.enqueue {
            while !gate.value { sched_yield() }
            done.update { $0 += 1 }
        }
        for _ in 0..<10 { try queue.enqueue { done.update { $0 += 1 } } }
        gate.update { $0 = true }
        queue.close()
        #expect(done.value == 11)
        queue.close() // idempotent
    }

    /// While it has no item, the thread reads a watched descriptor on its own thread; items
    /// still run, a watch that says it is over is not called again, and closing wakes it.
    @Test func anIdleThreadServesItsWatch() async throws {
        let queue = try BlockingQueue(name: "test-watch")
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd); close(writeEnd) }
        let read = Shared<[UInt8]>([])
        let onQueue = Shared(true)
        queue.watchWhileIdle(BlockingQueue.IdleWatch(descriptor: readEnd, isPending: { false }, handle: {
            var byte: UInt8 = 0
            guard Glibc.read(readEnd, &byte, 1) == 1 else { return false }
            let current = queue.isCurrent
            onQueue.update { $0 = $0 && current }
            let got = byte
            read.update { $0.append(got) }
            return got != 0 // a 0 ends the watch
        }))
        for byte: UInt8 in [1, 2, 3] {
            var value = byte
            #expect(write(writeEnd, &value, 1) == 1)
            #expect(await eventually { read.value.last == byte })
            let ran = Shared(false)
            try queue.enqueue { ran.update { $0 = true } }
            #expect(await eventually { ran.value }, "an item runs while the watch is set")
        }
        var end: UInt8 = 0
        var after: UInt8 = 9
        #expect(write(writeEnd, &end, 1) == 1)
        #expect(await eventually { read.value == [1, 2, 3, 0] })
        #expect(write(writeEnd, &after, 1) == 1)
        let ran = Shared(false)
        try queue.enqueue { ran.update { $0 = true } }
        #expect(await eventually { ran.value })
        #expect(read.value == [1, 2, 3, 0], "an ended watch is not called again")
        #expect(onQueue.value)
        queue.close() // wakes the thread wherever it waits
    }

    @Test func enqueueAfterCloseIsRefused() throws {
        let queue = try BlockingQueue(name: "test-refuse")
        queue.close()
        let ran = Shared(false)
        let error = #expect(throws: BlockingQueue.Closed.self) { try queue.enqueue { ran.update { $0 = true } } }
        #expect(error?.description == "the blocking queue 'test-refuse' is closed: no more work is accepted")
        #expect(ran.value == false)
    }

    @Test func closeFromItsOwnWorkDoesNotDeadlock() throws {
        let queue = try BlockingQueue(name: "test-self")
        let closedInside = Shared(false)
        try queue.enqueue {
            queue.close()
            closedInside.update { $0 = true }
        }
        queue.close() // joins, or finds the queue closed from inside already
        _ = closedInside.value
    }

    /// Regression: work holding the last reference to its queue released it on the queue's
    /// thread with the queue's lock held; `deinit` then took the lock again and hung the thread
    /// for good (seen as a hung `make test`: an input reader's queue).
    @Test func workHoldingTheLastReferenceToItsQueueLetsItsThreadEnd() async throws {
        for index in 0..<20 {
            let name = "tq-last-\(index)"
            let gate = DispatchSemaphore(value: 0)
            // The queue's thread says its ID once it runs the work.
            let thread: Int32 = await withCheckedContinuation { continuation in
                do {
                    try Self.startQueue(named: name, waitingFor: gate) { continuation.resume(returning: $0) }
                } catch {
                    continuation.resume(returning: -1)
                }
            }
            #expect(thread > 0, "the queue's thread ID was not read")
            // This test's reference is gone: the work's capture is the last one.
            gate.signal()
            // By its thread ID, not by name: a thread another one starts takes its name.
            let task = "/proc/self/task/\(thread)"
            let deadline = ContinuousClock.now + .seconds(30)
            while Self.isRunning(task, named: name), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(!Self.isRunning(task, named: name), "the thread of queue \(name) did not end")
        }
    }

    private static func startQueue(named name: String, waitingFor gate: DispatchSemaphore,
                                   started: @escaping @Sendable (_ thread: Int32) -> Void) throws {
        let queue = try BlockingQueue(name: name)
        try queue.enqueue { [queue] in
            // `/proc/thread-self` links to `PID/task/TID`.
            let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
            started(Int32(link.split(separator: "/").last ?? "") ?? -1)
            gate.wait()
            _ = queue.name
        }
    }

    /// Whether the thread `/proc/self/task/ID` still runs under `name` (an ID may be reused).
    private static func isRunning(_ task: String, named name: String) -> Bool {
        (try? String(contentsOfFile: task + "/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines) == name
    }

    /// The names of this process's threads.
    private static func threadNames() -> Set<String> {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return Set(tasks.compactMap { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines)
        })
    }

    @Test func theThreadIsNamedWithinLinuxsLimit() throws {
        let queue = try BlockingQueue(name: "a-name-longer-than-fifteen")
        #expect(queue.name == "a-name-longer-t" && queue.name.utf8.count == BlockingQueue.maxNameBytes)
        let name = Shared("")
        try queue.enqueue {
            let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
            name.update { $0 = comm.trimmingCharacters(in: .newlines) }
        }
        queue.close()
        #expect(name.value == "a-name-longer-t")
        // A cut never splits a character.
        #expect(try BlockingQueue(name: "fourteen-bytesé").name == "fourteen-bytes")
    }

    @Test func systemCallsThrowTheirErrno() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        defer { SystemCall.close(descriptors[0]) }
        let text = Array("hello".utf8)
        try text.withUnsafeBytes { bytes in try SystemCall.writeAll(descriptors[1], bytes) }
        SystemCall.close(descriptors[1])
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = try buffer.withUnsafeMutableBytes { bytes in try SystemCall.read(descriptors[0], into: bytes) }
        #expect(Array(buffer[..<count]) == text)
        #expect(try buffer.withUnsafeMutableBytes { bytes in try SystemCall.read(descriptors[0], into: bytes) } == 0)
        #expect(throws: Errno(EBADF)) {
            try buffer.withUnsafeMutableBytes { bytes in try SystemCall.read(-1, into: bytes) }
        }
        #expect(Errno(ENOENT).description == "No such file or directory")
        #expect(throws: Errno(ENOENT)) { try SystemCall.open("/no/such/file", O_RDONLY) }
    }

    @Test func aSecondLockIsWouldBlock() throws {
        let path = try temporaryDirectory() + "/lock"
        let first = try SystemCall.open(path, O_RDWR | O_CREAT | O_CLOEXEC, mode: 0o600)
        let second = try SystemCall.open(path, O_RDWR | O_CLOEXEC)
        defer { SystemCall.close(first); SystemCall.close(second) }
        try SystemCall.flock(first, LOCK_EX | LOCK_NB)
        #expect(throws: Errno.wouldBlock) { try SystemCall.flock(second, LOCK_EX | LOCK_NB) }
    }
}
