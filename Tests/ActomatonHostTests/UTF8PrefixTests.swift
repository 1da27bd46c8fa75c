@testable import ActomatonHost
import Testing

/// Every line the host cuts is cut by `prefix(utf8Bytes:)`: whole characters, never more bytes
/// than the limit, the text unchanged when it fits.
@Suite("Cutting text at a number of UTF-8 bytes")
struct UTF8PrefixTests {
    @Test func wholeCharactersWithinTheLimit() {
        #expect("abc".prefix(utf8Bytes: 3) == "abc", "at the limit")
        #expect("abcd".prefix(utf8Bytes: 3) == "abc", "one past")
        // "é" is 2 bytes, "😀" 4, "e\u{301}" one character of 3.
        #expect("aé".prefix(utf8Bytes: 2) == "a", "half a character is left out")
        #expect("aé".prefix(utf8Bytes: 3) == "aé")
        #expect("😀x".prefix(utf8Bytes: 3) == "")
        #expect("e\u{301}x".prefix(utf8Bytes: 2) == "", "a combining mark stays with its letter")
        #expect("".prefix(utf8Bytes: 0) == "")
        #expect(String(repeating: "é", count: 101).cut(utf8Bytes: 200) == String(repeating: "é", count: 100) + " … (2 more bytes)")
    }
}
