import WasmParser

/// What a module declares, counted from its bytes before WasmKit parses them, against the
/// fixed limits of ``WasmLimits``.
///
/// WasmKit bounds the locals of one function, not what a module declares in all, and its parser
/// expands what the binary format writes compactly: one local-declaration entry of 3 bytes
/// stands for up to 100,000 locals of 24 bytes each once parsed, and one byte of an element
/// segment takes about 190. A 22 KB module of 2,000 functions of 99,999 locals each took 4.7 GB
/// and 6 s to load, a 4 MB element section 750 MB, and a 10 MB function type 400 MB, past any
/// memory cap. So the host reads each section's size and counts itself first, in one pass that
/// allocates nothing but the copy it parses (``stripped``), and refuses a module past a limit
/// with one line. Block nesting, which sizes the compiler's working memory (200 MB
/// for a 3 MB function of nested blocks), is checked after the parse (``checkNesting(_:)``).
struct WasmModuleCensus {
    /// The functions the module defines.
    private(set) var functions = 0
    /// The tables the module defines (imported ones are refused on their own).
    private(set) var tables = 0
    /// The locals all its functions declare, parameters excluded.
    private(set) var locals: UInt64 = 0
    /// The module without its custom sections, which is what the host parses: it uses none,
    /// and WasmKit reads a name section without checking its indices (a name for a function
    /// the module does not have crashed the host when a trap looked the names up).
    private(set) var stripped: [UInt8] = []

    /// Why a module is refused, on one line.
    struct Refusal: Error, CustomStringConvertible {
        let description: String
    }

    private static let sectionNames = ["custom", "type", "import", "function", "table", "memory", "global", "export",
                                       "start", "element", "code", "data", "data count", "tag"]

    /// Counts what `bytes` declare; throws the first limit they pass, or a structure that is
    /// not a module's (a section past the end, a count that is not a number).
    static func take(_ bytes: [UInt8]) throws(Refusal) -> WasmModuleCensus {
        guard bytes.count <= WasmLimits.maxModuleBytes else {
            throw Refusal(description: "the module is \(bytes.count) bytes; a module may have at most \(WasmLimits.maxModuleBytes) (that limit is fixed)")
        }
        var census = WasmModuleCensus()
        var reader = Reader(bytes: bytes, position: 8)
        census.stripped = Array(bytes.prefix(8))
        census.stripped.reserveCapacity(bytes.count)
        while reader.position < bytes.count {
            let start = reader.position
            let id = try reader.byte()
            let size = try reader.count()
            guard size <= bytes.count - reader.position else {
                throw Refusal(description: "not a valid WebAssembly module: section \(id) runs past the end of the file")
            }
            let end = reader.position + size
            let name = Int(id) < sectionNames.count ? sectionNames[Int(id)] : "unknown"
            if ![0, 9, 10, 11].contains(id), size > WasmLimits.maxSectionBytes {
                throw Refusal(description: "the module's \(name) section is \(size) bytes; it may have at most \(WasmLimits.maxSectionBytes) (that limit is fixed)")
            }
            switch id {
            case 0:
                reader.position = end
                continue
            case 1, 2, 3, 5, 6, 7, 11, 13:
                let entries = try reader.count()
                guard entries <= (id == 3 ? WasmLimits.maxFunctions : WasmLimits.maxSectionEntries) else {
                    let limit = id == 3 ? WasmLimits.maxFunctions : WasmLimits.maxSectionEntries
                    throw Refusal(description: "the module's \(name) section declares \(entries) entries; it may have at most \(limit) (that limit is fixed)")
                }
                if id == 3 { census.functions = entries }
            case 4:
                census.tables = try reader.count()
            case 9:
                guard size <= WasmLimits.maxElementSectionBytes else {
                    throw Refusal(description: "the module's element section is \(size) bytes; it may have at most "
                                  + "\(WasmLimits.maxElementSectionBytes) (that limit is fixed)")
                }
            case 10:
                census.locals = try countLocals(&reader, end: end)
            case 8, 12:
                break
            default:
                throw Refusal(description: "not a valid WebAssembly module: unknown section \(id)")
            }
            reader.position = end
            census.stripped += bytes[start..<end]
        }
        return census
    }

