import ActomatonPluginABI

/// The names of a plugin's diagram nodes that are active in a state, as its `active` function
/// writes them (since ABI version 2): UTF-8 names separated by `\n`, a final `\n` allowed,
/// nothing for none. Parsed here, once, for every runtime (in process, in a worker, in the
/// WebAssembly sandbox), without trusting the bytes.
public enum ActiveNodes {
    /// The most names: `ACTOMATON_MAX_ACTIVE_NODES`.
    public static let maxCount = Int(ACTOMATON_MAX_ACTIVE_NODES)
    /// The most bytes in one name: `ACTOMATON_MAX_NODE_NAME_LENGTH`.
    public static let maxNameBytes = Int(ACTOMATON_MAX_NODE_NAME_LENGTH)
    /// The most bytes the function may write in all: `ACTOMATON_MAX_ACTIVE_SIZE`, room for
    /// ``maxCount`` names of ``maxNameBytes`` bytes, each with its `\n`.
    public static let maxBytes = Int(ACTOMATON_MAX_ACTIVE_SIZE)

    /// Why the bytes are not a list of active nodes: one line.
    public struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
        /// The reason, one line.
        public let description: String

        /// A problem described by `description`.
        public init(_ description: String) {
            self.description = description
        }
    }

    /// The names in `bytes`; throws when there are more than ``maxCount``, or a name is empty,
    /// longer than ``maxNameBytes``, not UTF-8 or holds a control character (U+0000–U+001F,
    /// U+007F–U+009F). `bytes` longer than ``maxBytes`` are refused before anything else.
    public static func parse(_ bytes: some Collection<UInt8>) throws(Problem) -> [String] {
        guard bytes.count <= maxBytes else {
            throw Problem("the active nodes are \(bytes.count) bytes, more than the limit of \(maxBytes)")
        }
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        guard lines.count <= maxCount else {
            throw Problem("the plugin named \(lines.count) active nodes, more than the limit of \(maxCount)")
        }
        var names: [String] = []
        names.reserveCapacity(lines.count)
        for (index, line) in lines.enumerated() {
            guard line.count <= maxNameBytes else {
                throw Problem("active node \(index + 1) is \(line.count) bytes, more than the limit of \(maxNameBytes)")
            }
            guard let name = String(validating: line, as: UTF8.self) else {
                throw Problem("active node \(index + 1) is not valid UTF-8")
            }
            names.append(name)
        }
        try check(names)
        return names
    }

    /// Checks names that arrived one by one (in a worker's frame): at most ``maxCount``, each
    /// 1...``maxNameBytes`` bytes without a control character (a `\n` included).
    public static func check(_ names: [String]) throws(Problem) {
        guard names.count <= maxCount else {
            throw Problem("the plugin named \(names.count) active nodes, more than the limit of \(maxCount)")
        }
        for (index, name) in names.enumerated() {
            let number = index + 1
            guard !name.isEmpty else { throw Problem("active node \(number) is empty") }
            guard name.utf8.count <= maxNameBytes else {
                throw Problem("active node \(number) is \(name.utf8.count) bytes, more than the limit of \(maxNameBytes)")
            }
            if let control = name.unicodeScalars.first(where: isControl) {
                throw Problem("active node \(number) holds the control character U+\(hex(control.value))")
            }
        }
    }

    /// `names` as an `active` function writes them: separated by `\n`.
    public static func encode(_ names: [String]) -> [UInt8] {
        Array(names.joined(separator: "\n").utf8)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
