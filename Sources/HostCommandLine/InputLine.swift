import ActomatonHost
import ActomatonPluginContract

/// One line of input to `actomaton-host run` or `serve`, parsed.
///
/// The text form is the action's name and its arguments, separated by spaces; under `serve`
/// the machine's address comes first — a plugin's name, or `plugin/key` for one of its keyed
/// instances, each a machine of its own:
///
///     add 5
///     login "alice"
///     counter add 5          (serve)
///     counter/room-1 add 5   (serve: the instance room-1 of counter)
///     counter/room-1.add 5   (serve: the same)
///     {"action": "place", "args": [1, 2]}
///     {"plugin": "tictactoe", "action": "place", "args": {"row": 1, "column": 2}}
///     {"plugin": "tictactoe/game-7", "action": "place", "args": [1, 2]}
///
/// Integers, decimals (`2.5`, `1e3`), `true` / `false`, and strings in double quotes (with
/// `\"`, `\\`, `\n`, `\t`, `\r` and `\u{1B}` escapes) are the argument forms. Blank lines and lines starting
/// with `#` are skipped; lines starting with `:` are directives (`:sleep 1.5`, `:idle`,
/// `:state`).
///
/// A line holds at most ``maxLength`` bytes of UTF-8 without NUL characters, and JSON nests at
/// most ``JSONParser/maxDepth`` levels: everything past a limit is an ``InputLineError``.
public enum InputLine: Sendable, Hashable {
    /// Nothing to do: blank, or a comment.
    case skip
    /// Send an action.
    case action(plugin: String?, name: String, arguments: Arguments)
    /// Wait this many seconds on the machine's clock.
    case sleep(Duration)
    /// Wait until no effect is running.
    case idle
    /// Print the state of every machine.
    case state

    /// An action's arguments: in order, or by parameter name (JSON objects).
    public enum Arguments: Sendable, Hashable {
        /// In parameter order.
        case positional([PluginValue])
        /// By parameter name.
        case named([String: PluginValue])
    }

    /// The longest line read, in bytes (1 MiB), line break excluded.
    public static let maxLength = 1 << 20

    /// Parses `line`; `namesPlugin` when the text form starts with a plugin name (`serve`).
    /// `limit` is the most bytes it may have: ``maxLength`` for a line of input; a request's
    /// body, which its own limit bounds (`--max-body-size`), passes `Int.max`. Throws an
    /// ``InputLineError`` saying what cannot be read.
    public static func parse(_ line: String, namesPlugin: Bool, limit: Int = maxLength) throws(InputLineError) -> InputLine {
        guard line.utf8.count <= limit else { throw .tooLong(limit: limit) }
        if let offset = line.utf8.firstIndex(of: 0) {
            throw .nulCharacter(offset: line.utf8.distance(from: line.utf8.startIndex, to: offset))
        }
        let text = trimmed(line)
        if text.isEmpty || text.hasPrefix("#") { return .skip }
        if text.hasPrefix(":") { return try directive(text) }
        if text.hasPrefix("{") { return try json(text, namesPlugin: namesPlugin) }

        var scanner = Scanner(Array(text.unicodeScalars))
        guard var first = scanner.word() else { throw .syntax("expected an action name, got \(quoted(text))") }
        var plugin: String?
        if namesPlugin {
            // `plugin action` or `plugin.action`; `plugin/key.action` splits at the last dot,
            // since a key may hold dots and an action's name may not — unless a name follows:
            // `plugin/a.b add 5` is key `a.b` (an argument is never a bare name but `true` or `false`).
            // The dot is found by code point: a combining mark after it must not hide it.
            let scalars = first.unicodeScalars
            let keyed = scalars.contains("/")
            let actionFollows = keyed && scanner.peekWord().map { $0 != "true" && $0 != "false" && ManifestValidator.isValidName($0) } == true
            let dotIndex = actionFollows ? nil : keyed ? scalars.lastIndex(of: ".") : scalars.firstIndex(of: ".")
            if let dot = dotIndex {
                plugin = String(scalars[..<dot])
                first = String(scalars[scalars.index(after: dot)...])
            } else {
                plugin = first
                guard let name = scanner.word() else {
                    throw .syntax("expected an action name after the plugin name '\(PluginLimits.echo(first))'")
                }
                first = name
            }
        }
        var arguments: [PluginValue] = []
        while let value = try scanner.value(position: arguments.count + 1) { arguments.append(value) }
        return .action(plugin: plugin, name: first, arguments: .positional(arguments))
    }

