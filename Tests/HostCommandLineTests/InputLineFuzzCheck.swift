// The `input-line` fuzz check: `make fuzz` runs it under libFuzzer
// (Tests/Fuzz/Harnesses/InputLineFuzzEntry.swift), and `InputLineFuzzReplayTests` replays every
// file of Tests/Fuzz/Corpus/input-line with it.
import ActomatonPluginContract
import HostCommandLine

/// A rule of the input-line or JSON parser that one input breaks.
struct InputLineFuzzFailure: Error, CustomStringConvertible {
    /// Which rule, with the input.
    var description: String
}

/// Feeds `bytes` (decoded as UTF-8, bad bytes repaired) to ``JSONParser`` and to
/// ``InputLine/parse(_:namesPlugin:)`` both ways, and checks what they return; throws where a
/// rule is broken. A thrown parse error is fine: it is the parser refusing the text.
///
/// The rules: JSON that parses is at most ``JSONParser/maxDepth`` deep, and reads back the same
/// once written out; nested to the limit it still parses, one level deeper it is
/// ``JSONParser/Error/Reason/tooDeep(limit:)``; error offsets lie within the text. An action line
/// reads back the same once written out as JSON, and a text-form one also once written out as
/// text; under `serve` it names a plugin; a sleep is within a day.
func fuzzInputLine(_ bytes: [UInt8]) throws(InputLineFuzzFailure) {
    let text = String(decoding: bytes, as: UTF8.self)
    try checkJSON(text)
    try checkLine(text, namesPlugin: false)
    try checkLine(text, namesPlugin: true)
}

private func failure(_ what: String, _ text: String) -> InputLineFuzzFailure {
    InputLineFuzzFailure(description: "\(what); input \(String(reflecting: text))")
}

private func checkJSON(_ text: String) throws(InputLineFuzzFailure) {
    let value: JSONValue
    do {
        value = try JSONParser.parse(text)
    } catch {
        guard (0...text.utf8.count).contains(error.offset) else {
            throw failure("JSON error offset \(error.offset) lies outside the text (\(text.utf8.count) bytes)", text)
        }
        _ = error.description
        return
    }
    let depth = value.nestingDepth
    guard depth <= JSONParser.maxDepth else { throw failure("JSON nested \(depth) levels was accepted", text) }

    let written = JSONWriter.write(value)
    guard let reread = try? JSONParser.parse(written), reread == value else {
        throw failure("JSON written out as \(String(reflecting: written)) does not read back the same", text)
    }

    // Wrapped in arrays up to the limit, the value still parses; one level more is too deep.
    let room = JSONParser.maxDepth - depth
    let atLimit = String(repeating: "[", count: room) + written + String(repeating: "]", count: room)
    var wrapped = value
    for _ in 0..<room { wrapped = .array([wrapped]) }
    guard let parsed = try? JSONParser.parse(atLimit), parsed == wrapped else {
        throw failure("JSON nested exactly \(JSONParser.maxDepth) levels deep was refused or read wrong", text)
    }
    let deeper: JSONParser.Error?
    do {
        _ = try JSONParser.parse("[" + atLimit + "]")
        deeper = nil
    } catch {
        deeper = error
    }
    guard let deeper else { throw failure("JSON nested \(JSONParser.maxDepth + 1) levels deep was accepted", text) }
    guard deeper.reason == .tooDeep(limit: JSONParser.maxDepth) else {
        throw failure("JSON nested \(JSONParser.maxDepth + 1) levels deep was refused as \(deeper), not as too deep", text)
    }
}

private func checkLine(_ text: String, namesPlugin: Bool) throws(InputLineFuzzFailure) {
    let line: InputLine
    do {
        line = try InputLine.parse(text, namesPlugin: namesPlugin)
    } catch {
        _ = error.description
        return
    }
    switch line {
    case .skip, .idle, .state:
        return
    case let .sleep(duration):
        guard duration >= .zero, duration <= .seconds(86_400) else {
            throw failure(":sleep read as \(duration), outside 0...86400 seconds", text)
        }
    case let .action(plugin, name, arguments):
        if namesPlugin, plugin == nil { throw failure("a serve line read as an action of no plugin", text) }
        let json = JSONWriter.write(line)
        guard (try? InputLine.parse(json, namesPlugin: namesPlugin)) == line else {
            throw failure("\(line) written out as JSON, \(String(reflecting: json)), does not read back the same", text)
        }
        if let written = textForm(plugin: plugin, name: name, arguments: arguments, of: text) {
            guard (try? InputLine.parse(written, namesPlugin: namesPlugin)) == line else {
                throw failure("\(line) written out as text, \(String(reflecting: written)), does not read back the same", text)
            }
        }
    }
}

/// The text form of an action read from the text form of `line`: `[plugin] name arg…`, each
/// argument as ``PluginValue/description`` writes it; `nil` when `line` is JSON, or when an
/// argument is a string with a control character other than `\n`, `\r` and `\t` (the text form
/// has no escape for those).
private func textForm(plugin: String?, name: String, arguments: InputLine.Arguments, of line: String) -> String? {
    guard line.unicodeScalars.first(where: { $0 != " " && $0 != "\t" }) != "{",
          case let .positional(values) = arguments else { return nil }
    for case let .string(string) in values {
        if string.unicodeScalars.contains(where: { $0.value < 0x20 && !["\n", "\r", "\t"].contains($0) }) { return nil }
    }
    // `plugin action`; `plugin.action` only when one is empty, as the dot is found by Character
    // (a combining mark after it would join it).
    let words = switch plugin {
    case nil: name
    case let plugin? where plugin.isEmpty || name.isEmpty: plugin + "." + name
    case let plugin?: plugin + " " + name
    }
    return words + values.map { " \($0)" }.joined()
}

/// Writes JSON values and action lines out as JSON text, for the round trips.
private enum JSONWriter {
    static func write(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case let .bool(value): "\(value)"
        case let .int(value): "\(value)"
        case let .uint(value): "\(value)"
        case let .float(value): "\(value)" // Swift writes a finite Double with a "." or an "e"
        case let .string(value): string(value)
        case let .array(values): "[" + values.map(write).joined(separator: ",") + "]"
        case let .object(members): "{" + members.map { string($0.key) + ":" + write($0.value) }.joined(separator: ",") + "}"
        }
    }

    static func write(_ line: InputLine) -> String {
        guard case let .action(plugin, name, arguments) = line else { return "" }
        var members: [(key: String, value: JSONValue)] = []
        if let plugin { members.append(("plugin", .string(plugin))) }
        members.append(("action", .string(name)))
        switch arguments {
        case let .positional(values): members.append(("args", .array(values.map(json))))
        case let .named(values): members.append(("args", .object(values.map { ($0.key, json($0.value)) })))
        }
        return write(.object(members))
    }

    private static func json(_ value: PluginValue) -> JSONValue {
        switch value {
        case let .bool(value): .bool(value)
        case let .int(value): .int(value)
        case let .uint(value): .uint(value)
        case let .float(value): .float(value)
        case let .string(value): .string(value)
        }
    }

    private static func string(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

extension JSONValue {
    /// How deep arrays and objects nest in the value: 0 for a number, 1 for `[]`.
    fileprivate var nestingDepth: Int {
        switch self {
        case .null, .bool, .int, .uint, .float, .string: 0
        case let .array(values): 1 + (values.map(\.nestingDepth).max() ?? 0)
        case let .object(members): 1 + (members.map(\.value.nestingDepth).max() ?? 0)
        }
    }
}
