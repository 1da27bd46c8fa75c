@testable import ActomatonHost
import HostCommandLine
import Clocks
import Synchronization
import Foundation
import Testing
@_exported import ActomatonTestSupport

/// The test fixtures library, with one of its fixture entry symbols.
func fixture(_ entry: String) -> (path: String, options: Plugin.LoadOptions) {
    (plugin("ActomatonHostTestFixtures"), Plugin.LoadOptions(entrySymbol: entry))
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
