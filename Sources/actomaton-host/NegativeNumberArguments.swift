/// Command-line arguments with a negative number after an option joined to it.
///
/// ArgumentParser reads `--idle-timeout -5` as an option without its value followed by an
/// unknown option `-5`, and answers "Missing value", which hides what was wrong. Joined as
/// `--idle-timeout=-5`, the value reaches the option, whose own check refuses it with the
/// option's range.
enum NegativeNumberArguments {
    /// `arguments` with every `--name -N` (N a decimal number) written `--name=-N`; nothing
    /// after a `--` terminator is touched.
    static func joined(_ arguments: [String]) -> [String] {
        var result: [String] = []
        result.reserveCapacity(arguments.count)
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            if argument == "--" {
                result.append(contentsOf: arguments[index...])
                break
            }
            let next = index + 1
            if argument.hasPrefix("--"), argument.count > 2, !argument.contains("="),
               next < arguments.endIndex, isNegativeNumber(arguments[next]) {
                result.append(argument + "=" + arguments[next])
                index = next + 1
                continue
            }
            result.append(argument)
            index = next
        }
        return result
    }

    /// Whether `text` is `-` followed by a decimal number (`-5`, `-0.5`, `-.5`, `-1e3`).
    static func isNegativeNumber(_ text: String) -> Bool {
        let body = text.utf8.dropFirst()
        guard text.utf8.first == UInt8(ascii: "-"), let first = body.first else { return false }
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        if isDigit(first) { return true }
        return first == UInt8(ascii: ".") && body.dropFirst().first.map(isDigit) == true
    }
}
