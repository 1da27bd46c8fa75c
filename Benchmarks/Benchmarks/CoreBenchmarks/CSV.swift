import ActomatonCore
import CSVExample

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
