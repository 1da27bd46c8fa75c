// The `manifest` fuzz check: `make fuzz` runs it under libFuzzer
// (Tests/Fuzz/Harnesses/ManifestFuzzEntry.swift), and `ManifestFuzzReplayTests` replays every
// file of Tests/Fuzz/Corpus/manifest with it.
import ActomatonPluginABI
import ActomatonPluginContract

/// Where ``ManifestReader`` and the model of the contract's rules disagree on one manifest.
struct ManifestFuzzFailure: Error, CustomStringConvertible {
    /// What differs, with the manifest's plan.
    var description: String
}

/// Builds an `actomaton_manifest` in memory as `bytes` say, has ``ManifestReader`` check its ABI
/// version and read it, and checks the verdict against a model of the rules in
/// `actomaton_plugin.h`; throws where they disagree.
///
/// The bytes choose every part: the ABI version; each name (valid, NULL, a duplicate, random
/// bytes that may not be UTF-8, at the length limit, one past it, or one past it without a NUL);
/// the version and the summary; which function pointers are NULL; the number of actions and of
/// each action's parameters (a few, around `ACTOMATON_MAX_ACTIONS` and
/// `ACTOMATON_MAX_PARAMETERS`, or `UINT32_MAX`) and the parameter types. Input that runs out
/// reads as zeros, which choose a valid part. Every array and string is allocated exactly as
/// large as its count or its bytes (plus the NUL), so AddressSanitizer reports any read past one.
func fuzzManifest(_ bytes: [UInt8]) throws(ManifestFuzzFailure) {
    let memory = ManifestMemory()
    var input = FuzzInput(bytes)
    let (manifest, expected) = memory.manifest(from: &input)
    func failure(_ what: String) -> ManifestFuzzFailure {
        ManifestFuzzFailure(description: "\(what); input \(bytes.map { String($0, radix: 16) }.joined(separator: " "))")
    }

    do {
        try ManifestReader.checkABIVersion(UnsafeRawPointer(manifest))
    } catch {
        guard case let .unsupportedABIVersion(found, supported) = error, case let .refused(.abiVersion(version)) = expected,
              found == version, supported == ACTOMATON_PLUGIN_ABI_VERSION else {
            throw failure("checkABIVersion threw \(error), the model expects \(expected)")
        }
        return
    }
    if case .refused(.abiVersion) = expected { throw failure("checkABIVersion accepted the model's \(expected)") }

    let read: PluginManifest
    do {
        read = try ManifestReader.read(UnsafePointer(manifest))
    } catch {
        guard case let .invalid(message) = error, !message.isEmpty, case .refused(.invalid) = expected else {
            throw failure("read threw \(error), the model expects \(expected)")
        }
        return
    }
    guard case let .accepted(model) = expected, read == model else {
        throw failure("read accepted \(read), the model expects \(expected)")
    }
    _ = read.text
}

/// What the model of the contract expects of a manifest.
private enum ExpectedManifest: CustomStringConvertible {
    /// The manifest is valid and reads as this.
    case accepted(PluginManifest)
    /// The manifest breaks a rule.
    case refused(Refusal)

    /// Why the model refuses a manifest.
    enum Refusal {
        /// The ABI version is not the host's.
        case abiVersion(UInt32)
        /// Another rule: which.
        case invalid(String)
    }

    var description: String {
        switch self {
        case let .accepted(manifest): "acceptance of \(manifest)"
        case let .refused(.abiVersion(version)): "refusal of ABI version \(version)"
        case let .refused(.invalid(rule)): "refusal: \(rule)"
        }
    }
}

/// The fuzzer's bytes, read one at a time; zeros once they run out.
private struct FuzzInput {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The next byte, or 0 past the end.
    mutating func next() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }
}

/// The C memory of one manifest, allocated exactly as large as the counts say, freed with it.
private final class ManifestMemory {
    private var allocations: [UnsafeMutableRawPointer] = []

    deinit {
        for allocation in allocations { allocation.deallocate() }
    }

    private func allocate<T>(_ type: T.Type, count: Int) -> UnsafeMutablePointer<T> {
        let pointer = UnsafeMutablePointer<T>.allocate(capacity: count)
        allocations.append(UnsafeMutableRawPointer(pointer))
        return pointer
    }

    /// A C string: `bytes` (no NUL among them), then a NUL when `terminated`.
    private func cString(_ bytes: [UInt8], terminated: Bool) -> UnsafePointer<CChar> {
        let pointer = allocate(CChar.self, count: bytes.count + (terminated ? 1 : 0))
        for (index, byte) in bytes.enumerated() { pointer[index] = CChar(bitPattern: byte) }
        if terminated { pointer[bytes.count] = 0 }
        return UnsafePointer(pointer)
    }

    /// A string field: its pointer, and what the model reads from it (`nil` for NULL) or why not.
    private typealias Text = (pointer: UnsafePointer<CChar>?, value: Result<String?, Problem>)

    /// Why the model refuses a string.
    private struct Problem: Error {
        var reason: String
    }

