import ActomatonHost
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The lines of a file or of standard input, read on a thread of their own with back-pressure.
///
/// A line ends at `\n`; a `\r` before it (CRLF files) and a UTF-8 byte order mark at the start of
/// the first line are dropped. Each line is checked before anyone sees it: at most
/// ``InputLine/maxLength`` bytes (a longer line is skipped to its end and reported, never cut),
/// valid UTF-8, no NUL. Between the reading thread and the machines there are at most
/// `capacity` lines: when the machines fall behind, the thread stops reading, and the writer
/// (a pipe, a terminal) waits — memory stays bounded however fast input comes.
public final class InputLineReader: AsyncSequence, @unchecked Sendable {
    /// One line, numbered from 1: its text, or why it cannot be read.
    public struct Line: Sendable, Equatable {
        /// The line's number, from 1.
        public var number: Int
        /// The text without its line break, or the reason the line is refused.
        public var text: Result<String, InputLineError>
    }

    /// Why a script cannot be read at all.
    public struct OpenError: Error, Sendable, CustomStringConvertible {
        /// The path and the reason, one line.
        public var description: String
    }

    /// Lines buffered between the reading thread and the machines, by default.
    public static let defaultCapacity = 64
    /// Bytes read from the file at a time.
    static let chunkSize = 16 << 10

    private let descriptor: Int32
    private let closesDescriptor: Bool
    private let capacity: Int
    private let maxLength: Int
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let notFull = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Guarded by `mutex`:
    private var queue: [Line] = []
    private var queueHead = 0
    private var finished = false
    private var cancelled = false
    private var waiter: CheckedContinuation<Line?, Never>?
    private var started = false
    private var waitingForRoom = false
    private var bytesRead = 0

    /// Reads `descriptor` (standard input by default); `closesDescriptor` closes it at the end.
    public init(descriptor: Int32 = 0, closesDescriptor: Bool = false, capacity: Int = defaultCapacity, maxLength: Int = InputLine.maxLength) {
        precondition(capacity >= 1 && maxLength >= 1)
        self.descriptor = descriptor
        self.closesDescriptor = closesDescriptor
        self.capacity = capacity
        self.maxLength = maxLength
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(notFull, nil)
    }

    /// Opens the script at `path`: a file, a FIFO or a device, not a directory.
    public convenience init(path: String, capacity: Int = defaultCapacity) throws(OpenError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw OpenError(description: "\(path): cannot open the script: \(String(cString: strerror(errno)))")
        }
        var status = stat()
        if fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
            close(descriptor)
            throw OpenError(description: "\(path): cannot read the script: it is a directory, not a file of input lines")
        }
        self.init(descriptor: descriptor, closesDescriptor: true, capacity: capacity)
    }

    deinit {
        pthread_cond_destroy(notFull)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        notFull.deallocate()
    }

    /// Stops reading: the thread ends after its current read, and iteration ends.
    public func cancel() {
        pthread_mutex_lock(mutex)
        cancelled = true
        let pending = waiter
        waiter = nil
        pthread_cond_broadcast(notFull)
        pthread_mutex_unlock(mutex)
        pending?.resume(returning: nil)
    }

    /// Whether the reading thread is waiting for the machines to take a line (for tests).
    var isWaitingForRoom: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return waitingForRoom
    }

    /// Bytes read from the descriptor so far (for tests).
    var totalBytesRead: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return bytesRead
    }

    /// An iterator over the lines, in order.
    public func makeAsyncIterator() -> Iterator {
        startIfNeeded()
        return Iterator(reader: self)
    }

    /// Iterates the lines.
    public struct Iterator: AsyncIteratorProtocol {
        let reader: InputLineReader

        /// The next line, or `nil` when the input has ended.
        public mutating func next() async -> Line? {
            await reader.next()
        }
    }

    private func startIfNeeded() {
        pthread_mutex_lock(mutex)
        let start = !started
        started = true
        pthread_mutex_unlock(mutex)
        guard start else { return }
        // The thread holds the reader until the input ends or reading is cancelled. It is never
        // joined (a read of a terminal may block until the user types): its one work item
        // closes the queue from inside, which lets the thread end on its own.
        do {
            let thread = try BlockingQueue(name: "input-lines")
            try thread.enqueue { [self] in
                readAll()
                thread.close()
            }
        } catch {
            deliver(nil)
        }
    }

    private func next() async -> Line? {
        pthread_mutex_lock(mutex)
        if queueHead < queue.count {
            let line = queue[queueHead]
            queueHead += 1
            if queueHead == queue.count {
                queue.removeAll(keepingCapacity: true)
                queueHead = 0
            }
            pthread_cond_signal(notFull)
            pthread_mutex_unlock(mutex)
            return line
        }
        if finished || cancelled {
            pthread_mutex_unlock(mutex)
            return nil
        }
        return await withCheckedContinuation { continuation in
            waiter = continuation
            pthread_mutex_unlock(mutex)
        }
    }

    /// Hands `line` to a waiting consumer or queues it, waiting while the queue is full;
    /// `nil` ends the sequence. Returns `false` once cancelled.
    @discardableResult
    private func deliver(_ line: Line?) -> Bool {
        pthread_mutex_lock(mutex)
        guard let line else {
            finished = true
            let pending = waiter
            waiter = nil
            pthread_mutex_unlock(mutex)
            pending?.resume(returning: nil)
            return false
        }
        while queue.count - queueHead >= capacity, !cancelled {
            waitingForRoom = true
            pthread_cond_wait(notFull, mutex)
        }
        waitingForRoom = false
        if cancelled {
            pthread_mutex_unlock(mutex)
            return false
        }
        if let pending = waiter {
            waiter = nil
            pthread_mutex_unlock(mutex)
            pending.resume(returning: line)
        } else {
            queue.append(line)
            pthread_mutex_unlock(mutex)
        }
        return true
    }

    /// The reading thread: splits chunks into lines and delivers each.
    private func readAll() {
        defer {
            if closesDescriptor { SystemCall.close(descriptor) }
        }
        var splitter = LineSplitter(maxLength: maxLength)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            let count: Int
            do throws(Errno) {
                count = try SystemCall.read(descriptor, into: chunk)
            } catch .wouldBlock {
                // A non-blocking descriptor (a terminal or pipe set so by another program): wait for input.
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                _ = withUnsafeMutablePointer(to: &poller) { try? SystemCall.poll(UnsafeMutableBufferPointer(start: $0, count: 1), milliseconds: -1) }
                continue
            } catch {
                // An error is not the end of the input: the line where it came says so.
                guard deliver(splitter.readFailed(error.description)) else { return }
                deliver(nil)
                return
            }
            if count == 0 { break }
            pthread_mutex_lock(mutex)
            bytesRead += count
            pthread_mutex_unlock(mutex)
            var stopped = false
            splitter.feed(UnsafeRawBufferPointer(rebasing: chunk[0..<count])) { line in
                if !stopped, !deliver(line) { stopped = true }
            }
            if stopped { return }
        }
        if let last = splitter.finish() {
            guard deliver(last) else { return }
        }
        deliver(nil)
    }
}