    private static func directive(_ text: String) throws(InputLineError) -> InputLine {
        let parts = text.dropFirst().split(whereSeparator: { $0 == " " || $0 == "\t" })
        switch parts.first {
        case "sleep":
            guard parts.count == 2, let seconds = Double(parts[1]), seconds >= 0, seconds < 86_400 else {
                throw .syntax("`:sleep` takes a number of seconds from 0 to less than 86400 (a day), as in `:sleep 1.5`")
            }
            return .sleep(.milliseconds(Int64((seconds * 1000).rounded())))
        case "idle" where parts.count == 1:
            return .idle
        case "state" where parts.count == 1:
            return .state
        default:
            throw .syntax("unknown directive \(quoted(text)) (known: `:sleep SECONDS`, `:idle`, `:state`)")
        }
    }

    private static func json(_ text: String, namesPlugin: Bool) throws(InputLineError) -> InputLine {
        let members: [(key: String, value: JSONValue)]
        do {
            guard case let .object(object) = try JSONParser.parse(text, keepingFractions: true) else {
                throw InputLineError.jsonShape("a JSON line must be an object, as in {\"action\": \"add\", \"args\": [5]}")
            }
            members = object
        } catch let error as JSONParser.Error {
            throw .json(error)
        } catch {
            throw error as! InputLineError
        }
        var object: [String: JSONValue] = [:]
        for (key, value) in members {
            guard ["plugin", "action", "args"].contains(key) else {
                throw .jsonShape("unknown JSON key \(quoted(key)) (known: \"plugin\", \"action\", \"args\")")
            }
            object[key] = value
        }
        guard case let .string(name)? = object["action"] else { throw .jsonShape("the JSON line has no \"action\" string") }
        var plugin: String?
        switch object["plugin"] {
        case nil: if namesPlugin { throw .jsonShape("the JSON line has no \"plugin\" string") }
        case let .string(name)?: plugin = name
        default: throw .jsonShape("\"plugin\" must be a string")
        }
        switch object["args"] {
        case nil:
            return .action(plugin: plugin, name: name, arguments: .positional([]))
        case let .array(values)?:
            var positional: [PluginValue] = []
            for (position, value) in values.enumerated() {
                positional.append(try pluginValue(value, what: "argument \(position + 1)"))
            }
            return .action(plugin: plugin, name: name, arguments: .positional(positional))
        case let .object(values)?:
            var named: [String: PluginValue] = [:]
            for (key, value) in values { named[key] = try pluginValue(value, what: "argument \(quoted(key))") }
            return .action(plugin: plugin, name: name, arguments: .named(named))
        default:
            throw .jsonShape("\"args\" must be an array or an object")
        }
    }

    /// An argument from JSON: a number, a boolean or a string.
    private static func pluginValue(_ value: JSONValue, what: String) throws(InputLineError) -> PluginValue {
        switch value {
        case let .bool(value): return .bool(value)
        case let .int(value): return .int(value)
        case let .uint(value): return .uint(value)
        case let .float(value): return .float(value)
        case let .string(value): return .string(value)
        case .null, .array, .object: throw .jsonShape("\(what) must be a number, a boolean or a string, not \(value.kind)")
        }
    }

    /// `text` without the spaces and tabs around it.
    private static func trimmed(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != " " && $0 != "\t" }),
              let last = scalars.lastIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        return String(scalars[first...last])
    }
}

/// Reads the text form, one token at a time.
private struct Scanner {
    let scalars: [Unicode.Scalar]
    var index = 0

    init(_ scalars: [Unicode.Scalar]) {
        self.scalars = scalars
    }

    mutating func skipSpaces() {
        while index < scalars.count, scalars[index] == " " || scalars[index] == "\t" { index += 1 }
    }

    /// The next space-separated token, or `nil` at the end.
    mutating func word() -> String? {
        skipSpaces()
        guard index < scalars.count else { return nil }
        var word = String.UnicodeScalarView()
        while index < scalars.count, scalars[index] != " ", scalars[index] != "\t" {
            word.append(scalars[index])
            index += 1
        }
        return String(word)
    }

    /// The next space-separated token, left to be read; `nil` at the end.
    func peekWord() -> String? {
        var copy = self
        return copy.word()
    }

