import Foundation
import Testing
@testable import ActomatonHost

/// A WebAssembly binary as its sections, to grow the hostile fixture past the host's fixed
/// limits (wat2wasm cannot write some of these: it overflows its stack on deep nesting).
struct WasmModuleEditor {
    var sections: [(id: UInt8, payload: [UInt8])] = []

    /// The sections of the module in `bytes`.
    init(_ bytes: [UInt8]) {
        var position = 8
        while position < bytes.count {
            let id = bytes[position]
            position += 1
            let size = Self.readLEB(bytes, &position)
            sections.append((id, Array(bytes[position..<position + size])))
            position += size
        }
    }

    /// The module's bytes.
    var bytes: [UInt8] {
        sections.reduce(into: [0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00]) { bytes, section in
            bytes += [section.id] + Self.leb(section.payload.count) + section.payload
        }
    }

    /// Adds a function type `() -> i32`, and a function of that type with `body` (the
    /// locals' declaration, the instructions, and the final `end`) for each of `bodies`.
    mutating func appendFunctions(_ bodies: [[UInt8]]) {
        let type = appendEntries(to: 1, [[0x60, 0x00, 0x01, 0x7F]])
        appendEntries(to: 3, Array(repeating: Self.leb(type), count: bodies.count))
        appendEntries(to: 10, bodies.map { Self.leb($0.count) + $0 })
    }

    /// Adds `section`, where its id's place is.
    mutating func insert(_ id: UInt8, _ payload: [UInt8]) {
        let order: [UInt8] = [1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 12, 10, 11]
        let rank = { (id: UInt8) in id == 0 ? Int.max : order.firstIndex(of: id)! }
        let index = sections.firstIndex { rank($0.id) > rank(id) } ?? sections.endIndex
        sections.insert((id, payload), at: index)
    }

    /// Adds `entries` to the vector of section `id`; returns the index of the first.
    @discardableResult
    private mutating func appendEntries(to id: UInt8, _ entries: [[UInt8]]) -> Int {
        let index = sections.firstIndex { $0.id == id }!
        var position = 0
        let count = Self.readLEB(sections[index].payload, &position)
        sections[index].payload = Self.leb(count + entries.count) + sections[index].payload[position...] + entries.joined()
        return count
    }

    /// A function body with `locals` i32 locals (in groups of at most 99,999, WasmKit's limit
    /// for one function) that returns 0.
    static func body(locals: Int = 0, instructions: [UInt8] = []) -> [UInt8] {
        var groups: [[UInt8]] = []
        var left = locals
        while left > 0 {
            groups.append(leb(min(left, 99_999)) + [0x7F])
            left -= min(left, 99_999)
        }
        return leb(groups.count) + groups.joined() + instructions + [0x41, 0x00, 0x0B]
    }

    /// A function body of `depth` nested empty blocks that returns 0.
    static func body(nesting depth: Int) -> [UInt8] {
        body(instructions: Array(repeating: [UInt8]([0x02, 0x40]), count: depth).flatMap { $0 } + Array(repeating: 0x0B, count: depth))
    }

    static func leb(_ value: Int) -> [UInt8] {
        var value = UInt64(value)
        var bytes: [UInt8] = []
        repeat {
            let low = UInt8(value & 0x7F)
            value >>= 7
            bytes.append(value == 0 ? low : low | 0x80)
        } while value != 0
        return bytes
    }

    static func readLEB(_ bytes: [UInt8], _ position: inout Int) -> Int {
        var value = 0
        var shift = 0
        while true {
            let byte = bytes[position]
            position += 1
            value |= Int(byte & 0x7F) << shift
            shift += 7
            if byte & 0x80 == 0 { return value }
        }
    }
}

@Suite("WebAssembly plugins: what a module may declare")
struct WasmModuleLimitTests {
    let hostile: [UInt8]

    init() throws {
        hostile = try [UInt8](Data(contentsOf: URL(fileURLWithPath: wasmPlugin("hostile", in: "hostile"))))
    }

    /// Writes `module` to a file of its own and loads it.
    func load(_ module: WasmModuleEditor) throws -> Plugin {
        let path = try temporaryDirectory() + "/module.wasm"
        try Data(module.bytes).write(to: URL(fileURLWithPath: path))
        return try Plugin.load(path: path)
    }

    func refusal(_ module: WasmModuleEditor) throws -> String? {
        let error = #expect(throws: PluginLoadError.self) { _ = try load(module) }
        #expect(error?.description.contains("\n") == false)
        return error?.reason.description
    }

