// The plugin host: one synchronous action sent to a PluginMachine running a loaded plugin (the
// C counter, called through its prepared libffi call interface, in this process or in a worker
// process), against an Actomaton running the same counter compiled in; the cost of a worker's
// snapshot; and the time to load a plugin.
//
// Naming: "<group>: <variant>"; the variant "baseline" is the compiled-in reducer.

import Actomaton
import ActomatonHost
import ActomatonPluginCore
import Benchmark
import BenchmarkSupport
import Foundation

/// The counter plugin, built beside this executable (the package depends on its product).
let counterPluginPath: String = {
    if let path = ProcessInfo.processInfo.environment["ACTOMATON_COUNTER_PLUGIN"] { return path }
    let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    return directory.appendingPathComponent("libCounterPlugin.so").path
}()

/// The login plugin (Swift, on the kit), also built beside this executable.
let loginPluginPath: String = {
    let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    return directory.appendingPathComponent("libLoginPlugin.so").path
}()

/// The project's root, from this file's path (Benchmarks/Benchmarks/HostBenchmarks/…).
let projectRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path

/// A .wasm plugin `make wasm-build` wrote.
func wasmPluginPath(_ name: String) -> String { "\(projectRoot)/.build/wasm/plugins/\(name).wasm" }

/// The CSV tokenizer plugin (Swift, on the kit), built beside this executable.
let csvPluginPath: String = {
    let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    return directory.appendingPathComponent("libCSVTokenizerPlugin.so").path
}()

/// 1 MiB of CSV (quoted fields, embedded newlines), as `feed` actions of 16 KiB.
let csvChunks: [PluginValue] = {
    var text = ""
    var row = 0
    while text.utf8.count < 1 << 20 {
        text += "\(row),\"name \(row)\",\"a \"\"quoted\"\" field\nover two lines\",12.5\n"
        row += 1
    }
    let bytes = Array(text.utf8.prefix(1 << 20))
    return stride(from: 0, to: bytes.count, by: 16 << 10).map { start in
        .string(String(decoding: bytes[start..<min(start + (16 << 10), bytes.count)], as: UTF8.self))
    }
}()

/// The host executable, built beside this one: isolated plugins run in its worker mode.
let hostExecutablePath: String = {
    let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    return directory.appendingPathComponent("actomaton-worker").path
}()

/// The C counter's vocabulary, compiled in: the same transitions (overflow-checked).
enum CounterAction: Sendable {
    case increment, decrement, add(Int64)
}

let compiledCounter = Reducer<CounterAction, Int64, Void> { action, count, _ in
    switch action {
    case .increment:
        if count < .max { count += 1 }
    case .decrement:
        if count > .min { count -= 1 }
    case let .add(amount):
        let (sum, overflow) = count.addingReportingOverflow(amount)
        if !overflow { count = sum }
    }
    return .empty
}

/// A fixed, irregular action stream, the same for both machines.
let actionMask = 1023
let compiledActions: [CounterAction] = (0...actionMask).map { index in
    switch (index &* 2_654_435_761) % 7 {
    case 0, 1: .decrement
    case 2: .add(Int64(index % 5))
    default: .increment
    }
}

