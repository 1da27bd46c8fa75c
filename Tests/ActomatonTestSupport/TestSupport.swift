import Foundation
import Synchronization
import TestProcessSignals

// What the host's and the service's test targets share: one copy, and one set of slots for
// blocking work across both (the two targets run in one test process).

/// The directory of the built plugins: the test binary's own (`swift build` puts the `.so`
/// products beside it), or `ACTOMATON_PLUGIN_DIR`.
package let pluginDirectory: String = {
    if let directory = ProcessInfo.processInfo.environment["ACTOMATON_PLUGIN_DIR"] { return directory }
    return URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
}()

/// Whether the test process ignores SIGPIPE (from its start: `TestProcessSignals`).
package var brokenPipesAreIgnored: Bool { actomaton_test_sigpipe_ignored() != 0 }

/// The path of a built plugin product, e.g. `plugin("CounterPlugin")`.
package func plugin(_ product: String) -> String {
    let path = "\(pluginDirectory)/lib\(product).so"
    precondition(FileManager.default.fileExists(atPath: path), "\(path) is missing: run `swift build` (or `make plugins`) first")
    return path
}

/// Runs `body`, which blocks (a child process, its pipes), on a thread of its own, and waits for
/// it without holding a thread of the concurrency pool. The pool has one thread per core, and
/// tests run in parallel on it: a test blocking a pool thread (a `.wasm` build took minutes on
/// a loaded machine) stalled every other test's tasks, and tests with a real-time deadline
/// failed. At most one body per core runs at a time (``blockingWorkSlots``), as when they held
/// pool threads: dozens of child processes at once made each one too slow.
///
/// - Parameter takingASlot: `false` for a body that only waits on sockets to a server of this
///   process (``blockingWorkSlots`` are for work that computes): behind a build's slot such a
///   body waited minutes while the server's own clocks ran — its idle timeout cut a test
///   client's connection, its pings went unanswered and cut the test's watchers.
package func offThePool<Value: Sendable>(takingASlot: Bool = true, _ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            if takingASlot { blockingWorkSlots.wait() }
            defer { if takingASlot { blockingWorkSlots.signal() } }
            continuation.resume(with: Result(catching: body))
        }.start()
    }
}

/// Writes `input` to a child's standard input (and closes it) and reads its standard output
/// and standard error to their ends, all at once: a child that fills one pipe while the test
/// reads another, or writes `input`, would wait for ever (a run that logged 80 KB hung).
package func exchange(input: Data? = nil, with stdin: Pipe? = nil, output: Pipe, errors: Pipe) -> (output: Data, errors: Data) {
    let done = DispatchGroup()
    let errorBytes = Mutex(Data())
    DispatchQueue.global().async(group: done) {
        let data = errors.fileHandleForReading.readDataToEndOfFile()
        errorBytes.withLock { $0 = data }
    }
    if let stdin {
        DispatchQueue.global().async(group: done) {
            // A child that ended without reading all of it (a refused command line) leaves EPIPE
            // (SIGPIPE is ignored): its status and output say what happened. `write(_:)` traps on it.
            if let input { try? stdin.fileHandleForWriting.write(contentsOf: input) }
            try? stdin.fileHandleForWriting.close()
        }
    }
    let outputBytes = output.fileHandleForReading.readDataToEndOfFile()
    done.wait()
    return (outputBytes, errorBytes.withLock { $0 })
}

/// The slots of ``offThePool(_:)``: one per core, for every test target of the process.
package let blockingWorkSlots = DispatchSemaphore(value: ProcessInfo.processInfo.activeProcessorCount)

/// Waits, by yielding (never sleeping), until `condition` holds; `false` if it does not within
/// 20,000 yields and `seconds` of wall-clock time. The default is a safety net for a machine
/// loaded by other suites and builds: passing, no test waits that long.
package func eventually(within seconds: Int = 60, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    var checks = 0
    while checks < 20_000 || ContinuousClock.now < deadline {
        if await condition() { return true }
        await Task.yield()
        checks += 1
    }
    return await condition()
}
