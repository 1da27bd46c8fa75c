/// Runs a plugin function of the `snprintf` convention — write at most `capacity` bytes,
/// return the size needed — without trusting the size it returns or its writes.
///
/// The buffer is followed by guard bytes: a plugin that writes past `capacity` is caught
/// (as long as it writes no more than the guard's length past it). The plugin gets at most
/// two calls: a first with a small buffer, and a second with the size it asked for.
enum SizedCall {
    /// The bytes after the buffer that must come back untouched.
    static let guardLength = 64
    private static let guardByte: UInt8 = 0xA5
    /// The first buffer's size.
    static let initialCapacity = 256

    /// Why a call broke the convention.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The bytes `body` writes; throws when the size is past `limit`, when the plugin asks for a
    /// larger buffer twice, or when it writes past the buffer.
    static func run(limit: Int, _ body: (UnsafeMutablePointer<UInt8>, Int) -> Int) throws(Failure) -> [UInt8] {
        var capacity = min(initialCapacity, limit)
        for attempt in 1...2 {
            var buffer = [UInt8](repeating: guardByte, count: capacity + guardLength)
            let size = buffer.withUnsafeMutableBufferPointer { body($0.baseAddress!, capacity) }
            guard buffer[capacity...].allSatisfy({ $0 == guardByte }) else {
                throw Failure(description: "the plugin wrote past the end of the \(capacity)-byte buffer it was given")
            }
            // `size_t` comes in as `Int`: a "negative" size is one of 2^63 bytes or more.
            let asked = UInt(bitPattern: size)
            if asked <= UInt(capacity) { return Array(buffer[0..<Int(asked)]) }
            guard asked <= UInt(limit) else {
                throw Failure(description: "the plugin asked for \(asked) bytes, more than the limit of \(limit)")
            }
            guard attempt == 1 else {
                throw Failure(description: "the plugin asked for \(asked) bytes after being given the \(capacity) it asked for")
            }
            capacity = Int(asked)
        }
        throw Failure(description: "unreachable")
    }
}
