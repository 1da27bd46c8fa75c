import ActomatonCore
import CSVExample
import CSV
import SwiftCSV

/// Consumes fields the way a caller would: keeps counts so the work cannot be skipped.
struct FieldSink: Equatable {
    var fields = 0
    var records = 0
    var bytes = 0
    var errors = 0

    mutating func take(_ token: CSVToken) {
        switch token {
        case let .field(field): take(field: field)
        case .endOfRecord: records += 1
        case .error: errors += 1
        }
    }

    mutating func take(field: [UInt8]) {
        fields += 1
        bytes += field.count
    }
}

/// Tokenizes `input` with `CSVTokenizer` on a `MealyMachine`, one byte per `send`.
func machineCSV(_ input: [UInt8]) -> FieldSink {
    var machine = MealyMachine(state: CSVTokenizer.State(), reducer: CSVTokenizer(), effectManager: ReplyEffectManager())
    var sink = FieldSink()
    for byte in input {
        for token in machine.send(.byte(byte)) { sink.take(token) }
    }
    for token in machine.send(.endOfInput) { sink.take(token) }
    return sink
}

/// A hand-written RFC 4180 tokenizer loop: same grammar, same per-field `[UInt8]`, no machine.
func handWrittenCSV(_ input: [UInt8], into sink: inout FieldSink) {
    let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ","), lf = UInt8(ascii: "\n"), cr = UInt8(ascii: "\r")
    var field: [UInt8] = []
    var index = 0
    var atRecordStart = true
    while index < input.count {
        var byte = input[index]
        if byte == quote {
            index += 1
            while index < input.count {
                byte = input[index]
                if byte == quote {
                    if index + 1 < input.count && input[index + 1] == quote {
                        field.append(quote)
                        index += 2
                        continue
                    }
                    index += 1
                    break
                }
                field.append(byte)
                index += 1
            }
            byte = index < input.count ? input[index] : comma
        }
        while byte != comma && byte != lf && byte != cr {
            if byte == quote { sink.errors += 1 }
            field.append(byte)
            index += 1
            guard index < input.count else { byte = comma; break }
            byte = input[index]
        }
        atRecordStart = false
        sink.take(field: field)
        field = []
        if byte != comma || index >= input.count {
            sink.records += 1
            atRecordStart = true
            if byte == cr && index + 1 < input.count && input[index + 1] == lf { index += 1 }
        }
        index += 1
    }
    _ = atRecordStart
}

/// Counts fields and records from a `CSVScanner`'s steps, copying nothing.
struct ScanCounter: OutputSink, Equatable {
    var fields = 0, records = 0, bytes = 0

    @inline(__always)
    mutating func receive(_ step: CSVScanStep) {
        if let field = step.field {
            fields &+= 1
            bytes &+= field.range.count
        }
        if step.endsRecord { records &+= 1 }
    }
}

/// Tokenizes `input` with `CSVScanner` on a `MealyMachine`, in bulk, fields as ranges.
func scannedCSV(_ input: [UInt8]) -> ScanCounter {
    var machine = MealyMachine(state: CSVScanner.State(), reducer: CSVScanner(),
                               effectManager: SinkEffectManager<CSVScanner.Action, ScanCounter>(ScanCounter()))
    input.withUnsafeBufferPointer { bytes in
        machine.send(contentsOf: bytes.lazy.map(CSVScanner.Action.byte))
    }
    machine.send(.endOfInput)
    return machine.effectManager.sink
}

/// Makes a `String` of every field as the scanner finds it (what the other parsers do).
struct StringSink: OutputSink {
    let input: UnsafeBufferPointer<UInt8>
    var fields = 0, records = 0, characters = 0

    mutating func receive(_ step: CSVScanStep) {
        if let field = step.field {
            let text = field.needsDecoding
                ? String(decoding: field.bytes(in: input), as: UTF8.self)
                : String(decoding: UnsafeBufferPointer(rebasing: input[field.range]), as: UTF8.self)
            characters &+= text.utf8.count
            fields &+= 1
        }
        if step.endsRecord { records &+= 1 }
    }
}

func scannedCSVStrings(_ input: [UInt8]) -> Int {
    input.withUnsafeBufferPointer { bytes in
        var machine = MealyMachine(state: CSVScanner.State(), reducer: CSVScanner(),
                                   effectManager: SinkEffectManager<CSVScanner.Action, StringSink>(StringSink(input: bytes)))
        machine.send(contentsOf: bytes.lazy.map(CSVScanner.Action.byte))
        machine.send(.endOfInput)
        return machine.effectManager.sink.fields
    }
}

/// yaslab/CSV.swift: every row as `[String]`.
func csvSwiftRows(_ text: String) throws -> Int {
    let reader = try CSVReader(string: text)
    var fields = 0
    while let row = reader.next() { fields &+= row.count }
    return fields
}

/// swiftcsv/SwiftCSV: every row as `[String]`, without the by-column index.
func swiftCSVRows(_ text: String) throws -> Int {
    let csv = try EnumeratedCSV(string: text, delimiter: .comma, loadColumns: false)
    return csv.rows.reduce(0) { $0 &+ $1.count } + csv.header.count
}
