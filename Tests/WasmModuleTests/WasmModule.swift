import ActomatonCore
import Foundation
import WasmKit

/// One of the modules `make wasm-build` writes to `.build/wasm/`, instantiated under WasmKit.
struct WasmModule {
    let instance: Instance
    let memory: Memory

    /// The path of `.build/wasm/<name>.wasm`; fails with a clear message if it was not built.
    static func path(of name: String) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent(".build/wasm/\(name).wasm").path
        guard FileManager.default.fileExists(atPath: path) else {
            throw WasmModuleError("\(path) does not exist: run `make wasm-build` (or `make wasm-test`) first")
        }
        return path
    }

    /// The size in bytes of `.build/wasm/<name>.wasm`.
    static func size(of name: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: try path(of: name))
        return (attributes[.size] as? NSNumber)?.intValue ?? 0
    }

    /// Loads `.build/wasm/<name>.wasm`; fails with a clear message if it was not built.
    init(_ name: String) throws {
        let path = try Self.path(of: name)
        let module = try parseWasm(filePath: path)
        instance = try module.instantiate(store: Store(engine: Engine()))
        guard let memory = instance.exports[memory: "memory"] else {
            throw WasmModuleError("\(path) exports no memory")
        }
        self.memory = memory
    }

    /// Calls an exported function that takes and returns 32-bit integers.
    func call(_ name: String, _ arguments: Int32...) throws -> Int32 {
        guard let function = instance.exports[function: name] else {
            throw WasmModuleError("the module exports no function \(name)")
        }
        let results = try function(arguments.map { .i32(UInt32(bitPattern: $0)) })
        guard let result = results.first else { return 0 }
        return Int32(bitPattern: result.i32)
    }

    /// Copies `bytes` into linear memory at `address`.
    func write(_ bytes: [UInt8], at address: Int32) {
        memory.withUnsafeMutableBufferPointer(offset: UInt(UInt32(bitPattern: address)), count: bytes.count) {
            $0.copyBytes(from: bytes)
        }
    }

    /// Copies `count` bytes of linear memory from `address`.
    func read(at address: Int32, count: Int) -> [UInt8] {
        memory.withUnsafeBufferPointer(offset: UInt(UInt32(bitPattern: address)), count: count) { Array($0) }
    }
}

struct WasmModuleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