    func census(_ module: WasmModuleEditor) -> String? {
        do {
            _ = try WasmModuleCensus.take(module.bytes)
            return nil
        } catch {
            return error.description
        }
    }

    /// Regression: a 22 KB module of 2,000 functions of 99,999 locals took 4.7 GB and 6 s to
    /// load. The count is of the whole module, at the limit and one past.
    @Test func localsAtTheLimitAndOnePast() throws {
        var atLimit = WasmModuleEditor(hostile)
        let declared = try WasmModuleCensus.take(hostile).locals
        atLimit.appendFunctions([WasmModuleEditor.body(locals: WasmLimits.maxLocals - Int(declared))])
        #expect(census(atLimit) == nil)
        var onePast = WasmModuleEditor(hostile)
        onePast.appendFunctions([WasmModuleEditor.body(locals: WasmLimits.maxLocals - Int(declared) + 1)])
        #expect(census(onePast) == "the module's functions declare more than 1000000 locals in all; a module may declare at most 1000000 (that limit is fixed)")
        #expect(try refusal(onePast) == census(onePast))
    }

    /// Every function counts, up to the limit and one past (the census only: compiling 100,000
    /// functions in a debug build takes a while).
    @Test func functionsAtTheLimitAndOnePast() throws {
        let defined = try WasmModuleCensus.take(hostile).functions
        var atLimit = WasmModuleEditor(hostile)
        atLimit.appendFunctions(Array(repeating: WasmModuleEditor.body(), count: WasmLimits.maxFunctions - defined))
        #expect(census(atLimit) == nil)
        var onePast = WasmModuleEditor(hostile)
        onePast.appendFunctions(Array(repeating: WasmModuleEditor.body(), count: WasmLimits.maxFunctions - defined + 1))
        #expect(census(onePast) == "the module's function section declares 100001 entries; it may have at most 100000 (that limit is fixed)")
    }

    /// Regression: a function of a million nested blocks took 200 MB to compile, at each
    /// instance's first call. At the limit the module loads and runs.
    @Test func blockNestingAtTheLimitAndOnePast() async throws {
        var atLimit = WasmModuleEditor(hostile)
        atLimit.appendFunctions([WasmModuleEditor.body(nesting: WasmLimits.maxBlockNesting)])
        let machine = try PluginMachine(plugin: load(atLimit))
        _ = try await machine.send(machine.plugin.action("bump", []))
        #expect(try await machine.describe() == "n=1")
        var onePast = WasmModuleEditor(hostile)
        onePast.appendFunctions([WasmModuleEditor.body(nesting: WasmLimits.maxBlockNesting + 1)])
        let functions = try WasmModuleCensus.take(hostile).functions
        #expect(try refusal(onePast) == "the code section's function \(functions) nests blocks more than 10000 deep; a function may nest at most 10000 (that limit is fixed)")
    }

    /// Regression: a 4 MB element section took 750 MB to parse. At the limit and one past.
    @Test func elementSectionAtTheLimitAndOnePast() throws {
        // One passive segment of function indices: flags 1, element kind 0, the count, then
        // function 0 for every entry.
        func section(bytes: Int) -> [UInt8] {
            let count = (1...5).map { bytes - 3 - $0 }.first { WasmModuleEditor.leb($0).count == bytes - 3 - $0 }!
            return [0x01, 0x01, 0x00] + WasmModuleEditor.leb(count) + Array(repeating: 0, count: count)
        }
        var atLimit = WasmModuleEditor(hostile)
        atLimit.insert(9, section(bytes: WasmLimits.maxElementSectionBytes))
        #expect(census(atLimit) == nil)
        var onePast = WasmModuleEditor(hostile)
        onePast.insert(9, section(bytes: WasmLimits.maxElementSectionBytes + 1))
        #expect(try refusal(onePast) == "the module's element section is 131073 bytes; it may have at most 131072 (that limit is fixed)")
    }