let benchmarks: @Sendable () -> Void = {
    let perSend = Benchmark.Configuration.perOperation
    let perLoad = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        timeUnits: .microseconds,
        warmupIterations: 2,
        scalingFactor: .one,
        maxDuration: .seconds(2),
        maxIterations: 500
    )

    Benchmark("plugin-send: baseline", configuration: perSend) { benchmark in
        let actomaton = Actomaton<CounterAction, Int64>(state: 0, reducer: compiledCounter)
        for index in benchmark.scaledIterations {
            await actomaton.send(compiledActions[index & actionMask])
        }
        blackHole(await actomaton.state)
    }

    Benchmark("plugin-send: C counter plugin through libffi", configuration: perSend) { benchmark in
        let plugin = try Plugin.load(path: counterPluginPath)
        let machine = try PluginMachine(plugin: plugin)
        let actions = try counterActions(of: plugin)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            _ = try? await machine.send(actions[index & actionMask])
        }
        benchmark.stopMeasurement()
        blackHole(try await machine.describe())
    }

    // The same counter compiled to WebAssembly (wasm/plugins/counter_wasm.c, the same rules),
    // run in the sandbox under WasmKit, with fuel metering on (the default) and off.
    for fuel in [true, false] {
        Benchmark("plugin-send: C counter as a .wasm plugin, fuel \(fuel ? "metered" : "off")", configuration: perSend) { benchmark in
            let options = Plugin.LoadOptions(wasmLimits: WasmLimits(fuel: fuel ? WasmLimits.defaultFuel : nil))
            let plugin = try Plugin.load(path: wasmPluginPath("counter"), options: options)
            let machine = try PluginMachine(plugin: plugin)
            let actions = try counterActions(of: plugin)
            benchmark.startMeasurement()
            for index in benchmark.scaledIterations {
                _ = try? await machine.send(actions[index & actionMask])
            }
            benchmark.stopMeasurement()
            blackHole(try await machine.describe())
        }
    }

    // The CSV tokenizer plugin: 1 MiB fed in 16 KiB strings, as a .so and as a .wasm.
    let perMiB = Benchmark.Configuration.perWorkload(
        metrics: [.wallClock, .throughput],
        maxDuration: .seconds(10),
        maxIterations: 20
    )
    for (variant, path) in [("baseline", csvPluginPath), ("csv.wasm plugin", wasmPluginPath("csv"))] {
        Benchmark("csv-plugin: \(variant == "baseline" ? "baseline (csv.so)" : variant)", configuration: perMiB) { benchmark in
            for _ in benchmark.scaledIterations {
                let plugin = try Plugin.load(path: path)
                let machine = try PluginMachine(plugin: plugin)
                let actions = try csvChunks.map { try plugin.action("feed", [$0]) }
                benchmark.startMeasurement()
                for action in actions { _ = try await machine.send(action) }
                benchmark.stopMeasurement()
            }
        }
    }

    // The same plugin in a worker process: one socket round trip per action, and a snapshot
    // every `interval` actions (1: after every action; 16: the default).
    for interval in [16, 1] {
        Benchmark("plugin-send: C counter plugin in a worker process, snapshot every \(interval)", configuration: perSend) { benchmark in
            let options = WorkerOptions(executable: hostExecutablePath, snapshotInterval: interval)
            let machine = try PluginMachine(isolatedPluginAt: counterPluginPath, workerOptions: options)
            let actions = try counterActions(of: machine.plugin)
            benchmark.startMeasurement()
            for index in benchmark.scaledIterations {
                _ = try? await machine.send(actions[index & actionMask])
            }
            benchmark.stopMeasurement()
            blackHole(try await machine.describe())
        }
    }

    // The same (snapshot every 16), sent by a task that prefers the machine's thread
    // (`PluginMachine.taskExecutor`): the send and its answer hop on one thread instead of waking
    // the machine's thread and a pool thread.
    Benchmark("plugin-send: C counter plugin in a worker process, sender on the machine's thread", configuration: perSend) { benchmark in
        let machine = try PluginMachine(isolatedPluginAt: counterPluginPath, workerOptions: WorkerOptions(executable: hostExecutablePath))
        let actions = try counterActions(of: machine.plugin)
        let executor = machine.taskExecutor!
        await withTaskExecutorPreference(executor) {
            benchmark.startMeasurement()
            for index in benchmark.scaledIterations {
                _ = try? await machine.send(actions[index & actionMask])
            }
            benchmark.stopMeasurement()
        }
        blackHole(try await machine.describe())
    }

    Benchmark("plugin-snapshot: C counter plugin in a worker process", configuration: perSend) { benchmark in
        let machine = try PluginMachine(isolatedPluginAt: counterPluginPath, workerOptions: WorkerOptions(executable: hostExecutablePath))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try await machine.snapshot())
        }
        benchmark.stopMeasurement()
    }

    // The journal (`--state`): one action through the C counter plugin, journaled under each
    // sync policy, against the same machine without a journal; one client, in sequence.
    Benchmark("journal-send: baseline", configuration: perSend) { benchmark in
        let plugin = try Plugin.load(path: counterPluginPath)
        let machine = try PluginMachine(plugin: plugin)
        let actions = try counterActions(of: plugin)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            _ = try? await machine.send(actions[index & actionMask])
        }
        benchmark.stopMeasurement()
    }
    for sync in JournalSyncPolicy.allCases {
        Benchmark("journal-send: --sync \(sync)", configuration: perSend) { benchmark in
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            let (journal, machine, actions) = try journaledCounter(at: path, options: JournalOptions(sync: sync))
            benchmark.startMeasurement()
            for index in benchmark.scaledIterations {
                _ = try? await machine.send(actions[index & actionMask])
            }
            benchmark.stopMeasurement()
            journal.close()
        }
    }

    // One stream pipelined, as `actomaton-host run` sends a script: each action is submitted
    // without waiting for its commit, and the journal commits what arrived meanwhile together
    // (group commit); the stream waits for every 256th action and for the last.
    for sync in JournalSyncPolicy.allCases {
        Benchmark("journal-stream: --sync \(sync), one pipelined stream", configuration: perSend) { benchmark in
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            let (journal, machine, actions) = try journaledCounter(at: path, options: JournalOptions(sync: sync))
            var checkpoint: PluginSubmission?
            var last: PluginSubmission?
            benchmark.startMeasurement()
            for index in benchmark.scaledIterations {
                guard let submission = try? await machine.submit(actions[index & actionMask]) else { continue }
                last = submission
                if index & 255 == 255 {
                    try await checkpoint?.acknowledged()
                    checkpoint = submission
                }
            }
            try await last?.acknowledged()
            benchmark.stopMeasurement()
            journal.close()
        }
    }

    // How big the journal gets: 1,000,000 actions with a snapshot every 1,000 (the default),
    // pipelined under `--sync off`; the database and write-ahead log sizes go to standard error.
    Benchmark("journal-size: 1,000,000 actions, a snapshot every 1,000", configuration: .perWorkload(
        metrics: [.wallClock, .throughput], warmupIterations: 0, maxDuration: .seconds(60), maxIterations: 1
    )) { benchmark in
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let (journal, machine, actions) = try journaledCounter(at: path, options: JournalOptions(sync: .off))
        var largestLog: Int64 = 0
        var last: PluginSubmission?
        benchmark.startMeasurement()
        for index in 0..<1_000_000 {
            last = try? await machine.submit(actions[index & actionMask])
            if index % 50_000 == 0 {
                try await last?.acknowledged()
                largestLog = max(largestLog, fileSize(path + "-wal"))
            }
        }
        try await last?.acknowledged()
        benchmark.stopMeasurement()
        let (database, log) = (fileSize(path), fileSize(path + "-wal"))
        journal.close()
        printToStandardError("journal-size: after 1,000,000 actions the database is \(database) B and its write-ahead log \(log) B "
                             + "(largest seen \(largestLog) B); after close: \(fileSize(path)) B and \(fileSize(path + "-wal")) B")
    }

    // Restart: open a journal of 1,000,000 actions and bring the counter back, by replaying
    // them all, or from a snapshot taken at the end.
    for snapshot in [false, true] {
        let restart = Benchmark.Configuration.perWorkload(
            metrics: [.wallClock, .throughput],
            warmupIterations: 0,
            maxDuration: .seconds(30),
            maxIterations: 3
        )
        Benchmark("journal-restart: 1,000,000 actions, \(snapshot ? "from a snapshot" : "replayed")", configuration: restart) { benchmark in
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            do {
                let journal = try PluginJournal(path: path, options: JournalOptions(sync: .off, snapshotInterval: snapshot ? 500_000 : Int.max))
                let plugin = try Plugin.load(path: counterPluginPath)
                let machine = try PluginMachine(plugin: plugin, journal: journal)
                let actions = try counterActions(of: plugin)
                for index in 0..<1_000_000 { _ = try? await machine.send(actions[index & actionMask]) }
                journal.close()
            }
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                let journal = try PluginJournal(path: path, options: JournalOptions(sync: .off))
                let machine = try await PluginHost(journal: journal).load(path: counterPluginPath)
                blackHole(try await machine.describe())
                journal.close()
            }
            benchmark.stopMeasurement()
        }
    }

    Benchmark("plugin-load: C counter plugin, load and create a machine", configuration: perLoad) { benchmark in
        for _ in benchmark.scaledIterations {
            let plugin = try Plugin.load(path: counterPluginPath)
            blackHole(try PluginMachine(plugin: plugin))
        }
    }

    Benchmark("plugin-load: Swift login plugin (kit), load and create a machine", configuration: perLoad) { benchmark in
        for _ in benchmark.scaledIterations {
            let plugin = try Plugin.load(path: loginPluginPath)
            blackHole(try PluginMachine(plugin: plugin))
        }
    }
}

