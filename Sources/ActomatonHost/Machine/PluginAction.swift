import ActomatonPluginContract

/// An action of one plugin's vocabulary with arguments checked against its parameters: what
/// the host sends to a plugin's machine.
///
/// Make one with ``Plugin/action(_:_:)``, which refuses unknown actions and wrong arguments.
/// It remembers its index in the vocabulary of the plugin it was checked against; sent to a
/// newer version of that plugin (after a reload) it is checked again, by name.
public struct PluginAction: Sendable, Hashable, CustomStringConvertible {
    /// Everything in one object, so copying an action (as a machine does on every send)
    /// retains one reference, not a string and an array.
    private final class Storage: Sendable {
        let name: String
        let arguments: [PluginValue]
        let index: Int
        let vocabulary: UInt64

        init(name: String, arguments: [PluginValue], index: Int, vocabulary: UInt64) {
            self.name = name
            self.arguments = arguments
            self.index = index
            self.vocabulary = vocabulary
        }
    }

    private let storage: Storage

    /// The action's name.
    public var name: String { storage.name }
    /// The arguments, one per parameter, each of its parameter's kind and within its range.
    public var arguments: [PluginValue] { storage.arguments }
    /// The index of the action in the vocabulary of the plugin ``vocabulary`` identifies.
    var index: Int { storage.index }
    /// Identifies the loaded plugin the action was checked against.
    var vocabulary: UInt64 { storage.vocabulary }

    init(name: String, arguments: [PluginValue], index: Int, vocabulary: UInt64) {
        storage = Storage(name: name, arguments: arguments, index: index, vocabulary: vocabulary)
    }

    /// Equal when the name and arguments are equal.
    public static func == (lhs: PluginAction, rhs: PluginAction) -> Bool {
        lhs.name == rhs.name && lhs.arguments == rhs.arguments
    }

    /// Hashes the same parts `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(arguments)
    }

    /// The action as an input line writes it: `place 1 2`, `login "alice"`.
    public var description: String {
        ([name] + arguments.map(\.description)).joined(separator: " ")
    }
}

/// `text` in double quotes, escaped as an input line writes a string.
func quoted(_ text: String) -> String {
    PluginValue.quoted(text)
}
