#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reading a C string a plugin handed over, without trusting it: bounded, checked UTF-8.
public enum CString {
    /// What is wrong with a C string.
    public enum Problem: Error, Sendable, Hashable {
        /// It has more than the limit's bytes before its NUL.
        case tooLong(limit: Int)
        /// It is not valid UTF-8.
        case invalidUTF8
    }

    /// The NUL-terminated UTF-8 string at `pointer`, of at most `limit` bytes, or `nil` for
    /// `NULL`; never reads more than `limit + 1` bytes.
    public static func read(_ pointer: UnsafePointer<CChar>?, limit: Int) throws(Problem) -> String? {
        guard let pointer else { return nil }
        let length = strnlen(pointer, limit + 1)
        guard length <= limit else { throw .tooLong(limit: limit) }
        guard let text = String(validating: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self) else {
            throw .invalidUTF8
        }
        return text
    }
}
