import ActomatonHost

/// The key of an instance: 1 to ``maxLength`` bytes of `[A-Za-z0-9._:-]`.
///
/// Keys come from request paths and queries; one that breaks the rule is refused with one line
/// (``ServiceError/badRequest(_:)``) before anything else looks at it.
public struct InstanceKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The longest key, in bytes (`InstanceKeyRule.maxLength` of `ActomatonHost`).
    public static let maxLength = InstanceKeyRule.maxLength

    /// The key's text.
    public let text: String

    /// Checks `text` against the rule (`InstanceKeyRule`); throws ``ServiceError/badRequest(_:)``
    /// naming what is wrong.
    public init(_ text: some StringProtocol) throws(ServiceError) {
        if let problem = InstanceKeyRule.problem(with: text) { throw .badRequest(problem) }
        self.text = String(text)
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