    /// The next argument, or `nil` at the end.
    mutating func value(position: Int) throws(InputLineError) -> PluginValue? {
        skipSpaces()
        guard index < scalars.count else { return nil }
        if scalars[index] == "\"" { return .string(try string(position: position)) }
        guard let word = word() else { return nil }
        if word == "true" { return .bool(true) }
        if word == "false" { return .bool(false) }
        if let n = Int64(word) { return .int(n) }
        if let n = UInt64(word) { return .uint(n) }
        let isNumber = word.unicodeScalars.allSatisfy { "0123456789+-.eE".unicodeScalars.contains($0) }
            && word.unicodeScalars.contains { "0123456789".unicodeScalars.contains($0) }
        // Only an integer literal (`-?[0-9]+`) can be out of range; `1-2` or `5+` is not a number.
        let digits = word.unicodeScalars.drop { $0 == "-" || $0 == "+" }
        let isInteger = word.unicodeScalars.count - digits.count <= 1 && !digits.isEmpty
            && digits.allSatisfy { "0123456789".unicodeScalars.contains($0) }
        if isInteger {
            throw .syntax("argument \(position), \(PluginLimits.echo(word)), is out of range of every integer type")
        }
        if isNumber, let x = Double(word) {
            guard x.isFinite else {
                throw .syntax("argument \(position), \(PluginLimits.echo(word)), is out of range: decimals are within ±1.8e308")
            }
            // `5.0` and `5e0` are the integer they write, exactly (a double past 2^53 may not be).
            switch DecimalText.read(word.utf8) {
            case let .int(integer): return .int(integer)
            case let .uint(integer): return .uint(integer)
            case .zero, .beyondIntegers: return .float(x)
            case .fraction:
                // `2.0000000000000001` and `1e-400`: an integer parameter would take 2 and 0.
                guard !DecimalText.losesTheFraction(x) else {
                    throw .syntax("argument \(position), \(PluginLimits.echo(word)), has a fraction that a double cannot keep: it would be read as \(x)")
                }
                return .float(x)
            }
        }
        throw .syntax("cannot read argument \(position), \(PluginLimits.echo(word)): write strings in double quotes, as in \(quoted(word))")
    }

    /// A double-quoted string, with escapes.
    mutating func string(position: Int) throws(InputLineError) -> String {
        index += 1 // the opening quote
        var text = String.UnicodeScalarView()
        while index < scalars.count {
            let scalar = scalars[index]
            index += 1
            switch scalar {
            case "\"":
                if index < scalars.count, scalars[index] != " ", scalars[index] != "\t" {
                    throw .syntax("argument \(position): expected a space after the closing quote")
                }
                return String(text)
            case "\\":
                guard index < scalars.count else { break }
                let escaped = scalars[index]
                index += 1
                switch escaped {
                case "n": text.append("\n")
                case "t": text.append("\t")
                case "r": text.append("\r")
                case "\"", "\\": text.append(escaped)
                case "u": text.append(try unicodeEscape(position: position))
                default: throw .syntax("argument \(position): unknown escape \\\(escaped) (known: \\\" \\\\ \\n \\t \\r \\u{HEX})")
                }
            default:
                text.append(scalar)
            }
        }
        throw .syntax("argument \(position): the string has no closing quote")
    }
}

extension Scanner {
    /// The `{HEX}` after `\u` in a string: one Unicode scalar by its code, as
    /// `PluginValue.quoted` writes control characters. Each way it can be wrong has its own
    /// message: no braces, empty braces, not hex, a surrogate, past U+10FFFF, or NUL (which a
    /// line never carries: see ``InputLineError/nulCharacter(offset:)``).
    mutating func unicodeEscape(position: Int) throws(InputLineError) -> Unicode.Scalar {
        let example = #"as in \u{1B}"#
        guard index < scalars.count, scalars[index] == "{" else {
            throw .syntax("argument \(position): \\u takes a hex code in braces, \(example)")
        }
        // Up to the closing brace, at most 8 characters on: no code is longer.
        var close = index + 1
        while close < scalars.count, scalars[close] != "}", scalars[close] != "\"", close - index <= 8 { close += 1 }
        guard close < scalars.count, scalars[close] == "}" else {
            throw .syntax("argument \(position): \\u{ needs a closing brace after at most 8 hex digits, \(example)")
        }
        let digits = String(String.UnicodeScalarView(scalars[(index + 1)..<close]))
        let written = "\\u{\(digits)}"
        guard !digits.isEmpty else {
            throw .syntax("argument \(position): \(written) is empty: write the character's hex code in the braces, \(example)")
        }
        guard let code = UInt32(digits, radix: 16), digits.unicodeScalars.allSatisfy(\.properties.isASCIIHexDigit) else {
            throw .syntax("argument \(position): \(written) is not a hex code (digits 0-9 and A-F), \(example)")
        }
        guard code <= 0x10FFFF else {
            throw .syntax("argument \(position): \(written) is past U+10FFFF, the last Unicode code point")
        }
        guard let scalar = Unicode.Scalar(code) else {
            throw .syntax("argument \(position): \(written) is a UTF-16 surrogate (U+D800 to U+DFFF), not a Unicode scalar: write the character's own code")
        }
        guard code != 0 else {
            throw .syntax("argument \(position): \(written) is NUL, which an input line cannot carry")
        }
        index = close + 1
        return scalar
    }
}

/// `text` in double quotes, escaped as an input line writes a string: at most
/// ``PluginLimits/maxEchoedActionBytes`` of it (whole characters), then how many bytes more
/// there were, so that a message quoting what came stays short.
func quoted(_ text: String) -> String {
    let kept = text.prefix(utf8Bytes: PluginLimits.maxEchoedActionBytes)
    guard kept.endIndex < text.endIndex else { return PluginValue.string(text).description }
    return PluginValue.string(String(kept)).description + " … (\(text.utf8.count - kept.utf8.count) more bytes)"
}

