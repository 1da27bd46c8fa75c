@testable import ActomatonHost
import CProcessControl
import Foundation
import Testing

/// What a plugin in a worker process can reach, and when its worker ends: only with the host
/// (never with the thread that started it), with its whole process group, without the host's
/// standard streams, with no thread able to gain privileges; and each way it ends is named.
@Suite("Worker sandbox: streams, process groups, privileges and lifetime", .timeLimit(.minutes(10)))
struct WorkerSandboxTests {
    /// Deadlines are a safety net for a loaded machine, not part of what is tested.
    private static func options(timeout: Duration = .seconds(20), mayStartProcesses: Bool = false, mayUseFiles: Bool = false,
                                mayUseNetwork: Bool = false) -> WorkerOptions {
        WorkerOptions(executable: "\(pluginDirectory)/actomaton-host",
                      limits: WorkerLimits(mayStartProcesses: mayStartProcesses, mayUseFiles: mayUseFiles, mayUseNetwork: mayUseNetwork),
                      actionTimeout: timeout, loadTimeout: .seconds(20))
    }

    private static func sandbox(_ options: WorkerOptions = options()) throws -> PluginMachine {
        try PluginMachine(isolatedPluginAt: plugin("ActomatonHostTestFixtures"), loadOptions: .init(entrySymbol: "fixture_sandbox_entry"),
                          workerOptions: options, log: { _ in })
    }

    /// The fixture's `{"value":N}`.
    private static func value(_ machine: PluginMachine) async throws -> Int32 {
        let text = try await machine.describe()
        return try #require(Int32(text.dropFirst(#"{"value":"#.count).dropLast()), "\(text)")
    }

    // MARK: Lifetime

    /// Workers used to get `PR_SET_PDEATHSIG`, which fires when the *thread* that started them
    /// ends: every worker started from a thread that then ended was killed.
    @Test func workersOutliveTheThreadsThatStartedThem() async throws {
        var machines: [PluginMachine] = []
        var threads: [String] = []
        for _ in 0..<6 {
            let (thread, machine) = try await onShortLivedThread { try Self.sandbox() }
            threads.append(thread)
            machines.append(machine)
        }
        for _ in 0..<4 { machines.append(try await Task.detached { try Self.sandbox() }.value) }
        let started = threads
        let ended = await eventually(within: 30) { started.allSatisfy { !FileManager.default.fileExists(atPath: "/proc/self/task/\($0)") } }
        #expect(ended, "the starting threads ended")
        var workers: [Int32?] = []
        for machine in machines { workers.append(await machine.workerProcessID) }
        for round in 1...40 {
            for (index, machine) in machines.enumerated() { try await machine.send("set", [.int(Int64(round * 100 + index))]) }
        }
        for (index, machine) in machines.enumerated() {
            #expect(try await Self.value(machine) == Int32(4000 + index))
            #expect(await machine.workerProcessID == workers[index], "worker \(index) was never restarted")
        }
    }

    /// A worker that closes its socket and lives on is not reported as killed by a signal.
    @Test func aClosedConnectionIsNamedAsOne() async throws {
        let machine = try Self.sandbox()
        try await machine.send("set", [.int(4)])
        let error = await #expect(throws: PluginCallError.self) { try await machine.send("close_channel") }
        #expect(error?.description == "plugin sandbox: 'close_channel' failed: the plugin closed its connection and was killed; restarted from its last state")
        #expect(try await Self.value(machine) == 4)
    }

    /// The signal that ended a worker is the one read from its status, not the host's own kill.
    @Test func aSignalFromOutsideIsNamed() async throws {
        let machine = try Self.sandbox()
        try await machine.send("set", [.int(5)])
        let pid = try #require(await machine.workerProcessID)
        #expect(kill(pid, SIGTERM) == 0)
        #expect(actomaton_wait_for_exit(pid, 30_000) == 1, "the worker ended")
        let error = await #expect(throws: PluginCallError.self) { try await machine.send("set", [.int(6)]) }
        #expect(error?.description == "plugin sandbox: 'set 6' failed: the plugin was killed (SIGTERM); restarted from its last state")
        #expect(try await Self.value(machine) == 5)
    }

    /// A worker that ends before it says hello is reported with its status.
    @Test func aWorkerThatEndsAtOnceIsNamed() async throws {
        var options = Self.options()
        options.executable = "/bin/false"
        let error = #expect(throws: PluginLoadError.self) { try Self.sandbox(options) }
        #expect(error?.description == "\(plugin("ActomatonHostTestFixtures")): the plugin's worker process exited with status 1 while loading it")
    }

