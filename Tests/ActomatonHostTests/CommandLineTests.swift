import Foundation
import Testing

/// `actomaton-host` itself, run as a user runs it: exit statuses and what reaches the terminal.
@Suite("actomaton-host: exit statuses and output")
struct CommandLineTests {
    struct Outcome {
        var status: Int32
        var signalled: Bool
        var output: String
        var errors: String
    }

    /// Runs `actomaton-host arguments` with `input` on standard input.
    private func host(_ arguments: [String], input: String) throws -> Outcome {
        try host(arguments, bytes: Array(input.utf8))
    }

    /// Runs `actomaton-host arguments` with `bytes` on standard input.
    private func host(_ arguments: [String], bytes input: [UInt8]) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "\(pluginDirectory)/actomaton-host")
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = nil
        process.environment = environment
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(Data(input))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let errors = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, signalled: process.terminationReason == .uncaughtSignal,
                       output: String(decoding: output, as: UTF8.self), errors: String(decoding: errors, as: UTF8.self))
    }

    private var hostileArguments: [String] {
        ["\(pluginDirectory)/libActomatonHostTestFixtures.so", "--entry-symbol", "fixture_hostile_entry"]
    }

    @Test func aCrashIsReportedAndNeverExitsZero() throws {
        for _ in 0..<3 {
            let run = try host(["run"] + hostileArguments, input: "set 1\ncrash\nset 2\n")
            #expect(run.signalled && run.status == SIGSEGV, "status \(run.status)")
            #expect(run.errors == "error: actomaton-host crashed (SIGSEGV, a bad memory access), and every plugin's machine with it\n")
        }
        let directory = NSTemporaryDirectory() + "serve-crash-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try install(plugin("ActomatonHostTestFixtures"), at: directory + "/hostile.so")
        for _ in 0..<3 {
            let serve = try host(["serve", "--isolation", "none", "--plugins", directory, "--entry-symbol", "fixture_hostile_entry"],
                                 input: "hostile crash\n")
            #expect(serve.signalled && serve.status == SIGSEGV, "status \(serve.status)")
            #expect(serve.errors.hasSuffix("error: actomaton-host crashed (SIGSEGV, a bad memory access), and every plugin's machine with it\n"))
        }
        // By default `serve` isolates plugins: the crash costs one action, not the host.
        let isolated = try host(["serve", "--plugins", directory, "--entry-symbol", "fixture_hostile_entry"],
                                input: "hostile set 3\nhostile crash\n:state\n")
        #expect(isolated.status == 0 && !isolated.signalled)
        #expect(isolated.errors == "error: <stdin>:2: 'crash' failed: the plugin crashed (SIGSEGV); restarted from its last state\n")
        #expect(isolated.output.hasSuffix("hostile: {\"value\":3}\n"))
    }

    /// `inspect` names the flag that exists (it said `--isolate process`).
    @Test func inspectNamesTheIsolationFlag() throws {
        let run = try host(["inspect", plugin("CounterPlugin")], input: "")
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.hasSuffix("runs in: this process (native code), or a worker with --isolation process\n"), "\(run.output)")
    }

    @Test func aCutOffLoopIsAnErrorAndAFailedRun() throws {
        let run = try host(["run"] + hostileArguments, input: "loop\n")
        #expect(run.status == 1)
        #expect(run.errors == "error: plugin hostile: 'loop' not run: a chain of next actions went past 64 levels (a loop in the plugin?); the chain was cut off\n")
    }

    @Test func nothingFromOutsideReachesTheTerminalRaw() throws {
        let run = try host(["run", "--keep-going"] + hostileArguments, input: "describe_mode 5\nset 3\nfail_with_controls\nlog_with_controls\n\"\u{1B}[2J\"\n")
        #expect(run.status == 1)
        let everything = run.output + run.errors
        #expect(!everything.contains("\u{1B}"), "no escape character is printed")
        #expect(!everything.contains("\r"))
        #expect(run.output.contains(#"hostile: set 3 => {"value":3}\nerror: forged line\u{1B}[2J\u{1B}]0;title\u{7}"#))
        #expect(run.errors.contains(#"failed: no\nerror: forged line\u{1B}[31m red \xFF"#))
        #expect(run.errors.contains(#"[hostile] line one\r\nerror: forged\u{1B}[0m"#))
        // Every line printed is one line: none starts with the forged text.
        #expect(!everything.split(separator: "\n").contains { $0.hasPrefix("error: forged") })
    }

    @Test func printModes() throws {
        let input = "set 1\nset 2\n"
        let state = try host(["run"] + hostileArguments, input: input)
        #expect(state.output.contains(#"hostile: set 2 => {"value":2}"#))
        let summary = try host(["run", "--print", "summary"] + hostileArguments, input: input)
        #expect(summary.output.split(separator: "\n").suffix(2) == ["hostile: set 1", "hostile: set 2"])
        let none = try host(["run", "--print", "none"] + hostileArguments, input: input)
        #expect(none.output.split(separator: "\n").count == 1, "only the loaded line: \(none.output)")
        #expect(none.status == 0)
    }

    @Test func aLongStateLineIsCutWithANote() throws {
        let feed = "feed \"\(String(repeating: "a", count: 5000))\"\n"
        let run = try host(["run", "\(pluginDirectory)/libCSVTokenizerPlugin.so"], input: feed + "end\n")
        let lines = run.output.split(separator: "\n")
        let fed = try #require(lines.dropLast().last)
        #expect(fed.hasPrefix("csv: feed \"aaa"))
        #expect(fed.contains("… (3983 more bytes) => "), "the echoed action is cut at 1,024 bytes")
        let ended = try #require(lines.last)
        #expect(ended.hasPrefix(#"csv: end => {"errors":[],"records":[["aaa"#))
        #expect(ended.hasSuffix("more bytes; `:state` prints it whole)"))
        #expect(ended.utf8.count < 4096 + 100)
    }

    private var counterArguments: [String] { ["run", "\(pluginDirectory)/libCounterPlugin.so", "--print", "summary"] }

    /// A CRLF script with a byte order mark runs like its LF twin: every line, every directive.
    @Test func crlfScriptsWithAByteOrderMarkRun() throws {
        let script = "\u{FEFF}add 2\r\n# a comment\r\n:state\r\n{\"action\": \"add\", \"args\": [3]}\r\n:idle\r\n:state\r\n"
        let run = try host(counterArguments, input: script)
        #expect(run.status == 0 && run.errors == "", "\(run.errors)")
        #expect(run.output.split(separator: "\n").dropFirst() == [
            "counter: add 2", #"counter: {"count":2}"#, "counter: add 3", #"counter: {"count":5}"#,
        ])
    }

    /// A NUL is never cut silently: the line fails, and is not run as its first part.
    @Test func nulBytesFailTheirLine() throws {
        let bytes = Array("add 1".utf8) + [0] + Array("junk\nlogin".utf8) + [0x0A] + Array(":state\n".utf8)
        let run = try host(counterArguments + ["--keep-going"], bytes: bytes)
        #expect(run.status == 1)
        #expect(run.errors.hasPrefix("error: <stdin>:1: the line holds a NUL character (column 6); NUL cannot be sent\n"))
        #expect(run.output.hasSuffix(#"counter: {"count":0}"# + "\n"))
    }

    @Test func invalidUTF8FailsItsLine() throws {
        let run = try host(counterArguments, bytes: Array("add 1\nadd \u{FF}".utf8.dropLast(2)) + [0xFF, 0x0A])
        #expect(run.status == 1)
        #expect(run.errors == "error: <stdin>:2: the line is not valid UTF-8 (a bad byte at column 5)\n")
    }

    /// JSON nested a million levels deep costs nothing: refused at level 65.
    @Test func deeplyNestedJSONIsRefusedAtOnce() throws {
        let line = #"{"action": "add", "args": "# + String(repeating: "[", count: 1 << 19) + "\n"
        let started = ContinuousClock.now
        let run = try host(counterArguments, input: line)
        #expect(run.errors == "error: <stdin>:1: not valid JSON: arrays and objects are nested deeper than 64 levels (column 90)\n")
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test func aLineOverTheLimitIsSkippedAndReported() throws {
        let long = "add " + String(repeating: "1", count: 1 << 20) + "\n"
        let run = try host(counterArguments + ["--keep-going"], input: long + "add 4\n:state\n")
        #expect(run.status == 1)
        #expect(run.errors == "error: <stdin>:1: the line is longer than 1048576 bytes; it was skipped\n")
        #expect(run.output.hasSuffix(#"counter: {"count":4}"# + "\n"))
    }

    @Test func aScriptThatIsADirectoryIsAnError() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for command in [counterArguments, ["serve", "--plugins", directory]] {
            let run = try host(command + ["--script", directory], input: "")
            #expect(run.status == 1)
            #expect(run.errors.hasSuffix("error: \(directory): cannot read the script: it is a directory, not a file of input lines\n"))
        }
    }

    /// Kill -9 the host while a script runs; restart it on the same `--state`: every machine
    /// is back after exactly the acknowledged actions (plus, at most, the one whose commit
    /// the kill caught before it was printed).
    @Test func aKilledHostLosesNothingAcknowledged() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/state.sqlite"
        let counter = "\(pluginDirectory)/libCounterPlugin.so"
        var total: Int64 = 0
        var acknowledged: [Int64] = []
        // `ACTOMATON_KILL_ROUNDS=300 swift test --filter aKilledHost` for the long run.
        let rounds = ProcessInfo.processInfo.environment["ACTOMATON_KILL_ROUNDS"].flatMap(Int.init) ?? 3
        for round in 0..<rounds {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "\(pluginDirectory)/actomaton-host")
            process.arguments = ["run", counter, "--state", state, "--sync", "always", "--print", "summary", "--journal-snapshot-every", "7"]
            let stdin = Pipe(), stdout = Pipe()
            process.standardInput = stdin
            process.standardOutput = stdout
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Distinct amounts: every prefix has its own sum.
            let amounts = (1...400).map { Int64(round * 1000 + $0) }
            stdin.fileHandleForWriting.write(Data(amounts.map { "add \($0)\n" }.joined().utf8))
            let stopAfter = [5, 37, 120][round % 3] + (round * 7919) % 97
            var seen = 0
            var buffer = ""
            while seen < stopAfter {
                let data = stdout.fileHandleForReading.availableData
                if data.isEmpty { break }
                buffer += String(decoding: data, as: UTF8.self)
                let lines = buffer.split(separator: "\n", omittingEmptySubsequences: false)
                buffer = String(lines.last!)
                for line in lines.dropLast() where line.hasPrefix("counter: add ") {
                    acknowledged.append(Int64(line.dropFirst("counter: add ".count))!)
                    seen += 1
                }
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            // Lines printed before the kill but not read yet are acknowledged too.
            let rest = String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            for line in (buffer + rest).split(separator: "\n") where line.hasPrefix("counter: add ") {
                acknowledged.append(Int64(line.dropFirst("counter: add ".count))!)
            }
            total = acknowledged.reduce(0, +)
            let after = try host(["run", counter, "--state", state, "--print", "none"], input: ":state\n")
            #expect(after.status == 0, "\(after.errors)")
            let restored = Int64(after.output.split(separator: "\n").last!.dropFirst(#"counter: {"count":"#.count).dropLast())!
            let next = amounts.first { !acknowledged.contains($0) } ?? 0
            #expect(restored == total || restored == total + next, "round \(round): restored \(restored), acknowledged \(total)")
            // Whatever the journal had, the next round starts from it.
            if restored != total {
                acknowledged.append(next)
                total = restored
            }
        }
    }

    @Test func journalCommandShowsWhatTheHostRemembers() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/state.sqlite"
        let run = try host(["run", "\(pluginDirectory)/libCounterPlugin.so", "--state", state, "--print", "none"],
                           input: "add 2\nadd_later 5 0.01\nincrement\n")
        #expect(run.status == 0)
        let summary = try host(["journal", state], input: "")
        #expect(summary.output == "counter: 4 journaled actions, no snapshot, 0 pending timers\n", "\(summary.output)\(summary.errors)")
        let actions = try host(["journal", state, "--plugin", "counter"], input: "")
        #expect(actions.output == "#1 add 2  (version 1.0.0)\n#2 add_later 5 0.01  (version 1.0.0)\n#3 increment  (version 1.0.0)\n#4 add 5  (version 1.0.0)\n")
        let missing = try host(["journal", directory + "/none.sqlite"], input: "")
        #expect(missing.status == 1 && missing.errors == "error: \(directory)/none.sqlite: cannot open the state database: no such file\n")
    }
}