    /// Regression: a function type of 10 million parameters, 10 MB, took 400 MB to parse. The
    /// type section at its limit and one past.
    @Test func typeSectionAtTheLimitAndOnePast() throws {
        func withType(sectionBytes: Int) -> WasmModuleEditor {
            var module = WasmModuleEditor(hostile)
            let index = module.sections.firstIndex { $0.id == 1 }!
            var position = 0
            let count = WasmModuleEditor.readLEB(module.sections[index].payload, &position)
            let rest = module.sections[index].payload[position...]
            let head = WasmModuleEditor.leb(count + 1) + rest + [0x60]
            // The parameters fill what is left but for their count and the empty results.
            let parameters = (1...5).map { sectionBytes - head.count - $0 - 1 }.first { WasmModuleEditor.leb($0).count == sectionBytes - head.count - $0 - 1 }!
            module.sections[index].payload = head + WasmModuleEditor.leb(parameters) + Array(repeating: 0x7F, count: parameters) + [0x00]
            return module
        }
        #expect(withType(sectionBytes: WasmLimits.maxSectionBytes).sections.first { $0.id == 1 }?.payload.count == WasmLimits.maxSectionBytes)
        #expect(census(withType(sectionBytes: WasmLimits.maxSectionBytes)) == nil)
        #expect(try refusal(withType(sectionBytes: WasmLimits.maxSectionBytes + 1)) == "the module's type section is 1048577 bytes; it may have at most 1048576 (that limit is fixed)")
    }

    /// The module as a whole, at the limit and one past (padded with a custom section).
    @Test func moduleSizeAtTheLimitAndOnePast() throws {
        func padded(to size: Int) -> WasmModuleEditor {
            var module = WasmModuleEditor(hostile)
            module.insert(0, [])
            let padding = size - module.bytes.count
            module.sections[module.sections.count - 1].payload = [0] + Array(repeating: 0, count: padding - 1)
            while module.bytes.count > size { module.sections[module.sections.count - 1].payload.removeLast() }
            return module
        }
        #expect(padded(to: WasmLimits.maxModuleBytes).bytes.count == WasmLimits.maxModuleBytes)
        #expect(census(padded(to: WasmLimits.maxModuleBytes)) == nil)
        #expect(census(padded(to: WasmLimits.maxModuleBytes + 1)) == "the module is 16777217 bytes; a module may have at most 16777216 (that limit is fixed)")
    }

    /// Regression: WasmKit looks names up without checking their indices, when a trap asks for
    /// them; a name section naming a function the module does not have crashed the host. The
    /// host parses modules without their custom sections.
    @Test func aNameSectionCannotCrashTheHost() async throws {
        var module = WasmModuleEditor(hostile)
        // The function-names subsection (1): one name, "zz", for function 100,000.
        let names: [UInt8] = [0x01] + WasmModuleEditor.leb(7) + [0x01] + WasmModuleEditor.leb(100_000) + [0x02, 0x7A, 0x7A]
        module.insert(0, [0x04] + Array("name".utf8) + names)
        let machine = try PluginMachine(plugin: load(module))
        let error = await #expect(throws: PluginCallError.self) { try await machine.send(machine.plugin.action("crash", [])) }
        #expect(error?.description.contains("it trapped: unreachable") == true)
    }

    /// A function that does not validate is refused at load, not at its first call (it was
    /// reported as a trap of every action that called it).
    @Test func anInvalidFunctionIsRefusedAtLoad() throws {
        var module = WasmModuleEditor(hostile)
        // i32.add with nothing on the stack.
        module.appendFunctions([[0x00, 0x6A, 0x0B]])
        let reason = try #require(try refusal(module))
        #expect(reason.hasPrefix("a function of the module is not valid WebAssembly: "))
        #expect(reason.contains(" at offset 0x"))
    }

    /// A section that runs past the end of the file, a count that is not a number, and an
    /// unknown section are refused with one line, before any parser allocates for them.
    @Test func aBrokenStructureIsRefusedWithOneLine() throws {
        var pastTheEnd = hostile
        pastTheEnd += [0x0B, 0xFF, 0xFF, 0x03]
        #expect(throws: WasmModuleCensus.Refusal.self) { try WasmModuleCensus.take(pastTheEnd) }
        var badCount = hostile
        badCount += [0x0B, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]
        let count = #expect(throws: WasmModuleCensus.Refusal.self) { try WasmModuleCensus.take(badCount) }
        #expect(count?.description == "not a valid WebAssembly module: a count is not a 32-bit number")
        var unknown = WasmModuleEditor(hostile)
        unknown.insert(0, [])
        unknown.sections[unknown.sections.count - 1].id = 14
        let section = #expect(throws: WasmModuleCensus.Refusal.self) { try WasmModuleCensus.take(unknown.bytes) }
        #expect(section?.description == "not a valid WebAssembly module: unknown section 14")
    }
}
