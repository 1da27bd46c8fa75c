/// The rule for an instance's key — `room-1` in `counter/room-1` — shared by `serve`'s input
/// lines (``PluginHost/machine(at:)``) and the network service's paths: 1 to ``maxLength``
/// bytes of `[A-Za-z0-9._:-]`, and not `.` or `..` (a URL takes those as dot-segments: a
/// client or a browser would address another path).
public enum InstanceKeyRule {
    /// The longest key, in bytes.
    public static let maxLength = 128

    /// What is wrong with `key`, in one line; `nil` when it follows the rule.
    @inlinable // specialized where it is called: every request checks a key
    public static func problem(with key: some StringProtocol) -> String? {
        let utf8 = key.utf8
        guard !utf8.isEmpty else { return "an instance key must not be empty" }
        guard utf8.count <= maxLength else { return "an instance key is at most \(maxLength) bytes, got \(utf8.count)" }
        guard !utf8.elementsEqual(".".utf8), !utf8.elementsEqual("..".utf8) else {
            return "an instance key cannot be . or .. (a URL takes them as its path's dot-segments)"
        }
        for (offset, byte) in utf8.enumerated() where !isAllowed(byte) {
            return "an instance key may hold only letters, digits and . _ : - (byte \(offset + 1) is not one)"
        }
        return nil
    }

    /// Whether `byte` may appear in a key.
    @inlinable
    public static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }
}
