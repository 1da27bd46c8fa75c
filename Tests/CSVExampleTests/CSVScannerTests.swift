import ActomatonCore
import CSVExample
import Testing

/// Collects a scanner's steps as tokens, reading fields from the input.
struct TokenSink: OutputSink {
    let input: [UInt8]
    var tokens: [CSVToken] = []

    mutating func receive(_ step: CSVScanStep) {
        tokens += step.tokens(in: input)
    }
}

/// Counts fields and records and sums field lengths: what a bulk reader does without allocating.
struct FieldCounter: OutputSink {
    var fields = 0, records = 0, bytes = 0, errors = 0

    mutating func receive(_ step: CSVScanStep) {
        if let field = step.field {
            fields += 1
            bytes += field.range.count
        }
        if step.endsRecord { records += 1 }
        if step.error != nil { errors += 1 }
    }
}

/// `bytes` through a `CSVScanner` in bulk, as tokens.
func scannedTokens(_ bytes: [UInt8], delimiter: UInt8 = UInt8(ascii: ",")) -> [CSVToken] {
    var machine = MealyMachine(state: CSVScanner.State(), reducer: CSVScanner(delimiter: delimiter),
                               effectManager: SinkEffectManager<CSVScanner.Action, TokenSink>(TokenSink(input: bytes)))
    machine.send(contentsOf: bytes.lazy.map(CSVScanner.Action.byte))
    machine.send(.endOfInput)
    return machine.effectManager.sink.tokens
}

@Suite("CSVScanner: the tokenizer's rules, with fields as ranges")
struct CSVScannerTests {
    @Test(arguments: [
        "a,b,c\n1,2,3\n", "a,b", "a,b\r\nc,d\r\n", "a\rb\r", "\"a,b\",c\n", "\"he said \"\"hi\"\"\",x\n",
        "\"line1\nline2\",x\r\n", ",,\n", "a,", "a\n\nb\n", "\"héllo\",wörld\n", "",
        "ab\"c,d\n", "x\n\"ab\"c,d\n", "a,\"bc", "\"a\nb\",x\r\nc\"d\n", "\"\"", "\"\"\"\"", ",", "\n", "\r\n\r\n",
        "\"a\"\"b\"c\"d,e", "\"abc", "\"ab\r\n", "a,\"\"", "\"\",\"\"\n",
    ])
    func sameTokensAsTheTokenizer(text: String) {
        let bytes = Array(text.utf8)
        #expect(scannedTokens(bytes) == CSVTokenizer().tokens(of: bytes))
    }

    @Test func sameTokensOnRandomDocuments() {
        var random = SplitMix64(seed: 99)
        let alphabet = Array("ab ,,\"\"\r\n\n".utf8) + [0xC3, 0xA9, 0x00, 0xFF, UInt8(ascii: "\t")]
        for _ in 0..<3_000 {
            let bytes = (0..<Int(random.next() % 120)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
            #expect(scannedTokens(bytes) == CSVTokenizer().tokens(of: bytes), "\(bytes)")
            let tab = UInt8(ascii: "\t")
            #expect(scannedTokens(bytes, delimiter: tab) == CSVTokenizer(delimiter: tab).tokens(of: bytes), "\(bytes)")
        }
    }

    /// A sink that only counts sees every field and record once; the end of input starts over.
    /// (That the bulk path allocates nothing per field is measured in Benchmarks/: 0 mallocs.)
    @Test func aSinkSeesEveryFieldAndRecord() {
        let bytes = Array("a,\"b\"\"c\",d\n1,2,3\n".utf8)
        var machine = MealyMachine(state: CSVScanner.State(), reducer: CSVScanner(),
                                   effectManager: SinkEffectManager<CSVScanner.Action, FieldCounter>(FieldCounter()))
        machine.send(contentsOf: bytes.lazy.map(CSVScanner.Action.byte))
        machine.send(.endOfInput)
        let counts = machine.effectManager.sink
        #expect((counts.fields, counts.records, counts.errors) == (6, 2, 0))
        #expect(machine.state == CSVScanner.State(), "the end of input starts over")
    }
}
