// The CSV tokenizer compiled to WebAssembly (csv.wasm, from `make wasm-build`) running under
// WasmKit, against the same Swift code compiled natively, on the same 1 MiB of CSV, in one run.

import ActomatonCore
import Benchmark
import BenchmarkSupport
import CSVExample
import Foundation
import WasmKit

let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration.perWorkload(
        metrics: [.wallClock, .throughput],
        maxDuration: .seconds(5),
        maxIterations: 50
    )
    let csv = sampleCSV(byteCount: 1 << 20)

    Benchmark("csv-wasm: baseline", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            var machine = MealyMachine(state: CSVTokenizer.State(), reducer: CSVTokenizer(), effectManager: ReplyEffectManager())
            var tokens = 0
            for byte in csv { tokens += machine.send(.byte(byte)).count }
            tokens += machine.send(.endOfInput).count
            blackHole(tokens)
        }
    }

    Benchmark("csv-wasm: csv.wasm under WasmKit", configuration: configuration) { benchmark in
        let module = try CSVModule()
        for _ in benchmark.scaledIterations {
            blackHole(try module.tokenize(csv))
        }
    }
}

/// csv.wasm, instantiated; feeds input in 64 KiB chunks and counts the tokens.
struct CSVModule {
    let memory: Memory
    let reset, inputBuffer, feed, finish: Function

    init() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent(".build/wasm/csv.wasm").path
        guard FileManager.default.fileExists(atPath: path) else {
            fatalError("\(path) does not exist: run `make wasm-build` first")
        }
        let instance = try parseWasm(filePath: path).instantiate(store: Store(engine: Engine()))
        func function(_ name: String) -> Function { instance.exports[function: name]! }
        memory = instance.exports[memory: "memory"]!
        reset = function("csv_reset")
        inputBuffer = function("csv_input_buffer")
        feed = function("csv_feed")
        finish = function("csv_finish")
    }

    func tokenize(_ bytes: [UInt8]) throws -> Int {
        _ = try reset([.i32(44)])
        var tokens = 0
        var start = 0
        while start < bytes.count {
            let chunk = bytes[start..<min(start + 65_536, bytes.count)]
            let buffer = try inputBuffer([.i32(UInt32(chunk.count))])[0].i32
            memory.withUnsafeMutableBufferPointer(offset: UInt(buffer), count: chunk.count) { $0.copyBytes(from: chunk) }
            tokens += Int(try feed([.i32(UInt32(chunk.count))])[0].i32)
            start += chunk.count
        }
        return tokens + Int(try finish([])[0].i32)
    }
}