    /// A text of at most `limit` bytes, as `choice` says: 0 is `normal`.
    private func text(_ input: inout FuzzInput, choice: UInt8, limit: Int, normal: [UInt8]) -> Text {
        switch choice % 8 {
        case 0, 1:
            return (cString(normal, terminated: true), .success(String(decoding: normal, as: UTF8.self)))
        case 2:
            return (nil, .success(nil))
        case 3, 4:
            // Random bytes, maybe not UTF-8: any length up to a few bytes past the limit.
            let count = Int(input.next()) % (limit + 8)
            let bytes = (0..<count).map { _ in max(input.next(), 1) }
            guard bytes.count <= limit else { return (cString(bytes, terminated: true), .failure(Problem(reason: "too long"))) }
            guard let string = String(validating: bytes, as: UTF8.self) else {
                return (cString(bytes, terminated: true), .failure(Problem(reason: "not UTF-8")))
            }
            return (cString(bytes, terminated: true), .success(string))
        case 5:
            let bytes = [UInt8](repeating: UInt8(ascii: "a"), count: limit)
            return (cString(bytes, terminated: true), .success(String(decoding: bytes, as: UTF8.self)))
        case 6:
            let bytes = [UInt8](repeating: UInt8(ascii: "a"), count: limit + 1)
            return (cString(bytes, terminated: true), .failure(Problem(reason: "too long")))
        default:
            // One byte past the limit and no NUL: a reader must stop after limit + 1 bytes.
            let bytes = [UInt8](repeating: UInt8(ascii: "a"), count: limit + 1)
            return (cString(bytes, terminated: false), .failure(Problem(reason: "too long, no NUL")))
        }
    }

    /// A name, as the next byte says: valid (`normal`), NULL, `previous` again, or a text that may
    /// break a rule. The model's verdict is the contract's rule, written out again here.
    private func name(_ input: inout FuzzInput, normal: String, previous: Text?) -> Text {
        let choice = input.next()
        if choice % 16 == 15, let previous { return previous }
        var result: Text
        if choice % 16 == 14 {
            // Valid UTF-8; valid as a name or not.
            let text = ["9lives", "with-dash", "é", "", "a b", "_ok_", "Z9", "x\u{7F}"][Int(input.next()) % 8]
            result = (cString(Array(text.utf8), terminated: true), .success(text))
        } else {
            result = self.text(&input, choice: choice, limit: Int(ACTOMATON_MAX_NAME_LENGTH), normal: Array(normal.utf8))
        }
        switch result.value {
        case let .success(value?) where !Self.isValidName(Array(value.utf8)):
            result.value = .failure(Problem(reason: "not a valid name"))
        case .success(nil):
            result.value = .failure(Problem(reason: "missing"))
        default:
            break
        }
        return result
    }