    /// The locals the code section declares, read up to `end`.
    private static func countLocals(_ reader: inout Reader, end: Int) throws(Refusal) -> UInt64 {
        let bodies = try reader.count()
        guard bodies <= WasmLimits.maxFunctions else {
            throw Refusal(description: "the module's code section declares \(bodies) entries; it may have at most \(WasmLimits.maxFunctions) (that limit is fixed)")
        }
        var locals: UInt64 = 0
        for _ in 0..<bodies {
            let size = try reader.count()
            guard size <= end - reader.position else {
                throw Refusal(description: "not a valid WebAssembly module: a function body runs past the end of the code section")
            }
            let bodyEnd = reader.position + size
            let groups = try reader.count()
            for _ in 0..<groups {
                guard reader.position < bodyEnd else {
                    throw Refusal(description: "not a valid WebAssembly module: a function's locals run past its body")
                }
                locals += UInt64(try reader.count())
                guard locals <= UInt64(WasmLimits.maxLocals) else {
                    throw Refusal(description: "the module's functions declare more than \(WasmLimits.maxLocals) locals in all; "
                                  + "a module may declare at most \(WasmLimits.maxLocals) (that limit is fixed)")
                }
                // A value type is one byte, but for a reference with a heap type after it.
                let type = try reader.byte()
                if type == 0x63 || type == 0x64 { _ = try reader.count() }
            }
            reader.position = bodyEnd
        }
        return locals
    }

    /// Throws if a function of the module in `bytes` (parsed already) nests blocks, loops, ifs
    /// and try-tables deeper than ``WasmLimits/maxBlockNesting``.
    static func checkNesting(_ bytes: [UInt8]) throws(Refusal) {
        var parser = Parser(bytes: bytes)
        var index = 0
        do {
            while let payload = try parser.parseNext() {
                guard case let .codeSection(codes) = payload else { continue }
                for code in codes {
                    var expression = ExpressionParser(code: code)
                    var nesting = BlockNesting()
                    while let instruction = try expression.parse() {
                        try instruction(visitor: &nesting)
                    }
                    index += 1
                }
            }
        } catch is BlockNesting.TooDeep {
            throw Refusal(description: "the code section's function \(index) nests blocks more than \(WasmLimits.maxBlockNesting) deep; "
                          + "a function may nest at most \(WasmLimits.maxBlockNesting) (that limit is fixed)")
        } catch {
            throw Refusal(description: "not a valid WebAssembly module: \(oneLine(error))")
        }
    }

    /// Counts the depth of blocks, loops, ifs and try-tables, and stops past the limit.
    private struct BlockNesting: AnyInstructionVisitor {
        struct TooDeep: Error {}
        typealias VisitorError = TooDeep
        var binaryOffset = 0
        private var depth = 0

        mutating func visit(_ instruction: Instruction) throws(TooDeep) {
            switch instruction {
            case .block, .loop, .if, .tryTable:
                depth += 1
                if depth > WasmLimits.maxBlockNesting { throw TooDeep() }
            case .end:
                depth -= 1
            default:
                break
            }
        }
    }

    /// Reads bytes and unsigned LEB128 numbers, refusing what runs past the end.
    private struct Reader {
        let bytes: [UInt8]
        var position: Int

        mutating func byte() throws(Refusal) -> UInt8 {
            guard position < bytes.count else {
                throw Refusal(description: "not a valid WebAssembly module: it ends in the middle of a section")
            }
            defer { position += 1 }
            return bytes[position]
        }

        /// An unsigned 32-bit LEB128 number: a count, a size or an index.
        mutating func count() throws(Refusal) -> Int {
            var value: UInt64 = 0
            for shift in stride(from: 0, to: 35, by: 7) {
                let next = try byte()
                value |= UInt64(next & 0x7F) << UInt64(shift)
                if next & 0x80 == 0 {
                    guard value <= UInt64(UInt32.max) else { break }
                    return Int(value)
                }
            }
            throw Refusal(description: "not a valid WebAssembly module: a count is not a 32-bit number")
        }
    }
}
