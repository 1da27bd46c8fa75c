/// The key of an instance: 1 to ``maxLength`` bytes of `[A-Za-z0-9._:-]`.
///
/// Keys come from request paths and queries; one that breaks the rule is refused with one line
/// (``ServiceError/badRequest(_:)``) before anything else looks at it.
public struct InstanceKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The longest key, in bytes.
    public static let maxLength = 128

    /// The key's text.
    public let text: String

    /// Checks `text` against the rule; throws ``ServiceError/badRequest(_:)`` naming what is wrong.
    public init(_ text: some StringProtocol) throws(ServiceError) {
        let utf8 = text.utf8
        guard !utf8.isEmpty else { throw .badRequest("an instance key must not be empty") }
        guard utf8.count <= Self.maxLength else {
            throw .badRequest("an instance key is at most \(Self.maxLength) bytes, got \(utf8.count)")
        }
        for (offset, byte) in utf8.enumerated() where !Self.isAllowed(byte) {
            throw .badRequest("an instance key may hold only letters, digits and . _ : - (byte \(offset + 1) is not one)")
        }
        self.text = String(text)
    }

    /// Whether `byte` may appear in a key.
    static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    /// The key's text.
    public var description: String { text }

    /// Orders keys by their bytes, as the key listing pages them.
    public static func < (lhs: InstanceKey, rhs: InstanceKey) -> Bool {
        lhs.text.utf8.lexicographicallyPrecedes(rhs.text.utf8)
    }
}

/// An instance's address: its plugin (the machine type) and its key.
public struct InstanceAddress: Sendable, Hashable, CustomStringConvertible {
    /// The plugin's name.
    public var plugin: String
    /// The key.
    public var key: InstanceKey

    /// Creates an address.
    public init(plugin: String, key: InstanceKey) {
        self.plugin = plugin
        self.key = key
    }

    /// `plugin/key`.
    public var description: String { "\(plugin)/\(key)" }
}
