@testable import ActomatonHost
import HostCommandLine
import Foundation
import Testing

/// Every kind of bad input gets an error that says what and where, and harms nothing: the host
/// keeps running and every other plugin keeps its state.
@Suite("Bad input: clear errors, nothing lost")
struct BadInputTests {
    /// A host already running a counter at 5, the plugin other tests must not harm.
    private func hostWithCounter() async throws -> (PluginHost, PluginMachine) {
        let host = PluginHost()
        let counter = try await host.load(path: plugin("CounterPlugin"))
        try await counter.send("add", [.int(5)])
        return (host, counter)
    }

    /// The counter still has its state, and still works.
    private func expectUnharmed(_ host: PluginHost, _ counter: PluginMachine) async throws {
        #expect(await host.names.contains("counter"))
        #expect(try await counter.describe() == #"{"count":5}"#)
        try await counter.send("increment")
        #expect(try await counter.describe() == #"{"count":6}"#)
    }

    private func expectLoadError(_ path: String, options: Plugin.LoadOptions = .init(), _ message: String) async throws {
        let (host, counter) = try await hostWithCounter()
        let error = #expect(throws: PluginLoadError.self) { try Plugin.load(path: path, options: options) }
        #expect(error?.description == "\(path): \(message)")
        // Through a running host too: refused, and nothing else changes.
        let hostError = await #expect(throws: PluginLoadError.self) {
            _ = try await PluginHost(loadOptions: options).load(path: path)
        }
        #expect(hostError == error)
        await #expect(throws: PluginLoadError.self) { try await host.load(path: path) }
        try await expectUnharmed(host, counter)
    }

    @Test func pathThatDoesNotExist() async throws {
        try await expectLoadError("/no/such/dir/plugin.so", "no such file")
    }

    @Test func directoryInsteadOfAFile() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await expectLoadError(directory, "not a regular file (it is a directory)")
        // Regression (audit): in a worker, whose sandbox opens no directory, it was "cannot
        // read the file: Permission denied".
        let isolated = PluginHost(log: { _ in }, isolation: .process(WorkerOptions(executable: "\(pluginDirectory)/actomaton-host")))
        let error = await #expect(throws: PluginLoadError.self) { _ = try await isolated.load(path: directory) }
        #expect(error?.description == "\(directory): not a regular file (it is a directory)")
    }

    @Test func fileThatIsNotASharedLibrary() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/notes.so"
        try "just some text\n".write(toFile: path, atomically: true, encoding: .utf8)
        try await expectLoadError(path, "not a shared library this host can load (it is not an ELF file)")
    }

    @Test func truncatedSharedLibrary() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/truncated.so"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: plugin("CounterPlugin"))).prefix(64)
        try bytes.write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: PluginLoadError.self) { try Plugin.load(path: path) }
        #expect(error?.description.hasPrefix("\(path): not a shared library this host can load (") == true)
        #expect(error?.description.contains("-truncated.so") == false, "the message names the user's file, not the private copy")
    }

    /// Regression: a library cut at a page boundary passed the header's checks, and mapping
    /// it faulted (SIGBUS) past its end, taking the host down. Cut anywhere, it loads (the part
    /// cut held nothing that is mapped) or is one error; the host goes on.
    @Test func aSharedLibraryCutAnywhereIsRefusedOrLoadsNeverCrashes() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let whole = try Data(contentsOf: URL(fileURLWithPath: plugin("CounterPlugin")))
        let (host, counter) = try await hostWithCounter()
        var cuts = Array(stride(from: 4096, to: whole.count, by: 4096)) + [65, 64 + 56, 1000, whole.count - 1]
        cuts += cuts.map { $0 - 1 }
        var refused = 0
        for cut in Set(cuts).sorted() {
            let path = directory + "/cut-\(cut).so"
            try whole.prefix(cut).write(to: URL(fileURLWithPath: path))
            do {
                _ = try Plugin.load(path: path)
            } catch {
                refused += 1
                #expect(error.description.hasPrefix("\(path): not a shared library this host can load ("), "\(error)")
                #expect(!error.description.contains("\n"))
            }
        }
        #expect(refused > 0)
        try await expectUnharmed(host, counter)
    }

    /// Regression: an error echoed the action whole — a megabyte of argument in one line.
    @Test func anErrorEchoesAtMostTheLimitOfTheAction() async throws {
        let (host, counter) = try await hostWithCounter()
        let limit = PluginLimits.maxEchoedActionBytes
        let long = String(repeating: "x", count: 1 << 20)
        let wrongType = await #expect(throws: PluginCallError.self) { try await counter.send("add", [.string(long)]) }
        let line = try #require(wrongType?.description)
        #expect(line.utf8.count < limit + 200, "\(line.utf8.count) bytes")
        #expect(line.hasPrefix(#"plugin counter: argument 1 (amount) of 'add' must be an int64, got the string "x"#), "\(line.prefix(120))")
        #expect(line.hasSuffix(" … (\((1 << 20) + 2 + 11 - limit) more bytes)"), "\(line.suffix(120))")
        // At the limit, the action is echoed whole.
        let name = String(repeating: "y", count: limit)
        let unknown = await #expect(throws: PluginCallError.self) { try await counter.send(name) }
        #expect(unknown?.description.contains("'\(name)' for plugin 'counter'") == true)
        let longer = await #expect(throws: PluginCallError.self) { try await counter.send(name + "y") }
        #expect(longer?.description.contains("'\(name) … (1 more bytes)' for plugin 'counter'") == true, "\(longer?.description.suffix(200) ?? "")")
        try await expectUnharmed(host, counter)
    }

    /// A segment that ends at the file's last byte is mapped; one a byte longer is refused.
    @Test func segmentsMustLieWithinTheFile() throws {
        func table(type: UInt32, offset: UInt64, fileLength: UInt64, memoryLength: UInt64) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 56)
            func put(_ value: UInt64, at position: Int, _ count: Int) {
                for index in 0..<count { bytes[position + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
            }
            put(UInt64(type), at: 0, 4)
            put(offset, at: 8, 8)
            put(fileLength, at: 32, 8)
            put(memoryLength, at: 40, 8)
            return bytes
        }
        try ELFHeader.checkSegments(table(type: 1, offset: 100, fileLength: 900, memoryLength: 900), tableOffset: 64, fileSize: 1000)
        #expect(throws: PluginLoadError.Reason.notASharedLibrary(
            "it is truncated: a segment of 901 bytes at offset 100 ends past the file's 1000 bytes")) {
            try ELFHeader.checkSegments(table(type: 1, offset: 100, fileLength: 901, memoryLength: 901), tableOffset: 64, fileSize: 1000)
        }
        #expect(throws: PluginLoadError.Reason.self, "the dynamic section too") {
            try ELFHeader.checkSegments(table(type: 2, offset: 999, fileLength: 2, memoryLength: 2), tableOffset: 64, fileSize: 1000)
        }
        #expect(throws: PluginLoadError.Reason.self, "an offset that wraps around") {
            try ELFHeader.checkSegments(table(type: 1, offset: .max, fileLength: 2, memoryLength: 2), tableOffset: 64, fileSize: 1000)
        }
        #expect(throws: PluginLoadError.Reason.self, "the table itself") {
            try ELFHeader.checkSegments(table(type: 6, offset: 0, fileLength: 0, memoryLength: 0), tableOffset: 945, fileSize: 1000)
        }
        // Other segment types (notes, the stack) are not mapped from the file.
        try ELFHeader.checkSegments(table(type: 4, offset: 5000, fileLength: 10, memoryLength: 10), tableOffset: 64, fileSize: 1000)
    }

    /// Regression: a `.wasm` file that was no module was "not a shared library", and a module
    /// of another binary version showed WasmKit's internals (`"Message(text: …)"`).
    @Test func aFileNamedWasmThatIsNotAModuleSaysSo() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cases: [(String, [UInt8], String)] = [
            ("empty.wasm", [], "not a WebAssembly module: it does not begin with the magic bytes \\0asm"),
            ("text.wasm", Array("(module)".utf8), "not a WebAssembly module: it does not begin with the magic bytes \\0asm"),
            ("version2.wasm", [0, 0x61, 0x73, 0x6D, 2, 0, 0, 0], "not a valid WebAssembly module: unknown binary version: [2, 0, 0, 0] at offset 0x8"),
        ]
        for (name, bytes, message) in cases {
            try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + name))
            try await expectLoadError(directory + "/" + name, message)
        }
        // A file is what its bytes say, whatever its name: a library named `.wasm` loads.
        try FileManager.default.copyItem(atPath: plugin("CounterPlugin"), toPath: directory + "/library.wasm")
        #expect(try Plugin.load(path: directory + "/library.wasm").manifest.name == "counter")
    }

    @Test func sharedLibraryWithoutTheEntrySymbol() async throws {
        try await expectLoadError(plugin("ActomatonHostTestFixtures"),
                                  "no entry symbol `actomaton_plugin_entry`: this shared library is not an Actomaton plugin")
    }

    @Test func wrongABIVersion() async throws {
        let (path, options) = fixture("fixture_wrong_abi_entry")
        try await expectLoadError(path, options: options, "plugin ABI version 3 is not supported (this host speaks versions 1 to 2)")
    }

    @Test func entryReturningNoManifest() async throws {
        let (path, options) = fixture("fixture_null_entry")
        try await expectLoadError(path, options: options, "the plugin's entry symbol returned no manifest")
    }

    @Test func manifestWithAnUnknownParameterType() async throws {
        let (path, options) = fixture("fixture_unknown_type_entry")
        try await expectLoadError(path, options: options,
            "invalid manifest: parameter 'speed' of action 'go' has unknown type 99 (known: 1 = bool, 2 = int8, 3 = int16, 4 = int32, 5 = int64, 6 = uint8, 7 = uint16, 8 = uint32, 9 = uint64, 10 = float, 11 = double, 12 = string)")
    }

    @Test func manifestWithADuplicateAction() async throws {
        let (path, options) = fixture("fixture_duplicate_action_entry")
        try await expectLoadError(path, options: options, "invalid manifest: action 'go' is declared twice")
    }

    @Test func manifestWithAnInvalidName() async throws {
        let (path, options) = fixture("fixture_bad_name_entry")
        try await expectLoadError(path, options: options,
            #"invalid manifest: the name of action 1 "go home" is not a valid name (letters, digits and _, not starting with a digit)"#)
    }

    @Test func manifestWithAMissingFunction() async throws {
        let (path, options) = fixture("fixture_missing_function_entry")
        try await expectLoadError(path, options: options, "invalid manifest: the function `restore` is missing")
    }

    @Test func pluginFileWritableByOtherUsers() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/counter.so"
        try install(plugin("CounterPlugin"), at: path)
        chmod(path, 0o757)
        try await expectLoadError(path,
            "refusing to load a plugin file that other users can write (mode 757); run `chmod go-w` on it, or pass --allow-writable to load it anyway")
        chmod(path, 0o775)
        #expect(throws: PluginLoadError.self) { try Plugin.load(path: path) }
        // Unless the user says otherwise.
        let loaded = try Plugin.load(path: path, options: .init(allowWritableByOthers: true))
        #expect(loaded.name == "counter")
    }

    @Test func secondPluginWithTheSameName() async throws {
        let (host, counter) = try await hostWithCounter()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let copy = directory + "/counter-copy.so"
        try install(plugin("CounterPlugin"), at: copy)
        let error = await #expect(throws: PluginLoadError.self) { try await host.load(path: copy) }
        #expect(error?.description == "\(copy): a plugin named 'counter' is already loaded from \(plugin("CounterPlugin"))")
        try await expectUnharmed(host, counter)
    }

    @Test func unknownAction() async throws {
        let (host, counter) = try await hostWithCounter()
        let error = await #expect(throws: PluginCallError.self) { try await counter.send("jump", [.int(1)]) }
        #expect(error?.description == "plugin counter: unknown action 'jump' for plugin 'counter' (its actions: increment, decrement, add, reset, add_later, start, stop)")
        try await expectUnharmed(host, counter)
    }

    @Test func wrongArgumentCount() async throws {
        let (host, counter) = try await hostWithCounter()
        let error = await #expect(throws: PluginCallError.self) { try await counter.send("add", [.int(1), .int(2)]) }
        #expect(error?.description == "plugin counter: 'add' takes 1 argument, got 2: add(amount: int64)")
        let none = await #expect(throws: PluginCallError.self) { try await counter.send("add_later", []) }
        #expect(none?.description == "plugin counter: 'add_later' takes 2 arguments, got 0: add_later(amount: int64, seconds: double)")
        try await expectUnharmed(host, counter)
    }

    @Test func wrongArgumentTypes() async throws {
        let (host, counter) = try await hostWithCounter()
        let error = await #expect(throws: PluginCallError.self) { try await counter.send("add", [.string("five")]) }
        #expect(error?.description == #"plugin counter: argument 1 (amount) of 'add' must be an int64, got the string "five""#)
        let float = await #expect(throws: PluginCallError.self) { try await counter.send("add", [.float(1.5)]) }
        #expect(float?.description == "plugin counter: argument 1 (amount) of 'add' must be an int64, got the number 1.5")
        let bool = await #expect(throws: PluginCallError.self) { try await counter.send("add_later", [.int(1), .bool(true)]) }
        #expect(bool?.description == "plugin counter: argument 2 (seconds) of 'add_later' must be a double, got the boolean true")
        try await expectUnharmed(host, counter)
    }

    /// Regression (audit): JSON has one kind of number, and some encoders write every number
    /// with a fraction: `1.0` and `1e2` were refused for an int64 parameter. An integral one is
    /// that integer, in its parameter's range; one with a fraction, or not finite, is refused.
    @Test func anIntegralNumberIsAnInteger() async throws {
        let (host, counter) = try await hostWithCounter()
        let before = try #require(Int(try await counter.describe().filter(\.isNumber)))
        try await counter.send("add", [.float(1.0)])
        try await counter.send("add", [.float(1e2)])
        try await counter.send("add", [.float(-0.0)])
        #expect(try await counter.describe() == #"{"count":\#(before + 101)}"#)
        // Past 2^53 a double may hold another integer than the one written: refused.
        try await counter.send("add", [.float(-9_007_199_254_740_992)])
        try await counter.send("add", [.float(9_007_199_254_740_992)])
        let past = await #expect(throws: PluginCallError.self) { try await counter.send("add", [.float(9_007_199_254_740_994)]) }
        #expect(past?.description.contains("must be an int64, got the number") == true, "\(past?.description ?? "")")
        let unsigned = await #expect(throws: PluginCallError.self) { try await counter.send("start", [.float(4_294_967_296)]) }
        #expect(unsigned?.description.hasSuffix("out of range for uint32 (0...4294967295)") == true, "\(unsigned?.description ?? "")")
        let pastInt64 = await #expect(throws: PluginCallError.self) { try await counter.send("add", [.float(1e19)]) }
        #expect(pastInt64?.description.hasSuffix("is 1e+19, out of range for int64 (-9223372036854775808...9223372036854775807)") == true,
                "\(pastInt64?.description ?? "")")
        for bad in [Double.infinity, .nan, 2.5, 1e17] {
            let refused = await #expect(throws: PluginCallError.self) { try await counter.send("add", [.float(bad)]) }
            #expect(refused?.description.contains("must be an int64, got the number") == true, "\(bad): \(refused?.description ?? "")")
        }
        #expect(await host.names.contains("counter"))
    }

    @Test func integerOutOfRange() async throws {
        let (host, counter) = try await hostWithCounter()
        let negative = await #expect(throws: PluginCallError.self) { try await counter.send("start", [.int(-1)]) }
        #expect(negative?.description == "plugin counter: argument 1 (interval_ms) of 'start' is -1, out of range for uint32 (0...4294967295)")
        let large = await #expect(throws: PluginCallError.self) { try await counter.send("start", [.int(1 << 40)]) }
        #expect(large?.description == "plugin counter: argument 1 (interval_ms) of 'start' is 1099511627776, out of range for uint32 (0...4294967295)")
        let huge = await #expect(throws: PluginCallError.self) { try await counter.send("add", [.uint(UInt64(Int64.max) + 1)]) }
        #expect(huge?.description == "plugin counter: argument 1 (amount) of 'add' is 9223372036854775808, out of range for int64 (-9223372036854775808...9223372036854775807)")
        try await expectUnharmed(host, counter)
    }

    @Test func pluginReportsAnErrorFromATransition() async throws {
        let (host, counter) = try await hostWithCounter()
        let before = try await counter.snapshot()
        let error = await #expect(throws: PluginCallError.self) { try await counter.send("add", [.int(.max)]) }
        #expect(error?.description == "plugin counter: 'add 9223372036854775807' failed: adding that amount would overflow the counter")
        #expect(try await counter.snapshot() == before)
        try await expectUnharmed(host, counter)
    }

    @Test func swiftPluginReportsAnErrorFromATransition() async throws {
        let (host, counter) = try await hostWithCounter()
        let game = try await host.load(path: plugin("TicTacToePlugin"))
        try await game.send("place", [.int(1), .int(1)])
        let before = try await game.snapshot()
        let error = await #expect(throws: PluginCallError.self) { try await game.send("place", [.int(1), .int(1)]) }
        #expect(error?.description == "plugin tictactoe: 'place 1 1' failed: that square is taken")
        #expect(try await game.snapshot() == before)
        #expect(try await game.describe() == #"{"board":["...",".X.","..."],"next":"O","outcome":null}"#)
        try await expectUnharmed(host, counter)
    }

    @Test func scriptLinesReportTheirLine() async throws {
        let (host, counter) = try await hostWithCounter()
        let session = HostSession(host: host, defaultPlugin: nil, clock: ContinuousClock(), output: { _ in })
        let cases: [(String, String)] = [
            ("counter jump", "demo.txt:1: unknown action 'jump' for plugin 'counter' (its actions: increment, decrement, add, reset, add_later, start, stop)"),
            ("nosuch add 1", "demo.txt:2: no plugin named 'nosuch' is loaded (loaded: counter)"),
            ("counter add five", #"demo.txt:3: cannot read argument 1, five: write strings in double quotes, as in "five""#),
            ("counter add 99999999999999999999", "demo.txt:4: argument 1, 99999999999999999999, is out of range of every integer type"),
            (#"counter add "5"#, "demo.txt:5: argument 1: the string has no closing quote"),
            (#"{"plugin": "counter", "action": "add", "args": {"amount": "x"}}"#, #"demo.txt:6: argument 1 (amount) of 'add' must be an int64, got the string "x""#),
            (#"{"plugin": "counter", "action": "add", "args": [1}"#, "demo.txt:7: not valid JSON: expected ',' or ']', found '}' (column 50)"),
            (":wait 3", "demo.txt:8: unknown directive \":wait 3\" (known: `:sleep SECONDS`, `:idle`, `:state`)"),
            ("counter add 9223372036854775807", "demo.txt:9: 'add 9223372036854775807' failed: adding that amount would overflow the counter"),
        ]
        for (number, (line, message)) in cases.enumerated() {
            let error = await #expect(throws: HostLineError.self) { try await session.handle(line, at: "demo.txt:\(number + 1)") }
            #expect(error?.description.hasPrefix(message) == true, "\(error?.description ?? "no error") should start with \(message)")
        }
        try await expectUnharmed(host, counter)
    }

    @Test func invalidEffectRequestsFailTheAction() async throws {
        let (host, counter) = try await hostWithCounter()
        let (path, options) = fixture("fixture_probe_entry")
        let probe = try PluginMachine(plugin: Plugin.load(path: path, options: options), log: { _ in })
        try await probe.send("set", [.int(7)])
        let expected: [(String, String)] = [
            ("request_unknown", "the plugin made an invalid request: next_action: unknown action 'no_such_action' for plugin 'probe'"),
            ("request_wrong_type", "the plugin made an invalid request: next_action: argument 1 (value) of 'set' must be an int32, got a value of type string"),
            ("request_out_of_range", "the plugin made an invalid request: next_action: argument 1 (value) of 'set' is 1099511627776, out of range for int32"),
            ("ignore_invalid_request", "the plugin made an invalid request: next_action: unknown action 'no_such_action'"),
        ]
        for (action, message) in expected {
            let error = await #expect(throws: PluginCallError.self) { try await probe.send(action) }
            #expect(error?.description.hasPrefix("plugin probe: '\(action)' failed: \(message)") == true, "\(error?.description ?? "")")
        }
        #expect(try await probe.describe() == #"{"value":7,"create_request_status":2}"#, "a request from create is refused with ACTOMATON_INVALID_REQUEST")
        #expect(await probe.runningEffectCount == 0)
        try await expectUnharmed(host, counter)
    }

    @Test func restoreRefusesBadSnapshots() async throws {
        let (host, counter) = try await hostWithCounter()
        let error = await #expect(throws: PluginCallError.self) { try await counter.restore([1, 2, 3]) }
        #expect(error?.description == "plugin counter: the plugin refused the snapshot: not a counter snapshot")
        let game = try await host.load(path: plugin("TicTacToePlugin"))
        let swiftError = await #expect(throws: PluginCallError.self) { try await game.restore(Array("{}".utf8)) }
        #expect(swiftError?.description.contains("the plugin refused the snapshot: cannot read the snapshot") == true)
        try await expectUnharmed(host, counter)
    }
}
