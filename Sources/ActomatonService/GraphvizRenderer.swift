import ActomatonHost
import CProcessControl
import Glibc

/// Renders a DOT diagram to SVG with Graphviz's `dot`, when it is installed: a child process
/// fed the text on its standard input, given ``timeLimit`` and at most ``maxOutputSize`` bytes of
/// output, killed past either; an SVG with markup outside Graphviz's drawing elements is refused
/// (``markupOutsideTheDrawing(in:)``). Its calls block: run them on a thread of their own.
struct GraphvizRenderer: Sendable {
    /// Why a diagram was not rendered.
    enum Failure: Error, Equatable, CustomStringConvertible {
        /// No `dot` on `PATH`.
        case notInstalled
        /// `dot` ran and failed, or took too long, or wrote too much, or wrote more than a drawing.
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
        if let foreign = Self.markupOutsideTheDrawing(in: svg) { return .failure(.failed("dot wrote \(foreign), not a drawing")) }
        return .success(text)
    }

    /// The elements Graphviz's SVG is made of, all in the SVG namespace.
    static let drawingElements: Set<String> = [
        "svg", "g", "title", "a", "path", "polygon", "polyline", "ellipse", "circle", "rect", "line", "text", "tspan",
        "image", "defs", "linearGradient", "radialGradient", "stop", "clipPath",
    ]

    /// What in `svg` is not Graphviz's drawing, or `nil`: an element outside ``drawingElements``
    /// (a prefixed one is in another namespace), a namespace declared below the root `<svg>`, a
    /// root in another namespace, markup that does not parse.
    ///
    /// Graphviz 2.43 writes a `fontname` or a `URL` into the SVG unescaped, so a plugin's DOT text
    /// can smuggle in any markup (an XHTML `<meta http-equiv="refresh">`, a form): such a drawing
    /// is not sent. The page keeps its own allow-list too.
    static func markupOutsideTheDrawing(in svg: [UInt8]) -> String? {
        let svgNamespace = Array("http://www.w3.org/2000/svg".utf8)
        var index = 0
        var isRoot = true
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        func starts(_ text: String, at offset: Int) -> Bool { svg[offset...].starts(with: text.utf8) }
        /// The index just past the first `terminator` from `offset`.
        func end(of terminator: String, from offset: Int) -> Int? {
            let pattern = Array(terminator.utf8)
            var at = offset
            while at + pattern.count <= svg.count {
                if svg[at..<(at + pattern.count)].elementsEqual(pattern) { return at + pattern.count }
                at += 1
            }
            return nil
        }
        while let open = svg[index...].firstIndex(of: UInt8(ascii: "<")) {
            if open + 1 < svg.count, [UInt8(ascii: "!"), UInt8(ascii: "?"), UInt8(ascii: "/")].contains(svg[open + 1]) {
                // A comment, a CDATA section, the declaration and DOCTYPE, an end tag.
                let after = starts("<!--", at: open) ? end(of: "-->", from: open + 4)
                    : starts("<![CDATA[", at: open) ? end(of: "]]>", from: open + 9) : end(of: ">", from: open + 2)
                guard let after else { return "markup that does not parse" }
                index = after
                continue
            }
            // A start tag: its name, then name="value" attributes.
            var at = open + 1
            while at < svg.count, !isSpace(svg[at]), svg[at] != UInt8(ascii: "/"), svg[at] != UInt8(ascii: ">") { at += 1 }
            let name = String(decoding: svg[(open + 1)..<at], as: UTF8.self)
            guard Self.drawingElements.contains(name) else { return "an element <\(name.prefix(40))>" }
            guard !isRoot || name == "svg" else { return "a root element <\(name)>" }
            var namespace: ArraySlice<UInt8>? = nil
            while true {
                while at < svg.count, isSpace(svg[at]) { at += 1 }
                guard at < svg.count else { return "markup that does not parse" }
                if svg[at] == UInt8(ascii: ">") || starts("/>", at: at) { break }
                let nameStart = at
                while at < svg.count, !isSpace(svg[at]), svg[at] != UInt8(ascii: "="), svg[at] != UInt8(ascii: ">") { at += 1 }
                let attribute = svg[nameStart..<at]
                while at < svg.count, isSpace(svg[at]) { at += 1 }
                guard at < svg.count, svg[at] == UInt8(ascii: "=") else { return "markup that does not parse" }
                at += 1
                while at < svg.count, isSpace(svg[at]) { at += 1 }
                guard at < svg.count, svg[at] == UInt8(ascii: "\"") || svg[at] == UInt8(ascii: "'") else { return "markup that does not parse" }
                let quote = svg[at]
                guard let close = svg[(at + 1)...].firstIndex(of: quote) else { return "markup that does not parse" }
                if attribute.starts(with: "xmlns".utf8) {
                    guard isRoot else { return "a namespace declared on <\(name)>" }
                    if attribute.elementsEqual("xmlns".utf8) { namespace = svg[(at + 1)..<close] }
                }
                at = close + 1
            }
            if isRoot {
                guard let namespace, namespace.elementsEqual(svgNamespace) else { return "a root <svg> outside the SVG namespace" }
                isRoot = false
            }
            index = at + 1
        }
        return isRoot ? "no <svg> element" : nil
    }
}
