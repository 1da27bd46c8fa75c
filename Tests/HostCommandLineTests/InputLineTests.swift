import ActomatonPluginContract
import HostCommandLine
import Testing

@Suite("Input lines: the text and JSON forms, and their limits")
struct InputLineTests {
    @Test func textForm() throws {
        #expect(try InputLine.parse(#"  login "alice"  "#, namesPlugin: false) == .action(plugin: nil, name: "login", arguments: .positional([.string("alice")])))
        #expect(try InputLine.parse(#"add_later -3 2.5 true "a \"b\"\n" 18446744073709551615"#, namesPlugin: false)
            == .action(plugin: nil, name: "add_later", arguments: .positional([.int(-3), .float(2.5), .bool(true), .string("a \"b\"\n"), .uint(.max)])))
        #expect(try InputLine.parse("counter add 5", namesPlugin: true) == .action(plugin: "counter", name: "add", arguments: .positional([.int(5)])))
        #expect(try InputLine.parse("counter.add 5", namesPlugin: true) == .action(plugin: "counter", name: "add", arguments: .positional([.int(5)])))
        #expect(try InputLine.parse("\tcounter\tadd\t5\t", namesPlugin: true) == .action(plugin: "counter", name: "add", arguments: .positional([.int(5)])))
        // A keyed instance: its address in place of the plugin's name; with a dot, the last
        // one ends the address (a key may hold dots, an action's name may not).
        #expect(try InputLine.parse("counter/room-1 add 5", namesPlugin: true) == .action(plugin: "counter/room-1", name: "add", arguments: .positional([.int(5)])))
        #expect(try InputLine.parse("counter/v1.2.add 5", namesPlugin: true) == .action(plugin: "counter/v1.2", name: "add", arguments: .positional([.int(5)])))
        // Regression: with a name after it, the whole first word is the address (it split at the dot).
        #expect(try InputLine.parse("counter/a.b add 5", namesPlugin: true) == .action(plugin: "counter/a.b", name: "add", arguments: .positional([.int(5)])))
        #expect(try InputLine.parse("counter/a.b increment", namesPlugin: true) == .action(plugin: "counter/a.b", name: "increment", arguments: .positional([])))
        #expect(try InputLine.parse("flags/a.set true", namesPlugin: true) == .action(plugin: "flags/a", name: "set", arguments: .positional([.bool(true)])))
        #expect(try InputLine.parse("counter/a.b.add", namesPlugin: true) == .action(plugin: "counter/a.b", name: "add", arguments: .positional([])))
        #expect(try InputLine.parse("counter.add 5", namesPlugin: true) == .action(plugin: "counter", name: "add", arguments: .positional([.int(5)])))
        #expect(try InputLine.parse("# a comment", namesPlugin: false) == .skip)
        #expect(try InputLine.parse("", namesPlugin: false) == .skip)
        #expect(try InputLine.parse(" \t ", namesPlugin: false) == .skip)
        #expect(try InputLine.parse(":sleep 1.5", namesPlugin: false) == .sleep(.milliseconds(1500)))
        #expect(try InputLine.parse(":sleep\t2", namesPlugin: false) == .sleep(.seconds(2)))
        // The limit is said (audit: `:sleep 9223372037` got only "takes a number of seconds").
        #expect(try InputLine.parse(":sleep 86399.999", namesPlugin: false) == .sleep(.milliseconds(86_399_999)))
        for past in ["86400", "9223372037", "-1", "nan"] {
            let error = #expect(throws: InputLineError.self) { try InputLine.parse(":sleep \(past)", namesPlugin: false) }
            #expect(error?.description.contains("from 0 to less than 86400 (a day)") == true, "\(past): \(String(describing: error))")
        }
        #expect(try InputLine.parse(":idle", namesPlugin: false) == .idle)
        #expect(try InputLine.parse(":state", namesPlugin: false) == .state)
    }

    @Test func jsonForm() throws {
        #expect(try InputLine.parse(#"{"action": "place", "args": [1, 2]}"#, namesPlugin: false)
            == .action(plugin: nil, name: "place", arguments: .positional([.int(1), .int(2)])))
        #expect(try InputLine.parse(#"{"plugin": "t", "action": "place", "args": {"row": 1, "column": 2.5}}"#, namesPlugin: true)
            == .action(plugin: "t", name: "place", arguments: .named(["row": .int(1), "column": .float(2.5)])))
        #expect(try InputLine.parse(#"{"action": "login", "args": ["caf\u00e9 \ud83d\ude00", 18446744073709551615, -9223372036854775808, false]}"#, namesPlugin: false)
            == .action(plugin: nil, name: "login", arguments: .positional([.string("café 😀"), .uint(.max), .int(.min), .bool(false)])))
        #expect(throws: InputLineError.jsonShape(#"the JSON line has no "plugin" string"#)) {
            try InputLine.parse(#"{"action": "add"}"#, namesPlugin: true)
        }
        #expect(throws: InputLineError.jsonShape(#"unknown JSON key "arguments" (known: "plugin", "action", "args")"#)) {
            try InputLine.parse(#"{"action": "add", "arguments": [1]}"#, namesPlugin: false)
        }
        #expect(throws: InputLineError.jsonShape(#"argument 1 must be a number, a boolean or a string, not an array"#)) {
            try InputLine.parse(#"{"action": "add", "args": [[1]]}"#, namesPlugin: false)
        }
        #expect(throws: InputLineError.jsonShape(#"argument "x" must be a number, a boolean or a string, not null"#)) {
            try InputLine.parse(#"{"action": "add", "args": {"x": null}}"#, namesPlugin: false)
        }
    }

    /// An out-of-range JSON number says so, instead of a decoder's "expected Dictionary" message.
    @Test func jsonNumberOutOfRange() {
        let error = #expect(throws: InputLineError.self) {
            try InputLine.parse(#"{"action": "add", "args": [99999999999999999999]}"#, namesPlugin: false)
        }
        #expect(error?.description == "not valid JSON: the number 99999999999999999999 is out of range (integers from -9223372036854775808 to 18446744073709551615, decimals within ±1.8e308) (column 28)")
        #expect(throws: InputLineError.json(.init(reason: .numberOutOfRange("1e400"), offset: 27))) {
            try InputLine.parse(#"{"action": "add", "args": [1e400]}"#, namesPlugin: false)
        }
    }

    /// What `PluginValue.quoted` writes, an input line reads back: control characters too.
    @Test func quotedStringsReadBack() throws {
        let text = "a\u{1B}[2J\u{7}b\t\"c\"\\"
        #expect(try InputLine.parse("say " + PluginValue.quoted(text), namesPlugin: false)
            == .action(plugin: nil, name: "say", arguments: .positional([.string(text)])))
    }

    /// Each way a `\u{…}` escape can be wrong gets its own message.
    @Test(arguments: [
        (#"\u{0}"#, #"\u{0} is NUL, which an input line cannot carry"#),
        (#"\u{000000}"#, #"\u{000000} is NUL, which an input line cannot carry"#),
        (#"\u{D800}"#, #"\u{D800} is a UTF-16 surrogate (U+D800 to U+DFFF), not a Unicode scalar: write the character's own code"#),
        (#"\u{dfff}"#, #"\u{dfff} is a UTF-16 surrogate (U+D800 to U+DFFF), not a Unicode scalar: write the character's own code"#),
        (#"\u{110000}"#, #"\u{110000} is past U+10FFFF, the last Unicode code point"#),
        (#"\u{FFFFFFFF}"#, #"\u{FFFFFFFF} is past U+10FFFF, the last Unicode code point"#),
        (#"\u{}"#, #"\u{} is empty: write the character's hex code in the braces, as in \u{1B}"#),
        (#"\u{1G}"#, #"\u{1G} is not a hex code (digits 0-9 and A-F), as in \u{1B}"#),
        (#"\u{+1}"#, #"\u{+1} is not a hex code (digits 0-9 and A-F), as in \u{1B}"#),
        (#"\u{123456789}"#, #"\u{ needs a closing brace after at most 8 hex digits, as in \u{1B}"#),
        (#"\u{41"#, #"\u{ needs a closing brace after at most 8 hex digits, as in \u{1B}"#),
        (#"\u41"#, #"\u takes a hex code in braces, as in \u{1B}"#),
    ])
    func eachBadUnicodeEscapeSaysWhatIsWrong(escape: String, message: String) {
        #expect(throws: InputLineError.syntax("argument 1: " + message)) {
            try InputLine.parse(#"say ""# + escape + #"""#, namesPlugin: false)
        }
    }

    @Test func goodUnicodeEscapesRead() throws {
        for (escape, scalar) in [(#"\u{1B}"#, "\u{1B}"), (#"\u{10FFFF}"#, "\u{10FFFF}"), (#"\u{00000041}"#, "A"), (#"\u{e9}"#, "é")] {
            #expect(try InputLine.parse(#"say ""# + escape + #"""#, namesPlugin: false)
                == .action(plugin: nil, name: "say", arguments: .positional([.string(scalar)])))
        }
    }

    /// Found by fuzzing: a combining mark after the dot of `plugin.action` must not hide it.
    @Test func theDotIsFoundByCodePoint() throws {
        #expect(try InputLine.parse("counter.\u{301}add 1", namesPlugin: true)
            == .action(plugin: "counter", name: "\u{301}add", arguments: .positional([.int(1)])))
        #expect(try InputLine.parse("a.\u{301}b.c", namesPlugin: true)
            == .action(plugin: "a", name: "\u{301}b.c", arguments: .positional([])))
    }

    /// Found by fuzzing: `1-2` is not an integer out of range, it is not a number.
    @Test func wordsOfNumberCharactersThatAreNotNumbers() throws {
        for word in ["1-2", "--5", "5+"] {
            #expect(throws: InputLineError.syntax(#"cannot read argument 1, \#(word): write strings in double quotes, as in "\#(word)""#)) {
                try InputLine.parse("add \(word)", namesPlugin: false)
            }
        }
        #expect(throws: InputLineError.syntax("argument 1, -99999999999999999999, is out of range of every integer type")) {
            try InputLine.parse("add -99999999999999999999", namesPlugin: false)
        }
        // Regression: a decimal past a Double's range was told to be written as a string.
        #expect(try InputLine.parse("add 1.7e308", namesPlugin: false) == .action(plugin: nil, name: "add", arguments: .positional([.float(1.7e308)])))
        #expect(throws: InputLineError.syntax("argument 2, -1e309, is out of range: decimals are within ±1.8e308")) {
            try InputLine.parse("add_later 1 -1e309", namesPlugin: false)
        }
        // Regression (audit): a message quoted all of a word, a megabyte of digits included.
        let digits = String(repeating: "9", count: 5_000)
        #expect(throws: InputLineError.syntax("argument 1, \(digits.prefix(1024)) … (3976 more bytes), is out of range of every integer type")) {
            try InputLine.parse("add \(digits)", namesPlugin: false)
        }
        #expect(throws: InputLineError.syntax("argument 1, \(digits.prefix(1024)), is out of range of every integer type")) {
            try InputLine.parse("add \(digits.prefix(1024))", namesPlugin: false)
        }
        // Regression (audit): an integral decimal past 2^53 was read as the double nearest to it,
        // another integer (…993.0 was …992); it is the integer its digits write.
        #expect(try InputLine.parse("add 9007199254740993.0 -9.007199254740993e15 +1.5e3 2.5 -0.0", namesPlugin: false)
            == .action(plugin: nil, name: "add", arguments: .positional([.int(9_007_199_254_740_993), .int(-9_007_199_254_740_993),
                                                                        .int(1500), .float(2.5), .float(-0.0)])))
        // Regression (audit): a fraction the nearest double loses was applied as the whole
        // number left (`2.0000000000000001` as 2, `1e-400` as 0); it is refused, in both forms.
        #expect(throws: InputLineError.syntax("argument 2, 2.0000000000000001, has a fraction that a double cannot keep: it would be read as 2.0")) {
            try InputLine.parse("add_later 1 2.0000000000000001", namesPlugin: false)
        }
        #expect(throws: InputLineError.syntax("argument 1, 1e-400, has a fraction that a double cannot keep: it would be read as 0.0")) {
            try InputLine.parse("add 1e-400", namesPlugin: false)
        }
        #expect(throws: InputLineError.json(JSONParser.Error(reason: .fractionLost("1e-400", readAs: 0), offset: 27))) {
            try InputLine.parse(#"{"action": "add", "args": [1e-400]}"#, namesPlugin: false)
        }
        #expect(try InputLine.parse("add_later 1 1e-320", namesPlugin: false)
            == .action(plugin: nil, name: "add_later", arguments: .positional([.int(1), .float(1e-320)])))
        #expect(try InputLine.parse(#"{"action": "add", "args": [9007199254740993.0, 1e19]}"#, namesPlugin: false)
            == .action(plugin: nil, name: "add", arguments: .positional([.int(9_007_199_254_740_993), .uint(10_000_000_000_000_000_000)])))
    }

    @Test func jsonTrailingComma() {
        let error = #expect(throws: InputLineError.self) { try InputLine.parse(#"{"action": "add", "args": [1,]}"#, namesPlugin: false) }
        #expect(error?.description == "not valid JSON: a comma before the closing bracket (column 29)")
    }

    /// A NUL anywhere in a line is refused: it would cut a C string short.
    @Test func nulCharactersAreRefused() {
        #expect(throws: InputLineError.nulCharacter(offset: 5)) { try InputLine.parse("add 1\0junk", namesPlugin: false) }
        #expect(throws: InputLineError.nulCharacter(offset: 10)) { try InputLine.parse("login \"bob\0mallory\"", namesPlugin: false) }
    }

    @Test func lengthLimit() throws {
        let padding = String(repeating: " ", count: InputLine.maxLength - "add 1".utf8.count)
        #expect(try InputLine.parse("add 1" + padding, namesPlugin: false) == .action(plugin: nil, name: "add", arguments: .positional([.int(1)])))
        #expect(throws: InputLineError.tooLong(limit: InputLine.maxLength)) { try InputLine.parse("add 1 " + padding, namesPlugin: false) }
    }

    @Test func messagesAreOneLineEach() {
        let errors: [InputLineError] = [
            .tooLong(limit: 1 << 20), .invalidUTF8(offset: 3), .nulCharacter(offset: 0), .syntax("x"),
            .json(.init(reason: .trailingComma, offset: 4)), .jsonShape("y"),
        ]
        #expect(errors.map(\.description) == [
            "the line is longer than 1048576 bytes; it was skipped",
            "the line is not valid UTF-8 (a bad byte at column 4)",
            "the line holds a NUL character (column 1); NUL cannot be sent",
            "x",
            "not valid JSON: a comma before the closing bracket (column 5)",
            "y",
        ])
    }
}
