#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a system call failed: the `errno` value it left, by name.
package struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    /// The `errno` value.
    package let code: Int32

    /// The failure `code` names.
    package init(_ code: Int32) {
        self.code = code
    }

    /// The value `errno` holds now, on this thread.
    package static var current: Errno { Errno(errno) }

    /// `EINTR`: a signal interrupted the call (``SystemCall`` retries it).
    package static let interrupted = Errno(EINTR)
    /// `EAGAIN` (`EWOULDBLOCK`): a non-blocking call would have waited.
    package static let wouldBlock = Errno(EAGAIN)
    /// `EPIPE`: the other end of a pipe or socket is closed.
    package static let brokenPipe = Errno(EPIPE)
    /// `ECONNRESET`: the peer reset the connection.
    package static let connectionReset = Errno(ECONNRESET)

    /// The system's message for the code (`strerror`), as the host's messages print it.
    package var description: String { String(cString: strerror(code)) }
}

/// The host's system calls, in one place: each retries `EINTR` and throws an ``Errno`` for any
/// other failure, so no caller writes that loop again. Every call here may block its thread:
/// call them on a thread of the host's own (a worker round trip, the journal's writer, the
/// input reader), never on the concurrency pool's threads for longer than a moment.
package enum SystemCall {
    /// Runs `call` until it is not interrupted; its result, or `errno` when it returned -1.
    @inline(__always)
    private static func retrying<Result: BinaryInteger>(_ call: () -> Result) throws(Errno) -> Result {
        while true {
            let result = call()
            if result >= 0 { return result }
            let failure = Errno.current
            if failure != .interrupted { throw failure }
        }
    }

    /// Whether the process ignores `signal` (`SIG_IGN`): as `nohup` leaves SIGHUP, and a shell
    /// SIGINT for a job it runs in the background. A host that takes its stop signals leaves
    /// those alone.
    package static func ignores(signal: Int32) -> Bool {
        var current = sigaction()
        guard sigaction(signal, nil, &current) == 0 else { return false }
        return unsafeBitCast(current.__sigaction_handler, to: UInt.self) == unsafeBitCast(SIG_IGN, to: UInt.self)
    }

    /// `read(2)`: at most `buffer.count` bytes; 0 at the end of the file.
    package static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try retrying { Glibc.read(descriptor, buffer.baseAddress, buffer.count) }
    }

    /// `write(2)`: some of `bytes`; how many.
    package static func write(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) throws(Errno) -> Int {
        try retrying { Glibc.write(descriptor, bytes.baseAddress, bytes.count) }
    }

    /// Writes all of `bytes`, however many `write(2)` calls it takes. A write that accepts
    /// nothing fails with `EIO`.
    package static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var offset = 0
        while offset < bytes.count {
            let written = try write(descriptor, UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            guard written > 0 else { throw Errno(EIO) }
            offset += written
        }
    }

    /// `send(2)` with `flags`: some of `bytes`; how many.
    package static func send(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, flags: Int32) throws(Errno) -> Int {
        try retrying { Glibc.send(descriptor, bytes.baseAddress, bytes.count, flags) }
    }

    /// `recv(2)` with `flags`: at most `buffer.count` bytes; 0 when the peer closed.
    package static func receive(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, flags: Int32) throws(Errno) -> Int {
        try retrying { Glibc.recv(descriptor, buffer.baseAddress, buffer.count, flags) }
    }

    /// `poll(2)` on `descriptors` for at most `milliseconds` (-1: no limit); how many are ready,
    /// 0 when the time ran out. An interrupted wait starts again with the whole timeout: a
    /// caller with a deadline checks it when this returns.
    package static func poll(_ descriptors: UnsafeMutableBufferPointer<pollfd>, milliseconds: Int32) throws(Errno) -> Int {
        Int(try retrying { Glibc.poll(descriptors.baseAddress, nfds_t(descriptors.count), milliseconds) })
    }

    /// `open(2)`: a new descriptor.
    package static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(Errno) -> Int32 {
        try retrying { Glibc.open(path, flags, mode) }
    }

    /// `close(2)`, once: on Linux the descriptor is gone even when it reports `EINTR`, so it is
    /// never retried (a retry could close a descriptor another thread just opened).
    package static func close(_ descriptor: Int32) {
        _ = Glibc.close(descriptor)
    }

    /// `flock(2)` with `operation` (`LOCK_EX | LOCK_NB`, …).
    package static func flock(_ descriptor: Int32, _ operation: Int32) throws(Errno) {
        _ = try retrying { lockFile(descriptor, operation) }
    }

    /// `waitpid(2)`: waits for `pid` to end (with `options`) and returns its status; `nil` with
    /// `WNOHANG` while it still runs.
    package static func waitForProcess(_ pid: pid_t, options: Int32 = 0) throws(Errno) -> Int32? {
        var status: Int32 = 0
        let ended = try retrying { Glibc.waitpid(pid, &status, options) }
        return ended == 0 ? nil : status
    }
}

/// `flock(2)`: at file scope, where the name is the function, not Glibc's `struct flock`.
private func lockFile(_ descriptor: Int32, _ operation: Int32) -> Int32 {
    flock(descriptor, operation)
}
