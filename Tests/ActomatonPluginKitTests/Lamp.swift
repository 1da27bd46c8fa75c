import ActomatonCore
import ActomatonPluginCore

// A vocabulary declared once, for both kits: this file imports only ActomatonCore and
// ActomatonPluginCore, so it builds natively in these tests (PluginExport, VocabularyTests.swift)
// and, with Embedded Swift, into the wasm fixture .build/wasm/fixtures/lamp.wasm
// (Tests/ActomatonHostTests/Fixtures/wasm/LampPlugin.swift, built by wasm/build.sh, run by
// the host's LampWasmPluginTests). The Writing a plugin article shows its parts.

enum LampAction: Sendable {
    case toggle
    case dim(level: UInt8)
    case label(text: String, size: Int32)
    case paint(red: UInt8, green: UInt8, blue: UInt8, name: String)
    case blink
}

let lampVocabulary: [PluginActionEntry<LampAction>] = [
    .action("toggle") { .toggle },
    .action("dim", "level") { (level: UInt8) in .dim(level: level) },
    .action("label", "text", "size") { (text: String, size: Int32) in .label(text: text, size: size) },
    .action("paint", "red", "green", "blue", "name") { (red: UInt8, green: UInt8, blue: UInt8, name: String) in
        .paint(red: red, green: green, blue: blue, name: name)
    },
    .action("blink") { .blink },
]

extension LampAction {
    /// The vocabulary entry and arguments of the action (both kits' `requests` mapping).
    var call: PluginCall {
        switch self {
        case .toggle: PluginCall("toggle")
        case let .dim(level): PluginCall("dim", .uint(UInt64(level)))
        case let .label(text, size): PluginCall("label", .string(text), .int(Int64(size)))
        case let .paint(red, green, blue, name):
            PluginCall("paint", .uint(UInt64(red)), .uint(UInt64(green)), .uint(UInt64(blue)), .string(name))
        case .blink: PluginCall("blink")
        }
    }
}

struct Lamp: Sendable, Equatable, CustomStringConvertible {
    var on = false
    var level: UInt8 = 0
    var text = ""
    var size: Int32 = 0
    var color = "000000"

    var description: String {
        JSONText.object([
            ("color", JSONText.string(color)), ("level", "\(level)"), ("on", "\(on)"),
            ("size", "\(size)"), ("text", JSONText.string(text)),
        ])
    }
}

extension Lamp: PluginSnapshotCodable {
    func encode(to writer: inout PluginSnapshotWriter) {
        writer.write(on)
        writer.write(level)
        writer.write(text)
        writer.write(size)
        writer.write(color)
    }

    init(from reader: inout PluginSnapshotReader) throws(PluginSnapshotError) {
        on = try reader.read(Bool.self)
        level = try reader.read(UInt8.self)
        text = try reader.read(String.self, limit: 4096)
        size = try reader.read(Int32.self)
        color = try reader.read(String.self, limit: 64)
    }
}

/// Two hex digits of `value`.
func hex(_ value: UInt8) -> String {
    let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"]
    return String(digits[Int(value >> 4)]) + String(digits[Int(value & 15)])
}

let lampReducer = MealyReducer<LampAction, Lamp, Void, PluginEffect<LampAction>> { action, lamp, _ in
    switch action {
    case .toggle:
        lamp.on.toggle()
        return .empty
    case let .dim(level):
        guard level <= 100 else { return .fail("the level is a percentage, 0...100") }
        lamp.level = level
        return .empty
    case let .label(text, size):
        guard !text.isEmpty else { return .fail("the label must not be empty") }
        lamp.text = text
        lamp.size = size
        return .empty
    case let .paint(red, green, blue, name):
        lamp.color = hex(red) + hex(green) + hex(blue)
        lamp.text = name
        return .empty
    case .blink:
        // Requests two of its own actions, through the mapping: off at once, back after a second.
        return .next(.toggle) + .after(.seconds(1), send: .toggle, id: "blink")
    }
}
