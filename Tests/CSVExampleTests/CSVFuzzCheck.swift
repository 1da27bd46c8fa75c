// The `csv` fuzz check: `make fuzz` runs it under libFuzzer (Tests/Fuzz/Harnesses/CSVFuzzEntry.swift),
// and `CSVFuzzReplayTests` replays every file of Tests/Fuzz/Corpus/csv with it.
import ActomatonCore
import CSVExample

/// Where ``CSVTokenizer`` and ``RFC4180ReferenceReader`` disagree on one input.
struct CSVFuzzFailure: Error, CustomStringConvertible {
    /// What differs, with the input.
    var description: String
}

/// Checks the CSV tokenizer against the reference reader on `bytes`; throws where they disagree.
///
/// The first byte picks the delimiter (a comma for half of the values; also tab, `;`, NUL and
/// 0xC3, a UTF-8 lead byte); the rest is the CSV text. The tokens, the ``CSVDocument`` and a second
/// run through the same machine after ``CSVTokenizer/Action/endOfInput`` must all agree.
func fuzzCSV(_ bytes: [UInt8]) throws(CSVFuzzFailure) {
    let delimiters: [UInt8] = [0x2C, 0x2C, 0x2C, 0x2C, 0x09, 0x3B, 0x00, 0xC3]
    let delimiter = delimiters[Int(bytes.first ?? 0) % delimiters.count]
    let input = Array(bytes.dropFirst())
    let tokenizer = CSVTokenizer(delimiter: delimiter)
    let reference = RFC4180ReferenceReader(delimiter: delimiter)

    func failure(_ what: String) -> CSVFuzzFailure {
        CSVFuzzFailure(description: "\(what); delimiter \(show([delimiter])), input \(show(input))")
    }

    let expected = reference.tokens(of: input)
    let tokens = tokenizer.tokens(of: input)
    if tokens != expected {
        let index = (0..<min(tokens.count, expected.count)).first { tokens[$0] != expected[$0] } ?? min(tokens.count, expected.count)
        throw failure("token \(index) differs: the tokenizer gives \(show(tokens, at: index)), the reference \(show(expected, at: index))")
    }

    let document = CSVDocument(input, tokenizer: tokenizer)
    let expectedErrors = expected.compactMap { token -> CSVSyntaxError? in
        if case let .error(error) = token { error } else { nil }
    }
    guard document.records == reference.records(of: input), document.errors == expectedErrors else {
        throw failure("the CSVDocument differs from the tokens")
    }

    // `endOfInput` resets the machine: the same input again gives the same tokens.
    var machine = MealyMachine(state: CSVTokenizer.State(), reducer: tokenizer, effectManager: ReplyEffectManager())
    for _ in 0..<2 {
        var again: [CSVToken] = []
        for byte in input { again += machine.send(.byte(byte)) }
        again += machine.send(.endOfInput)
        guard again == expected, machine.state == CSVTokenizer.State() else {
            throw failure("a machine reused after endOfInput gives other tokens or keeps state")
        }
    }
}

/// Bytes as a Swift string literal when they are UTF-8, else as hex.
private func show(_ bytes: [UInt8]) -> String {
    if let text = String(validating: bytes, as: UTF8.self) { return String(reflecting: text) }
    return "[" + bytes.map { "0x" + String($0, radix: 16) }.joined(separator: ", ") + "]"
}

private func show(_ tokens: [CSVToken], at index: Int) -> String {
    guard index < tokens.count else { return "no token (the stream ends)" }
    switch tokens[index] {
    case let .field(bytes): return "field \(show(bytes))"
    case .endOfRecord: return "end of record"
    case let .error(error): return "error \(error.kind) at \(error.line):\(error.column)"
    }
}
