import ActomatonHost
import CProcessControl
import Glibc

/// Renders a DOT diagram to SVG with Graphviz's `dot`, when it is installed: a child process
/// fed the text on its standard input, given ``timeLimit`` and at most ``maxOutputSize`` bytes of
/// output, killed past either. Its calls block: run them on a thread of their own.
struct GraphvizRenderer: Sendable {
    /// Why a diagram was not rendered.
    enum Failure: Error, Equatable, CustomStringConvertible {
        /// No `dot` on `PATH`.
        case notInstalled
        /// `dot` ran and failed, or took too long, or wrote too much.
        case failed(String)

        var description: String {
            switch self {
            case .notInstalled: "Graphviz (dot) is not installed"
            case let .failed(reason): reason
            }
        }
    }

    /// The longest a rendering may take, by default.
    static let defaultTimeLimit: Duration = .seconds(10)
    /// The most bytes of SVG a rendering may write.
    static let maxOutputSize = 4 << 20

    /// The program: `dot`, looked up on `PATH`.
    var program = "dot"
    /// Its arguments.
    var arguments = ["-Tsvg"]
    /// The longest a rendering may take.
    var timeLimit = Self.defaultTimeLimit

    /// `dot` as SVG. Blocks.
    func svg(of dot: String) -> Result<String, Failure> {
        var input: [Int32] = [-1, -1]
        var output: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &input) == 0 else {
            return .failure(.failed("cannot start dot: \(Errno.current)"))
        }
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &output) == 0 else {
            SystemCall.close(input[0])
            SystemCall.close(input[1])
            return .failure(.failed("cannot start dot: \(Errno.current)"))
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        let pid = argv.withUnsafeBufferPointer { argv in
            actomaton_spawn_filter(program, UnsafeMutablePointer(mutating: argv.baseAddress), input[1], output[1])
        }
        argv.forEach { free($0) }
        SystemCall.close(input[1])
        SystemCall.close(output[1])
        defer {
            SystemCall.close(output[0])
            if input[0] >= 0 { SystemCall.close(input[0]) }
        }
        guard pid > 0 else {
            return .failure(-pid == ENOENT ? .notInstalled : .failed("cannot start dot: \(Errno(Int32(-pid)))"))
        }
        var reaped = false
        defer {
            if !reaped {
                kill(pid, SIGKILL)
                _ = try? SystemCall.waitForProcess(pid)
            }
        }
        let deadline = ContinuousClock.now + timeLimit
        let text = Array(dot.utf8)
        var sent = 0
        var svg: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return .failure(.failed("dot took more than \(timeLimit)")) }
            var descriptors = [pollfd(fd: output[0], events: Int16(POLLIN), revents: 0)]
            if input[0] >= 0 { descriptors.append(pollfd(fd: input[0], events: Int16(POLLOUT), revents: 0)) }
            let milliseconds = Int32(clamping: Int64(left / .milliseconds(1)) + 1)
            guard (try? descriptors.withUnsafeMutableBufferPointer({ try SystemCall.poll($0, milliseconds: milliseconds) })) != nil else {
                return .failure(.failed("cannot read dot's output: \(Errno.current)"))
            }
            if input[0] >= 0, descriptors.count > 1, descriptors[1].revents != 0 {
                let written = text.withUnsafeBytes { bytes in
                    try? SystemCall.send(input[0], UnsafeRawBufferPointer(rebasing: bytes[sent...]), flags: Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                if let written { sent += written }
                if written == nil || sent == text.count {
                    // All sent, or dot stopped reading: the end of its input either way.
                    SystemCall.close(input[0])
                    input[0] = -1
                }
            }
            if descriptors[0].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { try? SystemCall.read(output[0], into: $0) } ?? 0
                if count == 0 { break }
                svg += buffer[..<count]
                guard svg.count <= Self.maxOutputSize else {
                    return .failure(.failed("dot wrote more than \(Self.maxOutputSize) bytes"))
                }
            }
        }
        // dot closed its output: it is ending.
        let left = max(.zero, deadline - ContinuousClock.now)
        guard actomaton_wait_for_exit(pid, Int32(clamping: Int64(left / .milliseconds(1)) + 1)) == 1 else {
            return .failure(.failed("dot took more than \(timeLimit)"))
        }
        reaped = true
        guard let status = try? SystemCall.waitForProcess(pid) else { return .failure(.failed("dot vanished")) }
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            return .failure(.failed(status & 0x7f == 0 ? "dot could not read the diagram (exit status \((status >> 8) & 0xff))"
                                                       : "dot was killed by signal \(status & 0x7f)"))
        }
        guard let text = String(validating: svg, as: UTF8.self) else { return .failure(.failed("dot wrote text that is not UTF-8")) }
        return .success(text)
    }
}