    /// 1 to 64 bytes of `[A-Za-z0-9_]`, not starting with a digit.
    private static func isValidName(_ bytes: [UInt8]) -> Bool {
        func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F }
        func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
        guard let first = bytes.first, isLetter(first), bytes.count <= Int(ACTOMATON_MAX_NAME_LENGTH) else { return false }
        return bytes.allSatisfy { isLetter($0) || isDigit($0) }
    }

    /// A count: usually small, else around `limit`, else `UINT32_MAX`.
    private func count(_ input: inout FuzzInput, limit: Int, small: ClosedRange<Int>) -> Int {
        let choice = input.next()
        switch choice {
        case 0..<0xB0: return small.lowerBound + Int(choice) % small.count
        case 0xB0..<0xF0: return [0, 1, 2, limit - 2, limit - 1, limit, limit + 1, limit + 2][Int(choice) % 8]
        default: return Int(UInt32.max)
        }
    }

    /// A manifest built as `input` says, and what the model expects of it.
    func manifest(from input: inout FuzzInput) -> (UnsafeMutablePointer<actomaton_manifest>, ExpectedManifest) {
        var problems: [String] = []
        func check<T>(_ result: Result<T, Problem>, _ what: String) -> T? {
            switch result {
            case let .success(value): return value
            case let .failure(problem): problems.append("\(what): \(problem.reason)"); return nil
            }
        }

        let versionChoice = input.next()
        let abiVersion: UInt32 = versionChoice < 0xF0 ? ACTOMATON_PLUGIN_ABI_VERSION
            : versionChoice == 0xFF ? UInt32.max : UInt32(versionChoice - 0xF0)
        let pluginName = name(&input, normal: "demo", previous: nil)
        let version = text(&input, choice: input.next(), limit: Int(ACTOMATON_MAX_VERSION_LENGTH), normal: Array("1.0.0".utf8))
        let summaryChoice = input.next()
        let summary = text(&input, choice: summaryChoice &+ 2, limit: Int(ACTOMATON_MAX_SUMMARY_LENGTH), normal: Array("A summary.".utf8))
        let missingFunction = input.next() // 0xC0 and up: one function is NULL

        let actionCount = count(&input, limit: Int(ACTOMATON_MAX_ACTIONS), small: 1...4)
        let actionsAreNull = input.next() == 0xFF
        let allocated = actionCount <= Int(ACTOMATON_MAX_ACTIONS) + 2 ? actionCount : 0
        let actions = allocate(actomaton_action.self, count: allocated)
        var modelActions: [PluginManifest.Action] = []
        var actionNames: [[UInt8]] = []
        var previousName: Text?
        for index in 0..<allocated {
            let actionName = name(&input, normal: "action\(index)", previous: previousName)
            previousName = actionName
            let nameValue = check(actionName.value, "action \(index + 1) name").flatMap { $0 }
            if let nameValue {
                if actionNames.contains(Array(nameValue.utf8)) { problems.append("action \(index + 1): a duplicate name") }
                actionNames.append(Array(nameValue.utf8))
            }
            let hasEntry = input.next() < 0xF0
            if !hasEntry { problems.append("action \(index + 1): no entry") }

            let parameterCount = count(&input, limit: Int(ACTOMATON_MAX_PARAMETERS), small: 0...3)
            let parametersAreNull = input.next() == 0xFF
            let allocatedParameters = parameterCount <= Int(ACTOMATON_MAX_PARAMETERS) + 2 ? parameterCount : 0
            let parameters = allocate(actomaton_parameter.self, count: allocatedParameters)
            if parameterCount > Int(ACTOMATON_MAX_PARAMETERS) { problems.append("action \(index + 1): too many parameters") }
            if parameterCount > 0, parametersAreNull { problems.append("action \(index + 1): parameters is NULL") }
            var modelParameters: [PluginManifest.Parameter] = []
            var parameterNames: [[UInt8]] = []
            var previousParameter: Text?
            for position in 0..<allocatedParameters {
                let parameterName = name(&input, normal: "p\(position)", previous: previousParameter)
                previousParameter = parameterName
                let typeChoice = input.next()
                let type: actomaton_type = typeChoice < 0xC0 ? 1 + UInt32(typeChoice) % 12
                    : [0, 13, 0x8000_0001, UInt32.max][Int(typeChoice) % 4]
                (parameters + position).initialize(to: actomaton_parameter(name: parameterName.pointer, type: type))
                let parameterNameValue = check(parameterName.value, "action \(index + 1) parameter \(position + 1) name").flatMap { $0 }
                if let parameterNameValue {
                    if parameterNames.contains(Array(parameterNameValue.utf8)) {
                        problems.append("action \(index + 1): a duplicate parameter name")
                    }
                    parameterNames.append(Array(parameterNameValue.utf8))
                }
                let knownType = PluginValueType(rawValue: type)
                if knownType == nil { problems.append("action \(index + 1) parameter \(position + 1): unknown type \(type)") }
                if let parameterNameValue, let knownType {
                    modelParameters.append(PluginManifest.Parameter(name: parameterNameValue, type: knownType))
                }
            }
            (actions + index).initialize(to: actomaton_action(
                name: actionName.pointer, parameters: parametersAreNull ? nil : UnsafePointer(parameters),
                parameter_count: UInt32(parameterCount), entry: hasEntry ? { } : nil))
            if let nameValue { modelActions.append(PluginManifest.Action(name: nameValue, parameters: modelParameters)) }
        }
        if actionCount == 0 { problems.append("no actions") }
        if actionCount > Int(ACTOMATON_MAX_ACTIONS) { problems.append("too many actions") }
        if actionCount > 0, actionsAreNull { problems.append("actions is NULL") }

        let manifest = allocate(actomaton_manifest.self, count: 1)
        manifest.initialize(to: actomaton_manifest(
            abi_version: abiVersion, name: pluginName.pointer, version: version.pointer, summary: summary.pointer,
            actions: actionsAreNull ? nil : UnsafePointer(actions), action_count: UInt32(actionCount),
            create: missingFunction >= 0xC0 && missingFunction % 5 == 0 ? nil : { _ in nil },
            destroy: missingFunction >= 0xC0 && missingFunction % 5 == 1 ? nil : { _ in },
            snapshot: missingFunction >= 0xC0 && missingFunction % 5 == 2 ? nil : { _, _, _ in 0 },
            restore: missingFunction >= 0xC0 && missingFunction % 5 == 3 ? nil : { _, _, _ in 0 },
            describe: missingFunction >= 0xC0 && missingFunction % 5 == 4 ? nil : { _, _, _ in 0 },
            diagram: nil, active: nil))
        if missingFunction >= 0xC0 { problems.append("function \(missingFunction % 5) is NULL") }

        guard (ACTOMATON_PLUGIN_MIN_ABI_VERSION...ACTOMATON_PLUGIN_ABI_VERSION).contains(abiVersion) else {
            return (manifest, .refused(.abiVersion(abiVersion)))
        }
        let nameValue = check(pluginName.value, "plugin name").flatMap { $0 }
        let versionValue = check(version.value, "version").flatMap { $0 }
        if case .success(nil) = version.value { problems.append("version: missing") }
        let summaryValue = check(summary.value, "summary").flatMap { $0 }
        guard problems.isEmpty, let nameValue, let versionValue else {
            return (manifest, .refused(.invalid(problems.joined(separator: "; "))))
        }
        return (manifest, .accepted(PluginManifest(
            abiVersion: abiVersion, name: nameValue, version: versionValue, summary: summaryValue, actions: modelActions)))
    }
}
