import ActomatonCore
import ActomatonPluginCore
import CSVExample

// The plugin's reducer and state, shared by csv.so (CSVTokenizerPlugin.swift) and the csv
// wasm plugin (wasm/plugins/CSVPlugin.swift): the core's streaming CSV tokenizer, unchanged,
// with records collected in the state and syntax errors listed with line and column.

/// The plugin's actions.
public enum SheetAction: Sendable {
    /// One byte of CSV.
    case byte(UInt8)
    /// A string of CSV, fed byte by byte.
    case feed(String)
    /// The end of the input: ends the last record.
    case end

    /// The plugin's vocabulary, for both kits.
    public static let vocabulary: [PluginActionEntry<SheetAction>] = [
        .action("byte", "value") { (value: UInt8) in .byte(value) },
        .action("feed", "text") { (text: String) in .feed(text) },
        .action("end") { .end },
    ]

    /// The vocabulary entry and arguments of the action (both kits' `requests` mapping).
    public var call: PluginCall {
        switch self {
        case let .byte(value): PluginCall("byte", .uint(UInt64(value)))
        case let .feed(text): PluginCall("feed", .string(text))
        case .end: PluginCall("end")
        }
    }
}

/// The tokenizer's state and what it produced so far.
public struct Sheet: Sendable, CustomStringConvertible {
    public var records: [[String]] = []
    public var record: [String] = []
    public var errors: [String] = []
    public var tokenizer = CSVTokenizer.State()

    public init() {}

    /// What `describe` shows: the records and errors, as JSON, without the tokenizer's insides.
    public var description: String {
        JSONText.object([
            ("errors", JSONText.array(errors.map(JSONText.string))),
            ("records", JSONText.array(records.map { JSONText.array($0.map(JSONText.string)) })),
            ("unfinished", JSONText.array(record.map(JSONText.string))),
        ])
    }

    mutating func take(_ tokens: [CSVToken]) {
        for token in tokens {
            switch token {
            case let .field(bytes): record.append(String(decoding: bytes, as: UTF8.self))
            case .endOfRecord: records.append(record); record = []
            case let .error(error): errors.append("\(error.kind.name) at line \(error.line), column \(error.column)")
            }
        }
    }
}

extension Sheet: PluginSnapshotCodable {
    public func encode(to writer: inout PluginSnapshotWriter) {
        writer.write(UInt8(1))
        writer.write(UInt32(truncatingIfNeeded: records.count))
        for record in records { writer.write(record) }
        writer.write(record)
        writer.write(errors)
        writer.write(tokenizer.phase.rawValue)
        writer.write(tokenizer.field)
        writer.write(Int64(tokenizer.line))
        writer.write(Int64(tokenizer.column))
        writer.write(tokenizer.lineEnded)
        writer.write(tokenizer.lastByteWasCarriageReturn)
    }

    public init(from reader: inout PluginSnapshotReader) throws(PluginSnapshotError) {
        guard try reader.read(UInt8.self) == 1 else { throw PluginSnapshotError("not a csv snapshot (unknown version)") }
        let count = Int(try reader.read(UInt32.self))
        guard count <= 1 << 20 else { throw PluginSnapshotError("the snapshot holds too many records") }
        for _ in 0..<count { records.append(try reader.read([String].self)) }
        record = try reader.read([String].self)
        errors = try reader.read([String].self)
        guard let phase = CSVTokenizer.Phase(rawValue: try reader.read(UInt8.self)) else {
            throw PluginSnapshotError("the snapshot holds an unknown tokenizer phase")
        }
        tokenizer.phase = phase
        tokenizer.field = try reader.read([UInt8].self)
        tokenizer.line = Int(try reader.read(Int64.self))
        tokenizer.column = Int(try reader.read(Int64.self))
        tokenizer.lineEnded = try reader.read(Bool.self)
        tokenizer.lastByteWasCarriageReturn = try reader.read(Bool.self)
    }
}

/// The tokenizer that every sheet runs.
let sheetTokenizer = CSVTokenizer()

/// The plugin's reducer.
public let sheetReducer = MealyReducer<SheetAction, Sheet, Void, PluginEffect<SheetAction>> { action, sheet, _ in
    switch action {
    case let .byte(byte):
        sheet.take(sheetTokenizer.reduce(.byte(byte), into: &sheet.tokenizer, environment: ()))
    case let .feed(text):
        for byte in text.utf8 { sheet.take(sheetTokenizer.reduce(.byte(byte), into: &sheet.tokenizer, environment: ())) }
    case .end:
        sheet.take(sheetTokenizer.reduce(.endOfInput, into: &sheet.tokenizer, environment: ()))
    }
    return .empty
}
