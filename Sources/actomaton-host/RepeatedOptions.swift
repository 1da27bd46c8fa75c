import ArgumentParser

/// Refuses an option given twice on the command line, but those made to be repeated
/// (``repeatable``).
///
/// Every other option of the host takes one value, and ArgumentParser keeps the last one given:
/// `--listen 127.0.0.1:8080 --listen 0.0.0.0:8080` listened on the second address without a
/// word, and `--max-effects 1 --max-effects 2` took 2.
enum RepeatedOptions {
    /// The options given once per value: `--allow-host`.
    static let repeatable: Set<Substring> = ["--allow-host"]

    /// Throws a one-line error naming the first option of `arguments` given twice (as
    /// `--name VALUE` or `--name=VALUE`); nothing after a `--` terminator is looked at.
    static func refuse(in arguments: [String]) throws {
        var seen: Set<Substring> = []
        for argument in arguments {
            if argument == "--" { return }
            guard argument.hasPrefix("--"), argument.count > 2 else { continue }
            let name = argument.split(separator: "=", maxSplits: 1).first ?? Substring(argument)
            guard seen.insert(name).inserted || repeatable.contains(name) else {
                throw ValidationError("\(name) is given twice; give it once")
            }
        }
    }
}
