import ActomatonCore
import CSVExample
import Testing

/// Drives csv.wasm through its C ABI.
private struct CSVWasm {
    let module: WasmModule

    init() throws {
        module = try WasmModule("csv")
        #expect(try module.call("am_abi_version") == 1)
        #expect(try module.call("csv_reset", 44) == 0)
    }

    /// Feeds `bytes` and decodes the tokens they produced.
    func feed(_ bytes: [UInt8]) throws -> [CSVToken] {
        let buffer = try module.call("csv_input_buffer", Int32(bytes.count))
        try #require(buffer != 0)
        module.write(bytes, at: buffer)
        let count = try module.call("csv_feed", Int32(bytes.count))
        try #require(count >= 0, "csv_feed failed with \(count)")
        return try tokens(expected: count)
    }

    func finish() throws -> [CSVToken] {
        let count = try module.call("csv_finish")
        try #require(count >= 0)
        return try tokens(expected: count)
    }

    /// Decodes the output buffer: kind byte, UInt32 length, payload.
    private func tokens(expected: Int32) throws -> [CSVToken] {
        let length = Int(try module.call("csv_output_length"))
        let bytes = length == 0 ? [] : module.read(at: try module.call("csv_output_pointer"), count: length)
        var tokens: [CSVToken] = []
        var index = 0
        func uint32(at offset: Int) -> UInt32 {
            (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
        }
        while index < bytes.count {
            let kind = bytes[index], size = Int(uint32(at: index + 1))
            let payload = Array(bytes[(index + 5)..<(index + 5 + size)])
            switch kind {
            case 1: tokens.append(.field(payload))
            case 2: tokens.append(.endOfRecord)
            case 3:
                let error = try #require(CSVSyntaxError.Kind(rawValue: payload[0]))
                tokens.append(.error(CSVSyntaxError(error, line: Int(uint32(at: index + 6)), column: Int(uint32(at: index + 10)))))
            default: Issue.record("unknown token kind \(kind)")
            }
            index += 5 + size
        }
        #expect(tokens.count == Int(expected))
        return tokens
    }
}

@Suite("csv.wasm against the native tokenizer")
struct CSVWasmTests {
    @Test(arguments: [
        "a,b,c\n1,2,3\n", "a,b", "a,b\r\nc,d\r\n", "a\rb\r", "\"a,b\",c\n", "\"he said \"\"hi\"\"\",x\n",
        "\"line1\nline2\",x\r\n", ",,\n", "a,", "a\n\nb\n", "\"héllo\",wörld\n", "",
        "ab\"c,d\n", "x\n\"ab\"c,d\n", "a,\"bc", "\"a\nb\",x\r\nc\"d\n",
    ])
    func sameTokensAsNative(text: String) throws {
        let csv = try CSVWasm()
        let bytes = Array(text.utf8)
        #expect(try csv.feed(bytes) + csv.finish() == CSVTokenizer().tokens(of: bytes))
    }

    /// Random documents, well-formed or not, fed in random chunks.
    @Test func generatedDocumentsInChunks() throws {
        let csv = try CSVWasm()
        var random = SplitMix64(seed: 2024)
        let alphabet = Array("ab ,,\"\"\r\n\n".utf8) + [0xC3, 0xA9, 0x00, 0xFF]
        for _ in 0..<200 {
            let bytes = (0..<Int(random.next() % 200)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
            var tokens: [CSVToken] = []
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + Int(random.next() % 17) + 1)
                tokens += try csv.feed(Array(bytes[start..<end]))
                start = end
            }
            tokens += try csv.finish()
            #expect(tokens == CSVTokenizer().tokens(of: bytes), "input: \(bytes)")
        }
    }

    @Test func tabDelimiter() throws {
        let csv = try CSVWasm()
        #expect(try csv.module.call("csv_reset", 9) == 0)
        let bytes = Array("a\tb,c\n".utf8)
        #expect(try csv.feed(bytes) + csv.finish() == CSVTokenizer(delimiter: 9).tokens(of: bytes))
    }

    @Test func badArgumentsAreRefusedAndTheModuleKeepsWorking() throws {
        let csv = try CSVWasm()
        #expect(try csv.feed(Array("a,".utf8)) == [.field(Array("a".utf8))])
        let capacity: Int32 = 4096
        #expect(try csv.module.call("csv_input_buffer", capacity) != 0)
        #expect(try csv.module.call("csv_feed", capacity + 1) == -3)       // longer than the buffer
        #expect(try csv.module.call("csv_feed", -1) == -3)
        #expect(try csv.module.call("csv_input_buffer", -1) == 0)
        #expect(try csv.module.call("csv_input_buffer", .max) == 0)        // out of memory: no trap
        #expect(try csv.module.call("csv_reset", 34) == -3)                // `"` cannot delimit
        #expect(try csv.module.call("csv_reset", 256) == -3)
        // Nothing above disturbed the half-read record.
        #expect(try csv.feed(Array("b\n".utf8)) == [.field(Array("b".utf8)), .endOfRecord])
    }
}
