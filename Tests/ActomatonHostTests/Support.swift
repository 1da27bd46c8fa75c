@testable import ActomatonHost
import HostCommandLine
import Clocks
import Synchronization
import Foundation
import Testing

/// The directory of the built plugins: the test binary's own (`swift build` puts the `.so`
/// products beside it), or `ACTOMATON_PLUGIN_DIR`.
let pluginDirectory: String = {
    if let directory = ProcessInfo.processInfo.environment["ACTOMATON_PLUGIN_DIR"] { return directory }
    return URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
}()

/// The path of a built plugin product, e.g. `plugin("CounterPlugin")`.
func plugin(_ product: String) -> String {
    let path = "\(pluginDirectory)/lib\(product).so"
    precondition(FileManager.default.fileExists(atPath: path), "\(path) is missing: run `swift build` (or `make plugins`) first")
    return path
}

/// The test fixtures library, with one of its fixture entry symbols.
func fixture(_ entry: String) -> (path: String, options: Plugin.LoadOptions) {
    (plugin("ActomatonHostTestFixtures"), Plugin.LoadOptions(entrySymbol: entry))
}

/// Runs `body`, which blocks (a child process, its pipes), on a thread of its own, and waits for
/// it without holding a thread of the concurrency pool. The pool has one thread per core, and
/// tests run in parallel on it: a test blocking a pool thread (a `.wasm` build took minutes on
/// a loaded machine) stalled every other test's tasks, and tests with a real-time deadline
/// failed. At most one body per core runs at a time (``blockingWorkSlots``), as when they held
/// pool threads: dozens of child processes at once made each one too slow.
func offThePool<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            blockingWorkSlots.wait()
            defer { blockingWorkSlots.signal() }
            continuation.resume(with: Result(catching: body))
        }.start()
    }
}

/// Runs `executable` with `arguments` (in `directory`, with `environment`, when given) off the
/// concurrency pool; returns its exit status and what it wrote to standard output and error.
func runChild(
    _ executable: String, _ arguments: [String], in directory: String? = nil, environment: [String: String]? = nil
) async throws -> (status: Int32, output: String) {
    try await offThePool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        if let environment { process.environment = environment }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}

/// The slots of ``offThePool(_:)``: one per core.
let blockingWorkSlots = DispatchSemaphore(value: ProcessInfo.processInfo.activeProcessorCount)

/// A fresh temporary directory.
func temporaryDirectory() throws -> String {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("actomaton-host-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url.path
}

/// Copies `source` to `destination` as a new file (a new inode), mode 0755.
func install(_ source: String, at destination: String) throws {
    let temporary = destination + ".tmp"
    try? FileManager.default.removeItem(atPath: temporary)
    try FileManager.default.copyItem(atPath: source, toPath: temporary)
    try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: temporary)
    _ = rename(temporary, destination)
}

/// Waits, by yielding (never sleeping), until `condition` holds; `false` if it does not within
/// 20,000 yields and `seconds` of wall-clock time (a count of yields alone ran out on a loaded
/// machine).
func eventually(within seconds: Int = 10, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    var checks = 0
    while checks < 20_000 || ContinuousClock.now < deadline {
        if await condition() { return true }
        await Task.yield()
        checks += 1
    }
    return await condition()
}

/// Collects transitions and log lines from machines, for assertions.
final class Recorder: Sendable {
    private let storage = Mutex<[String]>([])

    var lines: [String] { storage.withLock { $0 } }

    @Sendable func record(_ transition: PluginTransition) {
        storage.withLock { $0.append(HostSession.format(transition)) }
    }

    @Sendable func log(_ line: String) {
        storage.withLock { $0.append("log: \(line)") }
    }
}


extension TestClock<Duration> {
    /// Waits until an effect sleeps on the clock, then advances it: an effect's task may start
    /// a little after the action that asked for it, and a sleep that starts after the advance
    /// would wait for the next one.
    func advanceWhenSleeping(by duration: Duration) async {
        _ = await eventually(within: 0) {
            do {
                try await checkSuspension()
                return false
            } catch {
                return true
            }
        }
        await advance(by: duration)
    }
}

extension PluginMachine {
    /// The plugin's description of the state, or the error's text: for `#expect` and
    /// `eventually`, which take non-throwing expressions.
    func describedState() async -> String {
        do {
            return try describe()
        } catch {
            return "error: \(error)"
        }
    }
}