/// The C counter on a machine journaled at `path`, and its action stream.
func journaledCounter(at path: String, options: JournalOptions) throws -> (PluginJournal, PluginMachine, [PluginAction]) {
    let journal = try PluginJournal(path: path, options: options)
    let plugin = try Plugin.load(path: counterPluginPath)
    return (journal, try PluginMachine(plugin: plugin, journal: journal), try counterActions(of: plugin))
}

/// The size of the file at `path`, 0 when there is none.
func fileSize(_ path: String) -> Int64 {
    var info = stat()
    return stat(path, &info) == 0 ? Int64(info.st_size) : 0
}

/// Writes one line to standard error.
func printToStandardError(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

/// The action stream as `plugin`'s actions, checked once.
func counterActions(of plugin: Plugin) throws -> [PluginAction] {
    try compiledActions.map { action in
        switch action {
        case .increment: try plugin.action("increment", [])
        case .decrement: try plugin.action("decrement", [])
        case let .add(amount): try plugin.action("add", [.int(amount)])
        }
    }
}

/// A fresh database path on the disk (not a RAM file system), for the journal benchmarks.
func temporaryDatabase() -> String {
    let directory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/journal-bench")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent("state-\(UUID().uuidString).sqlite").path
}

/// Removes a database and its WAL files.
func removeDatabase(_ path: String) {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}