/// Cuts bytes into checked lines: what ``InputLineReader`` does on its thread.
struct LineSplitter {
    let maxLength: Int
    private var pending: [UInt8] = []
    private var overflowed = false
    /// Whether the line in progress was reported too long already, as soon as it was.
    private var reportedOverflow = false
    private var number = 0
    private var hasPendingBytes = false

    init(maxLength: Int) {
        self.maxLength = maxLength
        pending.reserveCapacity(min(maxLength, 4096))
    }

    /// Splits `bytes`, calling `emit` with each line completed.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, _ emit: (InputLineReader.Line) -> Void) {
        var start = 0
        while start < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[start...])
            let end = rest.firstIndex(of: UInt8(ascii: "\n")).map { start + $0 }
            let piece = UnsafeRawBufferPointer(rebasing: bytes[start..<(end ?? bytes.count)])
            append(piece)
            if overflowed, !reportedOverflow {
                // Said at once, not at the line's end: input with no line break (`--script
                // /dev/zero`) was read for ever, and nothing said why nothing happened.
                reportedOverflow = true
                number += 1
                emit(.init(number: number, text: .failure(.tooLong(limit: maxLength))))
            }
            guard let end else { return }
            if let line = takeLine() { emit(line) }
            start = end + 1
        }
    }

    /// The last line, when the input does not end with a line break.
    mutating func finish() -> InputLineReader.Line? {
        hasPendingBytes ? takeLine() : nil
    }

    /// The line a read failed in (its bytes so far dropped): the failure, with `reason`.
    mutating func readFailed(_ reason: String) -> InputLineReader.Line {
        _ = takeLine()
        return .init(number: max(number, 1), text: .failure(.unreadable(reason)))
    }

    private mutating func append(_ piece: UnsafeRawBufferPointer) {
        guard !piece.isEmpty else { return }
        hasPendingBytes = true
        guard !overflowed else { return }
        // Four bytes over the limit are kept: a byte order mark and the `\r` of a CRLF line are not counted.
        if pending.count + piece.count > maxLength + 4 {
            overflowed = true
            pending.removeAll(keepingCapacity: true)
        } else {
            pending.append(contentsOf: piece)
        }
    }

    /// The line whose bytes were appended, its number the next; `nil` when it was reported
    /// too long already.
    private mutating func takeLine() -> InputLineReader.Line? {
        defer {
            pending.removeAll(keepingCapacity: pending.capacity <= 64 << 10)
            overflowed = false
            reportedOverflow = false
            hasPendingBytes = false
        }
        if reportedOverflow { return nil }
        number += 1
        if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
        if number == 1, pending.starts(with: [0xEF, 0xBB, 0xBF]) { pending.removeFirst(3) }
        if overflowed || pending.count > maxLength {
            return .init(number: number, text: .failure(.tooLong(limit: maxLength)))
        }
        return .init(number: number, text: Self.check(pending))
    }

    /// The text of `bytes`, or the first thing wrong with it.
    static func check(_ bytes: [UInt8]) -> Result<String, InputLineError> {
        if let nul = bytes.firstIndex(of: 0) { return .failure(.nulCharacter(offset: nul)) }
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var offset = 0
        decoding: while true {
            switch decoder.decode(&iterator) {
            case let .scalarValue(scalar): offset += UTF8.width(scalar)
            case .emptyInput: break decoding
            case .error: return .failure(.invalidUTF8(offset: offset))
            }
        }
        return .success(String(decoding: bytes, as: UTF8.self))
    }
}
