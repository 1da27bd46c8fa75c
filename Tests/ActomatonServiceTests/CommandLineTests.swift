import Foundation
import Synchronization
import Testing

/// `actomaton-host serve --listen`, run as a process.
@Suite struct ServeListenCommandLineTests {
    /// A directory, mode 0700, with the counter plugin in it.
    func pluginsDirectory() throws -> String {
        let directory = try temporaryDirectory()
        try FileManager.default.copyItem(atPath: plugin("CounterPlugin"), toPath: directory + "/counter.so")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory + "/counter.so")
        return directory
    }

    func run(_ arguments: [String], limits: String? = nil) async throws -> (status: Int32, output: String, errors: String) {
        try await offThePool { try Self.runHost(arguments, limits: limits) }
    }

    /// Runs the host with `arguments`; with `limits` (`ulimit -n 300`), through a shell that
    /// sets them first.
    static func runHost(_ arguments: [String], limits: String? = nil) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        setHost(of: process, arguments, limits: limits)
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let (out, err) = exchange(output: output, errors: errors)
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    /// Starts `serve --listen` on a port the system picks; returns it with the port, once it listens.
    func startServe(_ directory: String, _ extra: [String] = [], limits: String? = nil,
                    errorPath: String? = nil) throws -> (process: Process, port: Int) {
        let process = Process()
        // In-process unless `extra` says otherwise: an option is given once.
        let isolation = extra.contains("--isolation") ? [] : ["--isolation", "none"]
        Self.setHost(of: process, ["serve", "--plugins", directory, "--listen", "127.0.0.1:0"] + isolation + extra, limits: limits)
        let output = Pipe()
        process.standardOutput = output
        // To a file, not a pipe nobody reads (it would fill, and hold the service): read only
        // when the service did not listen, to say why.
        let errorPath = try errorPath ?? temporaryDirectory() + "/serve-errors.txt"
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: errorPath)
        try process.run()
        var text = ""
        while true {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
            if let range = text.range(of: "listening on 127.0.0.1:"),
               let end = text[range.upperBound...].firstIndex(of: "\n"), let port = Int(text[range.upperBound..<end]) {
                return (process, port)
            }
        }
        process.terminate()
        process.waitUntilExit()
        let errors = String(decoding: FileManager.default.contents(atPath: errorPath) ?? Data(), as: UTF8.self).suffix(2048)
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the service did not listen (status \(process.terminationStatus), "
                                                      + "reason \(process.terminationReason == .exit ? "exit" : "signal")): \(text); standard error: \(errors)"])
    }

    /// Starts `serve --listen` with `extra` (and `limits`), sends `request` on one connection,
    /// then stops the service with SIGTERM: the answer (`nil` when none came within `Duration.answerDeadline`) and
    /// the service's exit status.
    func answer(ofServe directory: String, _ extra: [String], limits: String? = nil,
                to request: String) async throws -> (answer: String?, status: Int32) {
        try await offThePool { () throws -> (answer: String?, status: Int32) in
            let (process, port) = try self.startServe(directory, extra, limits: limits)
            let answer = Result { () throws -> String? in
                let connection = try LoopbackConnection(port: port)
                try connection.send(request)
                return try connection.response(within: .answerDeadline)
            }
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
            return (try answer.get(), process.terminationStatus)
        }
    }

    /// Makes `process` the host with `arguments`; with `limits`, a shell that sets them, then
    /// becomes the host (the same process).
    static func setHost(of process: Process, _ arguments: [String], limits: String?) {
        let host = "\(pluginDirectory)/actomaton-host"
        if let limits {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "\(limits) && exec \"$0\" \"$@\"", host] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: host)
            process.arguments = arguments
        }
    }

    /// `curl` sending `count` POSTs of `body` to `url` on one connection, printing each status.
    func curl(_ url: String, _ body: String, count: Int) throws -> (process: Process, output: FileHandle) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        var arguments: [String] = []
        for index in 0..<count {
            if index > 0 { arguments.append("--next") }
            arguments += ["-s", "-o", "/dev/null", "-w", "%{http_code}\n", "-X", "POST", "-H", "Content-Type: application/json", "-d", body, url]
        }
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, output.fileHandleForReading)
    }

    /// SIGTERM while 8 clients send: each request is answered (and applied) or never applied.
    /// The restarted service's count is exactly the number of 200 answers.
    @Test func sigtermWithRequestsInFlightAnswersOrNeverApplies() async throws {
        let directory = try pluginsDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/state.sqlite"
        // The processes are read and waited for off the concurrency pool.
        let (serverStatus, statuses) = try await offThePool {
            let (server, port) = try startServe(directory, ["--state", state])
            let url = "http://127.0.0.1:\(port)/v1/machines/counter/total"
            let clients = try (0..<8).map { _ in try curl(url, #"{"action": "add", "args": [1]}"#, count: 400) }
            // Once the first client has 50 answers, the service is told to stop.
            var first = ""
            while first.count(where: { $0 == "\n" }) < 50 {
                let chunk = clients[0].output.availableData
                if chunk.isEmpty { break }
                first += String(decoding: chunk, as: UTF8.self)
            }
            server.terminate()
            var statuses: [String: Int] = [:]
            for (index, client) in clients.enumerated() {
                let rest = String(decoding: client.output.readDataToEndOfFile(), as: UTF8.self)
                client.process.waitUntilExit()
                for status in ((index == 0 ? first : "") + rest).split(separator: "\n") { statuses[String(status), default: 0] += 1 }
            }
            server.waitUntilExit()
            return (server.terminationStatus, statuses)
        }
        #expect(serverStatus == 0)
        #expect(statuses.values.reduce(0, +) == 8 * 400)
        #expect(Set(statuses.keys).isSubset(of: ["200", "503", "000"]), "\(statuses)")
        let answered = statuses["200", default: 0]
        #expect(answered >= 50, "\(statuses)")

        let status = try await offThePool {
            let (restarted, newPort) = try startServe(directory, ["--state", state])
            defer { restarted.terminate(); restarted.waitUntilExit() }
            let get = Process()
            get.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            get.arguments = ["-s", "http://127.0.0.1:\(newPort)/v1/machines/counter/total"]
            let output = Pipe()
            get.standardOutput = output
            try get.run()
            let status = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            get.waitUntilExit()
            return status
        }
        #expect(status.contains(#""seq":\#(answered),"state":{"count":\#(answered)}"#), "answered \(answered): \(status)")
    }

    @Test func anAddressOthersCanReachNeedsTokens() async throws {
        let directory = try pluginsDirectory()
        // A bad command line (exit 64), before anything runs (regression, audit: it was exit 1).
        let result = try await run(["serve", "--plugins", directory, "--listen", "0.0.0.0:0"])
        #expect(result.status == 64)
        #expect(result.errors.hasPrefix("Error: refusing to listen on 0.0.0.0:0 without --tokens: anyone who can reach it could send actions to "
            + "every instance; pass --tokens FILE, or listen on a loopback address such as 127.0.0.1\n"), "\(result.errors)")
        for (listen, line) in [("127.0.0.1:99999", "Error: "), ("localhost", "Error: ")] {
            let bad = try await run(["serve", "--plugins", directory, "--listen", listen])
            #expect(bad.status == 64 && bad.errors.hasPrefix(line), "\(listen): \(bad.errors)")
        }
        let halfTLS = try await run(["serve", "--plugins", directory, "--listen", "127.0.0.1:0", "--tls-key", "/nonexistent"])
        #expect(halfTLS.status == 64 && halfTLS.errors.hasPrefix("Error: --tls-certificate and --tls-key go together\n"), "\(halfTLS.errors)")
        let tokens = directory + "/tokens"
        try "token-0123456789abcdef send:counter\n".write(toFile: tokens, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: tokens)
        let readable = try await run(["serve", "--plugins", directory, "--listen", "0.0.0.0:0", "--tokens", tokens])
        #expect(readable.status == 1)
        #expect(readable.errors == "error: \(tokens): group or other users can read or write the tokens file (mode 640); run `chmod 600` on it\n")
    }

    /// Regression: a directory with no plugin to serve — none in it, or every file refused — was
    /// served all the same, and `serve --listen` reads it only at start: every request was 404
    /// for as long as the service ran. It is refused, with a line that says why.
    @Test func aDirectoryWithNoPluginToServeIsRefused() async throws {
        let empty = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let none = try await run(["serve", "--plugins", empty, "--listen", "127.0.0.1:0"])
        #expect(none.status == 1)
        #expect(none.errors == "error: no plugin to serve in \(empty): it has no plugin file (.so or .wasm); serve --listen reads its plugins "
            + "once, at start\n", "\(none.errors)")
        try Data("not a shared library".utf8).write(to: URL(fileURLWithPath: empty + "/junk.so"))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: empty + "/junk.so")
        let refused = try await run(["serve", "--plugins", empty, "--listen", "127.0.0.1:0"])
        #expect(refused.status == 1)
        let lines = refused.errors.split(separator: "\n")
        #expect(lines.count == 2 && lines.first?.contains("junk.so") == true, "\(refused.errors)")
        #expect(lines.last.map(String.init) == "error: no plugin to serve in \(empty): every plugin file in it was refused; serve --listen reads its plugins "
            + "once, at start", "\(refused.errors)")
    }

    /// Regression (audit): a cluster's hosts forward requests to each other in plain HTTP; a host
    /// serving TLS was accepted, and every request forwarded to it failed (503, for ever).
    @Test func aClusterHostCannotServeTLS() async throws {
        let directory = try pluginsDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = try TLSTests().makeCertificate(in: directory)
        let result = try await run(["serve", "--plugins", directory, "--listen", "127.0.0.1:0", "--tls-certificate", files.certificate,
                                    "--tls-key", files.key, "--state", "postgres://actomaton@127.0.0.1:1/none", "--advertise", "http://127.0.0.1:1"])
        #expect(result.status == 64)
        #expect(result.errors.hasPrefix("Error: --tls-certificate cannot be used in a cluster (--state postgres://…): hosts forward requests to each "
            + "other in plain HTTP; put TLS in front of the hosts instead\n"), "\(result.errors)")
    }

    /// An address in use printed NIO's error through the argument parser
    /// (`Error: bind(descriptor:ptr:bytes:): Address already in use) (errno: 98)`), and left
    /// the journal open: now one line, status 1, and the state file closed and tidied (its
    /// write-ahead log gone).
    @Test func anAddressInUseIsOneLineAndTheJournalIsClosed() async throws {
        let directory = try pluginsDirectory()
        let occupied = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(occupied) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(occupied, $0, length) == 0 && listen(occupied, 1) == 0
                && getsockname(occupied, $0, &length) == 0 }
        }
        #expect(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let state = directory + "/state.sqlite"
        let result = try await run(["serve", "--plugins", directory, "--isolation", "none", "--state", state, "--listen", "127.0.0.1:\(port)"])
        #expect(result.status == 1)
        #expect(result.errors == "error: cannot listen on 127.0.0.1:\(port): Address already in use\n")
        #expect(FileManager.default.fileExists(atPath: state))
        #expect(!FileManager.default.fileExists(atPath: state + "-wal"), "the journal was closed cleanly")
    }

    /// Regression (audit): `serve` reading lines took `--tokens /nonexistent`, `--lease-ttl 0`
    /// or `--max-body-size 1M` and ignored them; `serve --listen` ignored `--script`. A flag
    /// of the other mode is refused with one line (exit 64), in either spelling.
    @Test func eachModeRefusesTheFlagsOfTheOther() async throws {
        let directory = try pluginsDirectory()
        for extra in [["--tokens", "/nonexistent"], ["--lease-ttl=0"], ["--max-body-size", "1M"], ["--advertise", "bogus"],
                      ["--max-watchers", "5"], ["--log-level", "debug"]] {
            let refused = try await run(["serve", "--plugins", directory] + extra)
            let name = extra[0].split(separator: "=")[0]
            #expect(refused.status == 64 && refused.errors.hasPrefix("Error: \(name) is for serve --listen only\n"), "\(extra): \(refused.errors)")
        }
        for extra in [["--script", "/dev/null"], ["--print=none"]] {
            let refused = try await run(["serve", "--plugins", directory, "--listen", "127.0.0.1:0"] + extra)
            let name = extra[0].split(separator: "=")[0]
            #expect(refused.status == 64 && refused.errors.hasPrefix("Error: \(name) is for serve reading lines, not for serve --listen\n"),
                    "\(extra): \(refused.errors)")
        }
    }

    /// Regression: a negative number after an option (`--idle-timeout -1`) was answered
    /// "Missing value for '--idle-timeout'", as if none were given; it now reaches the option's
    /// own check, which names the range, and `--name=-1` is answered the same.
    @Test func aNegativeNumberIsRefusedByItsOptionsCheck() async throws {
        let directory = try pluginsDirectory()
        let listening = ["serve", "--plugins", directory, "--listen", "127.0.0.1:0"]
        let cases: [([String], String)] = [
            (listening + ["--idle-timeout", "-1"], "--idle-timeout must be from 1 to 2592000 seconds"),
            (listening + ["--max-connections", "-1"], "--max-connections must be from 1 to 1000000"),
            (listening + ["--max-instances", "-.5"], "The value '-.5' is invalid for '--max-instances <count>'"),
            (["serve", "--plugins", directory, "--isolation", "process", "--action-timeout", "-5"],
             "--action-timeout must be from 0.001 to 3600 seconds"),
            (["serve", "--plugins", directory, "--isolation", "process", "--worker-open-files", "-3"],
             "The value '-3' is invalid for '--worker-open-files <count>'"),
            (["serve", "--plugins", directory, "--max-effects=-1"], "--max-effects must be from 1 to 1000000"),
        ]
        for (arguments, message) in cases {
            let refused = try await run(arguments)
            #expect(refused.status == 64 && refused.errors.contains(message) && !refused.errors.contains("Missing value"),
                    "\(arguments.suffix(2)): \(refused.errors)")
        }
        // What follows a `--` is not joined: a plugin path that looks like a number stays one.
        let terminated = try await run(["serve", "--plugins", directory, "--idle-timeout", "--", "-1"])
        #expect(terminated.status == 64 && terminated.errors.contains("Missing value for '--idle-timeout"), "\(terminated.errors)")
    }

    /// Regression (audit): the count flags had no upper bound: `--watcher-buffer
    /// 9223372036854775807` was taken, and the first watcher resuming with `?after=` crashed
    /// the service (its buffer and its backlog summed past `Int.max`). Each is refused one
    /// past either end of its range, with the range, and taken at both ends.
    @Test func countFlagsHaveARange() async throws {
        let directory = try pluginsDirectory()
        let listening = ["serve", "--plugins", directory, "--listen", "127.0.0.1:0"]
        let ranges: [(flag: String, range: ClosedRange<Int>)] = [
            ("--max-connections", 1...1_000_000), ("--max-instances", 1...100_000_000), ("--max-instances-per-plugin", 1...100_000_000),
            ("--max-watchers-per-instance", 1...1_000_000), ("--watcher-buffer", 1...1_000_000), ("--max-workers", 1...1_000_000),
            ("--max-idempotency-keys", 1...100_000_000), ("--max-idempotency-keys-per-token", 1...100_000_000),
            ("--max-requests-per-second", 0...1_000_000_000), ("--max-failed-authentications-per-minute", 0...1_000_000_000),
            ("--max-effects", 1...1_000_000), ("--max-effects-total", 1...100_000_000), ("--max-timer-actions-per-second", 0...1_000_000_000),
            ("--journal-snapshot-every", 1...1_000_000_000), ("--snapshot-every", 1...1_000_000),
        ]
        for (flag, range) in ranges {
            for value in [range.lowerBound - 1, range.upperBound + 1] {
                let refused = try await run(listening + ["\(flag)=\(value)"])
                #expect(refused.status == 64 && refused.errors.contains("\(flag) must be from \(range.lowerBound) to \(range.upperBound)"),
                        "\(flag)=\(value): \(refused.errors)")
            }
        }
        for (flag, value, message) in [("--worker-open-files", "1048577", "--worker-open-files must be from 16 to 1048576"),
                                       ("--worker-cpu-seconds", "315360001", "--worker-cpu-seconds must be from 1 to 315360000 (10 years)")] {
            let refused = try await run(listening + ["--isolation", "process", flag, value])
            #expect(refused.status == 64 && refused.errors.contains(message), "\(flag) \(value): \(refused.errors)")
        }
        // Every flag at either end at once, but --max-connections at its top: that needs a million
        // descriptors (the next test). The workers' flags need process isolation.
        for end in [\ClosedRange<Int>.lowerBound, \ClosedRange<Int>.upperBound] {
            let flags = ranges.filter { $0.flag != "--max-connections" }.flatMap { [$0.flag, String($0.range[keyPath: end])] }
                + ["--isolation", "process", "--worker-open-files", end == \ClosedRange<Int>.lowerBound ? "16" : "1048576",
                   "--worker-cpu-seconds", end == \ClosedRange<Int>.lowerBound ? "1" : "315360000"]
            let health = try await answer(ofServe: directory, flags, to: "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            #expect(health.answer?.hasPrefix("HTTP/1.1 200") == true && health.status == 0, "\(flags): \(health)")
        }
    }

    /// `--allow-host`, repeatable, at most 64 times; a name that is not a host, the flag with
    /// `--tokens` (which decide instead) or without `--listen`: a bad command line, one line.
    /// At the limit, the service starts and answers a request addressed to the last name.
    @Test func allowHostIsCheckedAndRepeatable() async throws {
        let directory = try pluginsDirectory()
        let listening = ["serve", "--plugins", directory, "--listen", "127.0.0.1:0"]
        let names = (1...65).map { "proxy-\($0).example" }
        let tooMany = try await run(listening + names.flatMap { ["--allow-host", $0] })
        #expect(tooMany.status == 64 && tooMany.errors.hasPrefix("Error: --allow-host is given 65 times; at most 64\n"), "\(tooMany.errors)")
        let port = try await run(listening + ["--allow-host", "proxy.example:8080"])
        #expect(port.status == 64 && port.errors.hasPrefix("Error: --allow-host 'proxy.example:8080' is not a host name or address"), "\(port.errors)")
        let tokens = directory + "/tokens"
        try "token-0123456789abcdef send:counter\n".write(toFile: tokens, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: tokens)
        let withTokens = try await run(listening + ["--tokens", tokens, "--allow-host", "proxy.example"])
        #expect(withTokens.status == 64 && withTokens.errors.hasPrefix("Error: --allow-host is for a service without --tokens"), "\(withTokens.errors)")
        let lines = try await run(["serve", "--plugins", directory, "--allow-host", "proxy.example"])
        #expect(lines.status == 64 && lines.errors.hasPrefix("Error: --allow-host is for serve --listen only\n"), "\(lines.errors)")
        let atTheLimit = try await answer(ofServe: directory, names.prefix(64).flatMap { ["--allow-host", $0] },
                                          to: "GET /v1/plugins HTTP/1.1\r\nHost: proxy-64.example\r\n\r\n")
        #expect(atTheLimit.answer?.hasPrefix("HTTP/1.1 200") == true, "\(atTheLimit.answer ?? "no answer")")
    }

    /// Regression (audit): an option given twice kept its last value without a word
    /// (`--listen A --listen B` listened on B); a query parameter given twice kept its first.
    @Test func anOptionOrAQueryParameterGivenTwiceIsRefused() async throws {
        let directory = try pluginsDirectory()
        for arguments in [["--listen", "127.0.0.1:0", "--listen=127.0.0.1:1"], ["--max-effects", "1", "--max-effects", "2"]] {
            let refused = try await run(["serve", "--plugins", directory] + arguments)
            let name = arguments[2].split(separator: "=")[0]
            #expect(refused.status == 64 && refused.errors.hasPrefix("Error: \(name) is given twice; give it once\n"), "\(arguments): \(refused.errors)")
        }
        // After `--`, a name is a value.
        let terminated = try await run(["serve", "--plugins", directory, "--idle-timeout", "--", "--idle-timeout"])
        #expect(!terminated.errors.contains("given twice"), "\(terminated.errors)")
        try await makeServer().makeApplication().test(.router) { client in
            for query in ["limit=1&limit=2", "after=a&after=b"] {
                let answer = try await client.get("/v1/machines/counter?\(query)")
                let name = query.prefix { $0 != "=" }
                #expect(answer.status == .badRequest && answer.text == #"{"error":"the query gives \#(name) 2 times; give it once"}"#, "\(answer.text)")
            }
        }
    }

    /// Regression (audit): the cluster's flags were taken and ignored without a cluster, a bad
    /// value (`--lease-ttl -5`) included.
    @Test func theClustersFlagsNeedACluster() async throws {
        let directory = try pluginsDirectory()
        let listening = ["serve", "--plugins", directory, "--listen", "127.0.0.1:0"]
        for (flags, message) in [(["--lease-ttl", "5"], "--lease-ttl is for a cluster of hosts"),
                                 (["--advertise=http://127.0.0.1:1"], "--advertise is for a cluster of hosts"),
                                 (["--lease-ttl", "-5"], "--lease-ttl is for a cluster of hosts")] {
            let refused = try await run(listening + flags)
            #expect(refused.status == 64 && refused.errors.contains(message), "\(flags): \(refused.errors)")
        }
    }

    /// Regression (audit): a bad command line exits 64, as documented; a cluster's option it
    /// cannot take (`--lease-ttl 0`, `--sync batch`, no `--advertise`), and `run` given a
    /// cluster's database, exited 1, as a failure to start does. No database is reached.
    @Test func aClustersBadOptionIsABadCommandLine() async throws {
        let directory = try pluginsDirectory()
        let database = "postgres://actomaton@127.0.0.1:1/actomaton"
        let serve = ["serve", "--plugins", directory, "--listen", "127.0.0.1:0", "--state", database]
        for (arguments, message) in [
            (serve + ["--advertise", "http://127.0.0.1:1", "--lease-ttl", "0"], "--lease-ttl must be from 1 to 3600 seconds"),
            (serve + ["--advertise", "http://127.0.0.1:1", "--sync", "batch"], "--sync batch acknowledges an action before its commit"),
            (serve, "needs --advertise URL"),
            (["run", plugin("CounterPlugin"), "--state", database], "--state postgres://… is for serve --listen"),
        ] {
            let refused = try await run(arguments)
            #expect(refused.status == 64 && refused.errors.contains(message), "\(arguments): \(refused.status) \(refused.errors)")
        }
    }

    /// Regression (audit): a service allowed fewer open files than `--max-connections` ran
    /// out of them under load, and spun at 70% of a core with nothing logged and `/healthz`
    /// unanswered (`ulimit -n 64` and the default 1,024). It raises its soft limit as far as the
    /// connections need, and refuses to start, with one line, when the hard limit is lower.
    @Test func theConnectionsMustFitTheOpenFilesLimit() async throws {
        let directory = try pluginsDirectory()
        let refused = try await run(["serve", "--plugins", directory, "--listen", "127.0.0.1:0", "--max-connections", "100"],
                                    limits: "ulimit -n 300")
        #expect(refused.status == 1 && refused.errors == "error: --max-connections 100 needs 356 open files (one per connection and 256 "
                + "for the rest), but this process may open at most 300 (ulimit -Hn): lower --max-connections, or raise the limit\n",
                "\(refused.errors)")
        // 44 connections need 300, under the hard limit: the soft limit is raised to it.
        let softLimit = try await offThePool { () throws -> String? in
            let (process, _) = try self.startServe(directory, ["--max-connections", "44"], limits: "ulimit -Sn 100 && ulimit -Hn 300")
            defer {
                kill(process.processIdentifier, SIGTERM)
                process.waitUntilExit()
            }
            let limits = try String(contentsOfFile: "/proc/\(process.processIdentifier)/limits", encoding: .utf8)
            return limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }
                .map { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).first.map(String.init) ?? "" }
        }
        #expect(softLimit == "300")
        // Without --max-connections, the default is lowered to fit the hard limit: the service starts.
        let defaultFits = try await answer(ofServe: directory, [], limits: "ulimit -n 300", to: "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(defaultFits.answer?.hasPrefix("HTTP/1.1 200") == true, "\(defaultFits.answer ?? "no answer")")
    }

    /// Regression (client review): a size of 0 (or less) was "not a size: write a number of
    /// bytes", though it was one; it says that a size is at least 1 byte.
    @Test func aSizeOfZeroSaysASizeIsAtLeastOneByte() async throws {
        let directory = try pluginsDirectory()
        for size in ["0", "0K", "-5"] {
            let refused = try await run(["serve", "--plugins", directory, "--listen", "127.0.0.1:0", "--max-body-size", size])
            #expect(refused.status == 64 && refused.errors.contains("'\(size)' is not a size: a size is at least 1 byte"), "\(refused.errors)")
        }
        let notANumber = try await run(["serve", "--plugins", directory, "--listen", "127.0.0.1:0", "--max-body-size", "lots"])
        #expect(notANumber.errors.contains("'lots' is not a size: write a number of bytes"), "\(notANumber.errors)")
    }

    /// Regression (audit): `--watch-history-bytes` said "1 KiB to 1 GiB" but refused `1G`; it
    /// takes the suffixes the other sizes take, up to the limit and not one past.
    @Test func theWatchHistorySizeTakesSuffixes() async throws {
        let directory = try pluginsDirectory()
        let past = try await run(["serve", "--plugins", directory, "--listen", "127.0.0.1:0", "--watch-history-bytes", "1048577K"])
        #expect(past.status == 64 && past.errors.contains("--watch-history-bytes must be from 1K to 1G"), "\(past.errors)")
        // The total of all instances' (`--watch-history-total-bytes`), one past either end.
        for flag in ["--max-effect-bytes-total", "--max-passivated-bytes", "--max-idempotency-bytes"] {
            for size in ["1048575", "1099511627777"] {
                let refused = try await run(["serve", "--plugins", directory, "--listen", "127.0.0.1:0", flag, size])
                #expect(refused.status == 64 && refused.errors.contains("\(flag) must be from 1M to 1T (1048576 to 1099511627776 bytes)"),
                        "\(flag) \(size): \(refused.errors)")
            }
        }
        for size in ["1023", "1099511627777"] {
            let refused = try await run(["serve", "--plugins", directory, "--listen", "127.0.0.1:0", "--watch-history-total-bytes", size])
            #expect(refused.status == 64 && refused.errors.contains("--watch-history-total-bytes must be from 1K to 1T (1024 to 1099511627776 bytes)"),
                    "\(size): \(refused.errors)")
        }
        for flags in [["--watch-history-bytes", "1G"], ["--watch-history-bytes", "1K"], ["--watch-history-total-bytes", "1T"],
                      ["--watch-history-total-bytes", "1K"], ["--max-effect-bytes-total", "1M"], ["--max-effect-bytes-total", "1T"],
                      ["--max-passivated-bytes", "1M"], ["--max-passivated-bytes", "1T"],
                      ["--max-idempotency-bytes", "1M"], ["--max-idempotency-bytes", "1T"]] {
            let status = try await offThePool { () throws -> Int32 in
                let (process, _) = try self.startServe(directory, flags)
                kill(process.processIdentifier, SIGTERM)
                process.waitUntilExit()
                return process.terminationStatus
            }
            #expect(status == 0, "\(flags)")
        }
    }

    /// Regression (client review): a `.wasm` action looping under `--fuel off` held a SIGTERM's
    /// shutdown for good (cancelling cannot end it), a second SIGTERM too: only `kill -9`
    /// ended the process. Regression too: the scrape of `/metrics` this test makes meanwhile
    /// waited for the looping machine (it asked each machine for its effects), for good. Past `--shutdown-timeout` and 5 s more, or at a second signal, the
    /// journal is closed and the process exits with status 1 and one line saying why.
    @Test(arguments: [false, true])
    func aShutdownACallHoldsEndsTheProcess(atASecondSignal: Bool) async throws {
        let directory = try pluginsDirectory()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        try FileManager.default.copyItem(atPath: "\(root)/.build/wasm/hostile/hostile.wasm", toPath: directory + "/hostile.wasm")
        let errorPath = directory + "/errors.txt"
        @Sendable func errors() -> String { String(decoding: FileManager.default.contents(atPath: errorPath) ?? Data(), as: UTF8.self) }
        let timeout = atASecondSignal ? "3600" : "1"
        // All of it on a thread of its own: the sockets and the child's pipe block.
        let (status, reason, inFlight) = try await offThePool { () throws -> (Int32, Process.TerminationReason, Bool) in
            let (process, port) = try self.startServe(directory, ["--fuel", "off", "--shutdown-timeout", timeout, "--state", directory + "/state.sqlite"],
                                                      errorPath: errorPath)
            // Safety net only: before the fix, nothing else ended it.
            let pid = process.processIdentifier
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: 300)
                kill(pid, SIGKILL)
            }
            let spin = try LoopbackConnection(port: port)
            let body = #"{"action": "spin"}"#
            try spin.send("POST /v1/machines/hostile/s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
            // In flight once its instance is made.
            var inFlight = false
            let deadline = ContinuousClock.now + .seconds(120)
            while !inFlight, ContinuousClock.now < deadline {
                let metrics = try LoopbackConnection(port: port)
                try metrics.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                let text = try metrics.response(within: .answerDeadline) ?? ""
                inFlight = text.split(separator: "\n").contains {
                    $0.hasPrefix("actomaton_instances_active ") && !$0.hasSuffix(" 0") && !$0.hasSuffix(" 0.0")
                }
            }
            kill(pid, SIGTERM)
            if atASecondSignal {
                while !errors().contains("shutting down: 1 requests in flight"), ContinuousClock.now < deadline {
                    Thread.sleep(forTimeInterval: 0.01)
                }
                kill(pid, SIGTERM)
            }
            process.waitUntilExit()
            return (process.terminationStatus, process.terminationReason, inFlight)
        }
        #expect(inFlight)
        #expect(status == 1 && reason == .exit, "\(status)")
        let why = atASecondSignal ? "stopping at once on a second SIGTERM during the shutdown"
            : "stopping at once: the shutdown did not end within --shutdown-timeout and 5 s more"
        #expect(errors().contains(why) && errors().contains("the journal is closed, with every action answered in it"), "\(errors().suffix(2000))")
    }

    /// Regression (audit): a seconds flag past about 292 years trapped the service — at start
    /// (`--connection-idle-timeout`), at a shutdown (`--shutdown-timeout`), or when it closed a
    /// watcher (`--watcher-close-timeout`). Each is at most 30 days; at it, the service starts,
    /// closes a watcher and shuts down.
    @Test func secondsFlagsAreAtMost30Days() async throws {
        let directory = try pluginsDirectory()
        let flags = ["--idempotency-window", "--shutdown-timeout", "--idle-timeout", "--watcher-close-timeout", "--connection-idle-timeout"]
        for flag in flags {
            let past = try await run(["serve", "--plugins", directory, "--listen", "127.0.0.1:0", flag, "2592001"])
            #expect(past.status == 64 && past.errors.contains("\(flag) must be from 1 to 2592000 seconds (30 days)"), "\(flag): \(past.errors)")
        }
        let (status, close) = try await offThePool { () throws -> (Int32, (code: Int, reason: String, framesBefore: Int)?) in
            let (process, port) = try self.startServe(directory, flags.flatMap { [$0, "2592000"] })
            // The connections closed before the SIGTERM: a watcher that never answers the close
            // would hold the shutdown for --watcher-close-timeout.
            let close = try { () throws -> (code: Int, reason: String, framesBefore: Int)? in
                let body = #"{"action": "increment"}"#
                let post = try LoopbackConnection(port: port)
                try post.send("POST /v1/machines/counter/w HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body)
                _ = try post.response(within: .answerDeadline)
                let watcher = try LoopbackConnection(port: port)
                _ = try watcher.webSocketHandshake("/v1/machines/counter/w/watch?after=1", within: .answerDeadline)
                // The watcher joined once it gets the next transition (from the history, if it
                // joins after it): a DELETE before would find it refused (4404, no instance),
                // not closed with its instance (1000).
                try post.send("POST /v1/machines/counter/w HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body)
                _ = try post.response(within: .answerDeadline)
                _ = try watcher.webSocketTextFrame(within: .answerDeadline)
                try post.send("DELETE /v1/machines/counter/w HTTP/1.1\r\nHost: localhost\r\n\r\n")
                _ = try post.response(within: .answerDeadline)
                return try watcher.webSocketClose(within: .answerDeadline)
            }()
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
            return (process.terminationStatus, close)
        }
        #expect(close?.code == 1000, "\(String(describing: close))")
        #expect(status == 0)
    }

    /// SIGTERM, SIGINT, and SIGHUP (regression, audit: it ended the service at once, with no
    /// drain and the journal's log left behind) stop the service gracefully, with status 0.
    @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
    func aSignalStopsTheServiceWithStatus0(signal: Int32) async throws {
        let directory = try pluginsDirectory()
        let (text, exited, status, rest) = try await offThePool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "\(pluginDirectory)/actomaton-host")
            process.arguments = ["serve", "--plugins", directory, "--listen", "127.0.0.1:0", "--isolation", "none"]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Reads lines until the service listens (the read blocks until the line comes).
            var text = ""
            let reader = output.fileHandleForReading
            while !text.contains("listening on 127.0.0.1:") {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            kill(process.processIdentifier, signal)
            let rest = reader.readDataToEndOfFile()
            process.waitUntilExit()
            return (text, process.terminationReason == .exit, process.terminationStatus, String(decoding: rest, as: UTF8.self))
        }
        #expect(text.contains("loaded plugin counter 1.0.0 from \(directory)/counter.so"))
        #expect(text.contains("listening on 127.0.0.1:"))
        #expect(exited)
        #expect(status == 0)
        #expect(rest.hasSuffix("stopped\n"))
    }
}
