import ActomatonCore
import ActomatonPluginKit
import CSVExample
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The core's streaming CSV tokenizer, unchanged, exported as a plugin: bytes (or whole
// strings) in, records collected in the state, syntax errors listed with line and column.

enum SheetAction: Sendable {
    /// One byte of CSV.
    case byte(UInt8)
    /// A string of CSV, fed byte by byte.
    case feed(String)
    /// The end of the input: ends the last record.
    case end
}

/// The tokenizer's state and what it produced so far.
struct Sheet: Codable, Sendable, CustomStringConvertible {
    var records: [[String]] = []
    var record: [String] = []
    var errors: [String] = []
    var tokenizer = TokenizerState()

    /// `CSVTokenizer.State` in a Codable form.
    struct TokenizerState: Codable, Sendable {
        var phase: UInt8 = CSVTokenizer.Phase.recordStart.rawValue
        var field: [UInt8] = []
        var line = 1
        var column = 0
        var lineEnded = false
        var lastByteWasCarriageReturn = false

        var core: CSVTokenizer.State {
            get {
                var state = CSVTokenizer.State()
                state.phase = CSVTokenizer.Phase(rawValue: phase) ?? .recordStart
                state.field = field
                state.line = line
                state.column = column
                state.lineEnded = lineEnded
                state.lastByteWasCarriageReturn = lastByteWasCarriageReturn
                return state
            }
            set {
                phase = newValue.phase.rawValue
                field = newValue.field
                line = newValue.line
                column = newValue.column
                lineEnded = newValue.lineEnded
                lastByteWasCarriageReturn = newValue.lastByteWasCarriageReturn
            }
        }
    }

    /// What `describe` shows: the records and errors, as JSON, without the tokenizer's insides.
    var description: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        struct View: Encodable {
            let records: [[String]]
            let unfinished: [String]
            let errors: [String]
        }
        let view = View(records: records, unfinished: record, errors: errors)
        return String(decoding: (try? encoder.encode(view)) ?? Data(), as: UTF8.self)
    }

    mutating func take(_ tokens: [CSVToken]) {
        for token in tokens {
            switch token {
            case let .field(bytes): record.append(String(decoding: bytes, as: UTF8.self))
            case .endOfRecord: records.append(record); record = []
            case let .error(error): errors.append("\(error.kind) at line \(error.line), column \(error.column)")
            }
        }
    }
}

let tokenizer = CSVTokenizer()

let sheetReducer = MealyReducer<SheetAction, Sheet, Void, PluginEffect<SheetAction>> { action, sheet, _ in
    var state = sheet.tokenizer.core
    switch action {
    case let .byte(byte):
        sheet.take(tokenizer.reduce(.byte(byte), into: &state, environment: ()))
    case let .feed(text):
        for byte in text.utf8 { sheet.take(tokenizer.reduce(.byte(byte), into: &state, environment: ())) }
    case .end:
        sheet.take(tokenizer.reduce(.endOfInput, into: &state, environment: ()))
    }
    sheet.tokenizer.core = state
    return .empty
}

let csvPlugin = PluginExport(
    name: "csv",
    version: "1.0.0",
    summary: "The streaming RFC 4180 tokenizer from CSVExample (Swift, ActomatonPluginKit)",
    reducer: sheetReducer,
    initialState: Sheet(),
    actions: [
        .action("byte", "value") { (value: UInt8) in .byte(value) },
        .action("feed", "text") { (text: String) in .feed(text) },
        .action("end") { .end },
    ]
)

/// The plugin's entry symbol.
@_cdecl("actomaton_plugin_entry")
public func actomatonPluginEntry(_ hostABIVersion: UInt32) -> UnsafeRawPointer? {
    csvPlugin.manifest
}