    // MARK: Standard streams

    @Test func aWorkersStandardStreamsAreDevNull() async throws {
        let machine = try Self.sandbox()
        let pid = try #require(await machine.workerProcessID)
        for descriptor in 0...2 {
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)") == "/dev/null",
                    "descriptor \(descriptor)")
        }
        try await machine.send("stdio")
        #expect(try await Self.value(machine) == 0, "standard input is empty")
    }

    /// `actomaton-host run` with its input, output and error on pipes: the plugin reads none of
    /// the host's input and nothing it writes reaches the host's output or error.
    @Test func aPluginNeitherReadsTheHostsInputNorWritesItsOutput() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = directory + "/script.txt"
        try "stdio\n:state\n".write(toFile: script, atomically: true, encoding: .utf8)
        let run = try await host(["run", plugin("ActomatonHostTestFixtures"), "--entry-symbol", "fixture_sandbox_entry",
                            "--isolation", "process", "--script", script], input: "secret input for someone else\n")
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.hasSuffix("sandbox: {\"value\":0}\n"), "the plugin read nothing: \(run.output)")
        #expect(!(run.output + run.errors).contains("FORGED"))
        #expect(!(run.output + run.errors).contains("\u{1B}"))
        #expect(run.errors.isEmpty, "\(run.errors)")
    }

    // MARK: Privileges

    @Test func everyThreadOfAWorkerHasNoNewPrivileges() async throws {
        let machine = try Self.sandbox()
        try await machine.send("start_threads")
        #expect(try await Self.value(machine) == 2)
        let pid = try #require(await machine.workerProcessID)
        let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        #expect(threads.count >= 4, "the main thread, the lifeline's, and the plugin's two")
        #expect(threads.contains("\(pid)"), "the main thread is listed")
        for thread in threads {
            let status = try String(contentsOfFile: "/proc/\(pid)/task/\(thread)/status", encoding: .utf8)
            #expect(status.contains("NoNewPrivs:\t1\n"), "thread \(thread) of worker \(pid)")
        }
    }

    // MARK: Processes

    /// Regression: a plugin in a worker could fork without limit (a fork bomb took the machine,
    /// whatever the worker's memory and CPU limits). By default, every way of starting a
    /// process fails with EPERM in a worker (clone3 with ENOSYS, so that the C library falls
    /// back to clone, which the filter can read); threads still start.
    /// `--worker-may-start-processes` lifts it.
    @Test func aPluginInAWorkerStartsNoProcessUnlessAllowed() async throws {
        #if arch(x86_64)
        let forkCall = EPERM
        #else
        let forkCall = ENOSYS // no fork system call on this processor
        #endif
        let ways: [(how: Int64, name: String, forbidden: Int32)] = [
            (0, "fork", EPERM), (1, "posix_spawn", EPERM), (2, "system", EPERM), (3, "the fork system call", forkCall),
            (4, "clone3", ENOSYS), (5, "clone", EPERM),
        ]
        let forbidden = try Self.sandbox()
        let allowed = try Self.sandbox(Self.options(mayStartProcesses: true))
        for way in ways {
            try await forbidden.send("start_process", [.int(way.how)])
            #expect(try await Self.value(forbidden) == way.forbidden, "\(way.name), forbidden")
            try await allowed.send("start_process", [.int(way.how)])
            #expect(try await Self.value(allowed) == (way.how == 3 && forkCall == ENOSYS ? ENOSYS : 0), "\(way.name), allowed")
        }
        // Threads start all the same, and the worker goes on.
        try await forbidden.send("start_threads")
        #expect(try await Self.value(forbidden) == 2)
        #expect(await forbidden.workerProcessID != nil)
    }

    /// Regression: the filter let a plugin in a worker run a program in its place (which
    /// outlived the host: the lifeline's watcher ended with the exec), trace the host and make
    /// it fork (ptrace), read its memory and environment (/proc, process_vm_readv), and signal
    /// it. A worker now has no capability and a host it cannot open; every one of these fails,
    /// and it still signals itself.
    @Test func aPluginInAWorkerReachesNothingOutsideIt() async throws {
        let ways: [(how: Int64, name: String, expected: Set<Int32>)] = [
            (0, "execve", [EPERM]), (1, "ptrace", [EPERM]), (2, "the host's memory", [EACCES, EPERM]),
            (3, "the host's environment", [EACCES, EPERM]), (4, "a signal to the host", [EPERM]), (5, "a signal to itself", [0]),
            (6, "process_vm_readv", [EPERM]),
        ]
        let machine = try Self.sandbox()
        for way in ways {
            try await machine.send("reach", [.int(way.how)])
            let value = try await Self.value(machine)
            #expect(way.expected.contains(value), "\(way.name): \(value)")
        }
        // With processes allowed, the rest still holds; only running a program is taken.
        let allowed = try Self.sandbox(Self.options(mayStartProcesses: true))
        for way in ways where way.how != 0 && way.how != 4 {
            try await allowed.send("reach", [.int(way.how)])
            let value = try await Self.value(allowed)
            #expect(way.expected.contains(value), "\(way.name), processes allowed: \(value)")
        }
    }

    /// Regression: a plugin in a worker could read and write every file the host's user can
    /// (the host's tokens and state among them) and connect anywhere. Now it opens no file but to
    /// read the system's libraries and programs and its own plugin (Landlock, on every thread:
    /// one it starts too), makes none, and makes no socket (seccomp). Each flag lifts one rule.
    ///
    /// Regression (audit): Landlock leaves a file's mode, owner, times and extended attributes
    /// open (a worker running as root made a program set-user-ID root), a datagram socket pair
    /// reached local services, and `prlimit64` set the host's CPU limit to 0, which killed it.
    @Test func aPluginInAWorkerUsesNoFileAndNoNetworkUnlessAllowed() async throws {
        let probe = "/tmp/actomaton-sandbox-probe-\(getpid())"
        #expect(FileManager.default.createFile(atPath: probe, contents: Data(), attributes: [.posixPermissions: 0o600]))
        defer { try? FileManager.default.removeItem(atPath: probe) }
        let files: [(how: Int64, name: String, confined: Int32)] = [
            (7, "reading /etc/passwd", EACCES), (8, "making a file in /tmp", EACCES), (9, "reading /etc/passwd from its own thread", EACCES),
            (13, "chmod", EPERM), (14, "setting an extended attribute", EPERM), (18, "inotify", EPERM),
        ]
        let network: [(how: Int64, name: String, confined: Int32)] = [
            (10, "a TCP socket", EPERM), (11, "a Unix socket", EPERM), (12, "io_uring", EPERM), (16, "a datagram socket pair", EPERM),
        ]
        let always: [(how: Int64, name: String, confined: Int32)] = [(15, "the host's resource limits", EPERM), (17, "the session keyring", EPERM)]
        let ways = files + network + always
        let machine = try Self.sandbox()
        for way in ways {
            try await machine.send("reach", [.int(way.how)])
            #expect(try await Self.value(machine) == way.confined, "\(way.name)")
        }
        let mode = try FileManager.default.attributesOfItem(atPath: probe)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // Its libraries and programs are still there: a plugin with processes allowed runs one.
        let programs = try Self.sandbox(Self.options(mayStartProcesses: true))
        try await programs.send("start_process", [.int(1)])
        #expect(try await Self.value(programs) == 0, "posix_spawn of /bin/true")
        let filesAllowed = try Self.sandbox(Self.options(mayUseFiles: true))
        let networkAllowed = try Self.sandbox(Self.options(mayUseNetwork: true))
        for way in ways {
            let isFiles = files.contains { $0.how == way.how }
            let isNetwork = network.contains { $0.how == way.how }
            // An extended attribute needs a file system that keeps them.
            let allowedValues: Set<Int32> = way.how == 14 ? [0, EOPNOTSUPP] : [0]
            try await filesAllowed.send("reach", [.int(way.how)])
            let withFiles = try await Self.value(filesAllowed)
            #expect(isFiles ? allowedValues.contains(withFiles) : withFiles == way.confined, "\(way.name), files allowed: \(withFiles)")
            try await networkAllowed.send("reach", [.int(way.how)])
            let withNetwork = try await Self.value(networkAllowed)
            #expect(isNetwork ? withNetwork == 0 : withNetwork == way.confined, "\(way.name), the network allowed: \(withNetwork)")
        }
    }

    /// A plugin in a worker still loads from a directory no worker may read, and its private
    /// copy is a memory file: nothing is left in `TMPDIR`.
    @Test func aConfinedWorkerLoadsItsPluginFromAnywhere() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confined-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let copy = "\(directory)/sandbox.so"
        try FileManager.default.copyItem(atPath: plugin("ActomatonHostTestFixtures"), toPath: copy)
        let machine = try PluginMachine(isolatedPluginAt: copy, loadOptions: .init(entrySymbol: "fixture_sandbox_entry"),
                                        workerOptions: Self.options(), log: { _ in })
        try await machine.send("set", [.int(9)])
        #expect(try await Self.value(machine) == 9)
    }

    // MARK: Process groups

    /// A worker that is stopped takes what it forked with it.
    @Test func aForkedChildEndsWhenItsWorkerIsStopped() async throws {
        let (path, loadOptions) = fixture("fixture_sandbox_entry")
        var instance: IsolatedInstance? = try IsolatedInstance.start(path: path, loadOptions: loadOptions,
                                                                     options: Self.options(mayStartProcesses: true), log: { _ in })
        let child = try forkChild(in: try #require(instance))
        defer { kill(child, SIGKILL) }
        instance = nil
        #expect(ended(child), "child \(child) ended with its worker")
    }

    /// A worker that is replaced (here, after it was killed from outside) takes what it forked
    /// with it.
    @Test func aForkedChildEndsWhenItsWorkerIsReplaced() async throws {
        let machine = try Self.sandbox(Self.options(mayStartProcesses: true))
        try await machine.send("fork_child")
        let child = try await Self.value(machine)
        defer { kill(child, SIGKILL) }
        let pid = try #require(await machine.workerProcessID)
        #expect(kill(pid, SIGKILL) == 0)
        // The fork still holds the worker's socket open: the host sees the worker end all the same.
        let error = await #expect(throws: PluginCallError.self) { try await machine.send("set", [.int(1)]) }
        #expect(error?.description == "plugin sandbox: 'set 1' failed: the plugin was killed (SIGKILL); restarted from its last state")
        #expect(ended(child), "child \(child) ended with its worker")
        try await machine.send("set", [.int(2)])
        #expect(try await Self.value(machine) == 2)
    }

    /// A host that exits takes its workers' forks with it; nothing holds its output open.
    @Test func aForkedChildEndsWithTheHost() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = directory + "/script.txt"
        try "fork_child\n:state\n".write(toFile: script, atomically: true, encoding: .utf8)
        let run = try await host(["run", plugin("ActomatonHostTestFixtures"), "--entry-symbol", "fixture_sandbox_entry",
                            "--isolation", "process", "--worker-may-start-processes", "--script", script], input: "")
        #expect(run.status == 0, "\(run.errors)")
        let line = try #require(run.output.split(separator: "\n").last)
        let child = try #require(Int32(line.dropFirst("sandbox: {\"value\":".count).dropLast()), "\(run.output)")
        defer { kill(child, SIGKILL) }
        #expect(ended(child), "child \(child) ended with the host")
    }

    // MARK: Helpers

    private func forkChild(in instance: IsolatedInstance) throws -> Int32 {
        let outcome = instance.perform(try instance.plugin.checkedAction("fork_child", []))
        guard case .success = outcome else { throw Failure("fork_child failed: \(outcome)") }
        let text = try instance.describe()
        return try #require(Int32(text.dropFirst(#"{"value":"#.count).dropLast()), "\(text)")
    }

    private struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Whether `pid` ends (or is gone already) within a safety-net deadline; waits on a pidfd.
    private func ended(_ pid: Int32) -> Bool {
        let result = actomaton_wait_for_exit(pid, 30_000)
        return result == 1 || result == -ESRCH
    }

    /// Runs `body` on a thread of its own that ends right after; returns that thread's ID.
    private func onShortLivedThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> (thread: String, value: T) {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                // "PID/task/TID"
                let thread = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"))?
                    .split(separator: "/").last.map(String.init) ?? ""
                do { continuation.resume(returning: (thread, try body())) } catch { continuation.resume(throwing: error) }
            }
            thread.start()
        }
    }

    private struct Outcome: Sendable {
        var status: Int32
        var output: String
        var errors: String
    }

    /// Runs `actomaton-host arguments` with `input` on standard input, kept open until it exits.
    private func host(_ arguments: [String], input: String) async throws -> Outcome {
        try await offThePool { try Self.runHost(arguments, input: input) }
    }

    private static func runHost(_ arguments: [String], input: String) throws -> Outcome {
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
        let (output, errors) = exchange(input: Data(input.utf8), with: stdin, output: stdout, errors: stderr)
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: String(decoding: output, as: UTF8.self),
                       errors: String(decoding: errors, as: UTF8.self))
    }
}
