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

    func run(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "\(pluginDirectory)/actomaton-host")
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    @Test func anAddressOthersCanReachNeedsTokens() throws {
        let directory = try pluginsDirectory()
        let result = try run(["serve", "--plugins", directory, "--listen", "0.0.0.0:0"])
        #expect(result.status == 1)
        #expect(result.errors == "error: refusing to listen on 0.0.0.0:0 without --tokens: anyone who can reach it could send actions to "
            + "every instance; pass --tokens FILE, or listen on a loopback address such as 127.0.0.1\n")
        let tokens = directory + "/tokens"
        try "token-0123456789abcdef send:counter\n".write(toFile: tokens, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: tokens)
        let readable = try run(["serve", "--plugins", directory, "--listen", "0.0.0.0:0", "--tokens", tokens])
        #expect(readable.status == 1)
        #expect(readable.errors == "error: \(tokens): group or other users can read or write the tokens file (mode 640); run `chmod 600` on it\n")
    }

    @Test func sigtermStopsTheServiceWithStatus0() throws {
        let directory = try pluginsDirectory()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "\(pluginDirectory)/actomaton-host")
        process.arguments = ["serve", "--plugins", directory, "--listen", "127.0.0.1:0", "--isolation", "none"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Reads lines until the service listens (a generous deadline only as a safety net: the
        // read blocks until the line comes).
        var text = ""
        let reader = output.fileHandleForReading
        while !text.contains("listening on 127.0.0.1:") {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        #expect(text.contains("loaded plugin counter from \(directory)/counter.so"))
        #expect(text.contains("listening on 127.0.0.1:"))
        process.terminate() // SIGTERM
        let rest = reader.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
        #expect(String(decoding: rest, as: UTF8.self).hasSuffix("stopped\n"))
    }
}
