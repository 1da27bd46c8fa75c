@testable import HostCommandLine
import Glibc
import Testing

@Suite("Input line reader: CRLF, BOM, checked lines, bounded buffering")
struct InputLineReaderTests {
    /// The lines `bytes` make, read through a pipe as standard input would be.
    private func lines(_ bytes: [UInt8], maxLength: Int = InputLine.maxLength) async -> [InputLineReader.Line] {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let writer = ends[1]
        let thread = Task.detached {
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = write(writer, buffer.baseAddress! + offset, buffer.count - offset)
                    if written <= 0 { break }
                    offset += written
                }
            }
            close(writer)
        }
        var result: [InputLineReader.Line] = []
        for await line in InputLineReader(descriptor: ends[0], closesDescriptor: true, maxLength: maxLength) { result.append(line) }
        await thread.value
        return result
    }

    private func texts(_ lines: [InputLineReader.Line]) -> [String] {
        lines.map { line in
            switch line.text {
            case let .success(text): text
            case let .failure(error): "error: \(error)"
            }
        }
    }

    @Test func crlfAndAByteOrderMark() async {
        let input = Array("\u{FEFF}add 1\r\n:state\r\n\r\nlast\r\n".utf8)
        #expect(texts(await lines(input)) == ["add 1", ":state", "", "last"])
    }

    @Test func aByteOrderMarkOnlyStartsTheFirstLine() async {
        let input = Array("a\n\u{FEFF}b\n".utf8)
        #expect(texts(await lines(input)) == ["a", "\u{FEFF}b"])
    }

    @Test func theLastLineNeedsNoLineBreak() async {
        #expect(texts(await lines(Array("a\nb".utf8))) == ["a", "b"])
        #expect(texts(await lines(Array("a\r".utf8))) == ["a"])
        #expect(texts(await lines([])) == [])
    }

    @Test func nulAndInvalidUTF8AreErrorsOfTheirLine() async {
        let input: [UInt8] = Array("add 1".utf8) + [0] + Array("junk\nok\né".utf8) + [0xC3, 0x28, 0x0A] + Array("\u{1F600}".utf8).prefix(3) + [0x0A]
        let read = await lines(input)
        #expect(read.map(\.number) == [1, 2, 3, 4])
        #expect(texts(read) == [
            "error: the line holds a NUL character (column 6); NUL cannot be sent",
            "ok",
            "error: the line is not valid UTF-8 (a bad byte at column 3)",
            "error: the line is not valid UTF-8 (a bad byte at column 1)",
        ])
    }

    @Test func lineLengthLimit() async {
        let limit = 16
        let atLimit = String(repeating: "x", count: limit)
        let input = Array("\(atLimit)\n\(atLimit)x\n\(atLimit)\r\nnext\n\(atLimit)xx".utf8)
        let read = await lines(input, maxLength: limit)
        #expect(texts(read) == [atLimit, "error: the line is longer than 16 bytes; it was skipped", atLimit, "next",
                                "error: the line is longer than 16 bytes; it was skipped"])
        #expect(read.map(\.number) == [1, 2, 3, 4, 5])
    }

    /// Regression (audit): a line past the limit was said to be too long only at its end, so
    /// input with no line break (`run counter.so --script /dev/zero`) was read for ever and
    /// nothing was said. It is said once the limit is passed, while the line goes on; the rest
    /// of it is skipped, and the next line has the next number.
    @Test func aLineIsSaidTooLongBeforeItEnds() async {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let reader = InputLineReader(descriptor: ends[0], closesDescriptor: true, maxLength: 16)
        var iterator = reader.makeAsyncIterator()
        let past = [UInt8](repeating: UInt8(ascii: "x"), count: 40)
        #expect(past.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) } == 40)
        // The writer is still open: no line break, no end of input.
        let first = await iterator.next()
        #expect(first?.number == 1 && first?.text == .failure(.tooLong(limit: 16)), "\(String(describing: first))")
        let rest = Array("xxxx\nnext\n".utf8)
        #expect(rest.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) } == rest.count)
        close(ends[1])
        let second = await iterator.next()
        #expect(second?.number == 2 && second?.text == .success("next"), "\(String(describing: second))")
        #expect(await iterator.next() == nil)
    }

    /// The real limit, 1 MiB: at it a line is read; one byte past it, the line is skipped and
    /// the next line still runs.
    @Test func oneMebibyteLines() async {
        let atLimit = [UInt8](repeating: UInt8(ascii: "a"), count: InputLine.maxLength)
        let read = await lines(atLimit + [0x0A] + atLimit + [UInt8(ascii: "a"), 0x0A, UInt8(ascii: "b")])
        #expect(read.count == 3)
        #expect((try? read[0].text.get())?.utf8.count == InputLine.maxLength)
        #expect(read[1].text == .failure(.tooLong(limit: InputLine.maxLength)))
        #expect(read[2].text == .success("b"))
    }

    /// However much is written, the reader holds at most its queue and one chunk: the writer
    /// waits, as `yes increment | actomaton-host run counter.so` must.
    @Test func backPressure() async throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let capacity = 4
        let reader = InputLineReader(descriptor: ends[0], closesDescriptor: true, capacity: capacity)
        var iterator = reader.makeAsyncIterator()
        // Write 8 MiB without blocking: the pipe and the reader take only what they can hold.
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        let line = Array("increment\n".utf8)
        let block = [UInt8]((0..<(64 << 10) / line.count).flatMap { _ in line })
        var accepted = 0
        var attempts = 0
        while accepted < 8 << 20, attempts < 10_000 {
            let written = block.withUnsafeBytes { write(ends[1], $0.baseAddress!, $0.count) }
            if written > 0 {
                accepted += written
            } else {
                if reader.isWaitingForRoom { break }
                attempts += 1
                usleep(1000)
            }
        }
        #expect(reader.isWaitingForRoom)
        #expect(reader.totalBytesRead <= InputLineReader.chunkSize * 2, "read \(reader.totalBytesRead) bytes ahead of the consumer")
        #expect(accepted < 2 << 20, "the pipe took \(accepted) bytes")
        close(ends[1])
        // Every byte accepted is delivered, in order.
        var received = 0
        while let next = await iterator.next() {
            guard case let .success(text) = next.text else { Issue.record("line \(next.number): \(next.text)"); break }
            #expect("increment".hasPrefix(text))
            received += text.utf8.count + 1
        }
        #expect(received >= accepted && received <= accepted + 1)
    }

    @Test func aScriptThatIsADirectoryIsAnError() {
        let error = #expect(throws: InputLineReader.OpenError.self) { try InputLineReader(path: "/tmp") }
        #expect(error?.description == "/tmp: cannot read the script: it is a directory, not a file of input lines")
        let missing = #expect(throws: InputLineReader.OpenError.self) { try InputLineReader(path: "/no/such/script.txt") }
        #expect(missing?.description == "/no/such/script.txt: cannot open the script: No such file or directory")
    }

    /// Regression: a read that failed (standard input a directory: `run x.so < /tmp`) ended the
    /// input as if it were empty, and the command exited 0.
    @Test func aReadThatFailsIsTheLastLineNotTheEnd() async {
        let directory = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        #expect(directory >= 0)
        var lines: [InputLineReader.Line] = []
        for await line in InputLineReader(descriptor: directory, closesDescriptor: true) { lines.append(line) }
        #expect(lines == [.init(number: 1, text: .failure(.unreadable("Is a directory")))])
        #expect(lines.first.map { "\($0.text)" }?.contains("cannot read the input: Is a directory; nothing from here on was read") == true)
    }
}
