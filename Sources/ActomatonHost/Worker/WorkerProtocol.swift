import ActomatonPluginContract

/// The protocol between `actomaton-host` and a plugin's worker process, version 1.
///
/// A worker is the same executable started in worker mode, connected to the host by a Unix
/// stream socket pair (its end is descriptor 3). Each side writes frames and reads the other's:
///
///     frame   = length:u32le  tag:u8  payload          (length counts tag + payload)
///     string  = length:u32le  UTF-8 bytes              (capped per field, see below)
///     bytes   = length:u32le  raw bytes
///     value   = kind:u8 (1 bool, 2 int, 3 uint, 4 float, 5 string) then its bytes
///               (bool:u8, int:i64le, uint:u64le, float:f64le bits, string)
///     action  = name:string  count:u32le  value*count
///
/// The conversation, host first except for `hello`:
///
///     worker → host   hello(version:u32)                      once, at start
///     host → worker   load(path:string, entry:string, maxFileSize:u64, allowUntrusted:u8)
///     worker → host   loaded(manifest) | loadFailed(kind:u8, message:string)
///     host → worker   perform(action) | snapshot | restore(bytes) | describe
///     worker → host   performed(requests) | failed(reason) | snapshotTaken(bytes)
///                     | restored | described(string)
///     worker → host   log(string)                              at any time before a reply
///
///     manifest = abi:u32 name:string version:string hasSummary:u8 [summary:string]
///                count:u32 (name:string parameterCount:u32 (name:string type:u32)*)*
///     requests = count:u32 request*;  request = kind:u8 (1 next, 2 delayed, 3 repeating,
///                4 cancel) then action [nanoseconds:u64 options] | id:string
///     options  = hasID:u8 [id:string] hasQueue:u8 [name:string policy:u8 (ACTOMATON_QUEUE_*) maxCount:u32]
///     reason   = kind:u8 a:string b:string n:u64   (see `WorkerProtocol/encode(_:)`)
///
/// Both sides check every frame: a length past ``maxFrameBytes``, an unknown tag, a field
/// past its cap, a count past the contract's limits, trailing bytes, or a frame that is not
/// the expected answer is a protocol error. A worker is as untrusted as the plugin in it: the
/// host treats a protocol error like a crash (kills the worker and restarts it).
enum WorkerProtocol {
    /// The version both sides speak; the worker says it first.
    static let version: UInt32 = 1
    /// The largest frame: a snapshot at the contract's limit, plus room for the header.
    static let maxFrameBytes = PluginLimits.maxSnapshotBytes + 4096
    /// The most effect requests one action may return through a worker.
    static let maxRequests = 65_536

    /// What a frame is.
    enum Tag: UInt8 {
        // host → worker
        case load = 1, perform = 2, snapshot = 3, restore = 4, describe = 5
        // worker → host
        case hello = 64, loaded = 65, loadFailed = 66, performed = 67, failed = 68
        case snapshotTaken = 69, restored = 70, described = 71, log = 72
    }

    /// A frame that breaks the protocol, and how.
    struct Violation: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

/// Builds a frame's payload.
struct FrameWriter {
    private(set) var bytes: [UInt8] = []

    init(_ tag: WorkerProtocol.Tag) {
        bytes = [0, 0, 0, 0, tag.rawValue]
    }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func bool(_ value: Bool) { u8(value ? 1 : 0) }

    mutating func string(_ value: String) {
        u32(UInt32(truncatingIfNeeded: value.utf8.count))
        bytes.append(contentsOf: value.utf8)
    }

    mutating func data(_ value: [UInt8]) {
        u32(UInt32(truncatingIfNeeded: value.count))
        bytes.append(contentsOf: value)
    }

    /// The frame, with its length filled in.
    func finished() -> [UInt8] {
        var frame = bytes
        let length = UInt32(truncatingIfNeeded: frame.count - 4).littleEndian
        withUnsafeBytes(of: length) { for (index, byte) in $0.enumerated() { frame[index] = byte } }
        return frame
    }
}

/// Reads a frame's payload, checking every length against its cap.
struct FrameReader {
    private let bytes: [UInt8]
    private var offset: Int

    /// Reads the payload of `frame` (tag excluded).
    init(payload bytes: [UInt8]) {
        self.bytes = bytes
        offset = 0
    }

    private mutating func take(_ count: Int) throws(WorkerProtocol.Violation) -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.count - offset else { throw WorkerProtocol.Violation("a frame ends early") }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func u8() throws(WorkerProtocol.Violation) -> UInt8 { try take(1).first! }

    mutating func u32() throws(WorkerProtocol.Violation) -> UInt32 {
        try take(4).reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func u64() throws(WorkerProtocol.Violation) -> UInt64 {
        try take(8).reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func bool() throws(WorkerProtocol.Violation) -> Bool {
        switch try u8() {
        case 0: return false
        case 1: return true
        case let other: throw WorkerProtocol.Violation("a boolean is \(other)")
        }
    }

    mutating func string(limit: Int) throws(WorkerProtocol.Violation) -> String {
        let length = Int(try u32())
        guard length <= limit else { throw WorkerProtocol.Violation("a string of \(length) bytes passes its limit of \(limit)") }
        guard let text = String(validating: try take(length), as: UTF8.self) else { throw WorkerProtocol.Violation("a string is not UTF-8") }
        return text
    }

    mutating func data(limit: Int) throws(WorkerProtocol.Violation) -> [UInt8] {
        let length = Int(try u32())
        guard length <= limit else { throw WorkerProtocol.Violation("\(length) bytes pass the limit of \(limit)") }
        return Array(try take(length))
    }

    mutating func count(limit: Int, of what: String) throws(WorkerProtocol.Violation) -> Int {
        let count = Int(try u32())
        guard count <= limit else { throw WorkerProtocol.Violation("\(count) \(what) pass the limit of \(limit)") }
        return count
    }

    /// Throws unless every byte was read.
    func finish() throws(WorkerProtocol.Violation) {
        guard offset == bytes.count else { throw WorkerProtocol.Violation("a frame has \(bytes.count - offset) bytes too many") }
    }
}

// MARK: Values of the contract

extension FrameWriter {
    mutating func value(_ value: PluginValue) {
        switch value {
        case let .bool(b): u8(1); bool(b)
        case let .int(n): u8(2); u64(UInt64(bitPattern: n))
        case let .uint(n): u8(3); u64(n)
        case let .float(x): u8(4); u64(x.bitPattern)
        case let .string(s): u8(5); string(s)
        }
    }

    mutating func action(name: String, arguments: [PluginValue]) {
        string(name)
        u32(UInt32(arguments.count))
        for argument in arguments { value(argument) }
    }

    mutating func manifest(_ manifest: PluginManifest) {
        u32(manifest.abiVersion)
        string(manifest.name)
        string(manifest.version)
        bool(manifest.summary != nil)
        if let summary = manifest.summary { string(summary) }
        u32(UInt32(manifest.actions.count))
        for action in manifest.actions {
            string(action.name)
            u32(UInt32(action.parameters.count))
            for parameter in action.parameters {
                string(parameter.name)
                u32(parameter.type.rawValue)
            }
        }
    }

    mutating func requests(_ requests: [PluginEffectRequest]) {
        u32(UInt32(requests.count))
        for request in requests {
            switch request {
            case let .next(action):
                u8(1); self.action(name: action.name, arguments: action.arguments)
            case let .delayed(action, delay, options):
                u8(2); self.action(name: action.name, arguments: action.arguments); u64(nanoseconds(delay)); self.options(options)
            case let .repeating(action, interval, options):
                u8(3); self.action(name: action.name, arguments: action.arguments); u64(nanoseconds(interval)); self.options(options)
            case let .cancel(id):
                u8(4); string(id)
            }
        }
    }

    private mutating func options(_ options: PluginEffectOptions) {
        bool(options.id != nil)
        if let id = options.id { string(id) }
        bool(options.queue != nil)
        if let queue = options.queue {
            string(queue.name)
            u8(UInt8(queue.policy.abiPolicy))
            u32(UInt32(queue.policy.maxCount))
        }
    }

    /// A call failure, as kind + two strings + a number.
    mutating func reason(_ reason: PluginCallError.Reason) {
        func put(_ kind: UInt8, _ a: String, _ b: String = "", _ n: Int = 0) {
            u8(kind); string(a); string(b); u64(UInt64(n))
        }
        switch reason {
        case let .refused(action, message): put(1, action, message)
        case let .invalidRequest(action, message): put(2, action, message)
        case let .effectLimitReached(action, limit): put(3, action, "", limit)
        case let .describeFailed(message): put(4, message)
        case let .snapshotFailed(message): put(5, message)
        case let .restoreRefused(message): put(6, message)
        default: put(2, "", reason.description) // the host checked the action already
        }
    }
}

private func nanoseconds(_ duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    return UInt64(clamping: seconds) &* 1_000_000_000 &+ UInt64(clamping: attoseconds / 1_000_000_000)
}

extension FrameReader {
    mutating func value() throws(WorkerProtocol.Violation) -> PluginValue {
        switch try u8() {
        case 1: return .bool(try bool())
        case 2: return .int(Int64(bitPattern: try u64()))
        case 3: return .uint(try u64())
        case 4: return .float(Double(bitPattern: try u64()))
        case 5: return .string(try string(limit: PluginLimits.maxStringArgumentBytes))
        case let kind: throw WorkerProtocol.Violation("unknown value kind \(kind)")
        }
    }

    mutating func action() throws(WorkerProtocol.Violation) -> (name: String, arguments: [PluginValue]) {
        let name = try string(limit: Int(64))
        let count = try self.count(limit: 16, of: "arguments")
        var arguments: [PluginValue] = []
        for _ in 0..<count { arguments.append(try value()) }
        return (name, arguments)
    }

    /// A manifest, checked by the contract's rules (the worker is not trusted to have).
    mutating func manifest() throws(WorkerProtocol.Violation) -> PluginManifest {
        let abi = try u32()
        let name = try string(limit: 64)
        let version = try string(limit: 64)
        let summary = try bool() ? try string(limit: 200) : nil
        let count = try self.count(limit: 256, of: "actions")
        var actions: [PluginManifest.Action] = []
        var names: Set<String> = []
        for _ in 0..<count {
            let actionName = try string(limit: 64)
            guard ManifestReader.isValidName(actionName), names.insert(actionName).inserted else {
                throw WorkerProtocol.Violation("the manifest has a bad or duplicate action name")
            }
            let parameterCount = try self.count(limit: 16, of: "parameters")
            var parameters: [PluginManifest.Parameter] = []
            for _ in 0..<parameterCount {
                let parameterName = try string(limit: 64)
                guard ManifestReader.isValidName(parameterName), let type = PluginValueType(rawValue: try u32()) else {
                    throw WorkerProtocol.Violation("the manifest has a bad parameter")
                }
                parameters.append(.init(name: parameterName, type: type))
            }
            actions.append(.init(name: actionName, parameters: parameters))
        }
        guard ManifestReader.isValidName(name), count >= 1 else { throw WorkerProtocol.Violation("the manifest has a bad name or no action") }
        return PluginManifest(abiVersion: abi, name: name, version: version, summary: summary, actions: actions)
    }

    /// Effect requests, each action checked against `plugin`'s vocabulary.
    mutating func requests(checkedAgainst plugin: Plugin) throws(WorkerProtocol.Violation) -> [PluginEffectRequest] {
        let count = try self.count(limit: WorkerProtocol.maxRequests, of: "effect requests")
        var requests: [PluginEffectRequest] = []
        for _ in 0..<count {
            let kind = try u8()
            if kind == 4 {
                requests.append(.cancel(id: try string(limit: PluginLimits.maxIdentifierBytes)))
                continue
            }
            let (name, arguments) = try action()
            let action: PluginAction
            do {
                action = try plugin.checkedAction(name, arguments)
            } catch {
                throw WorkerProtocol.Violation("a request names an action the plugin does not have: \(error)")
            }
            switch kind {
            case 1: requests.append(.next(action))
            case 2: requests.append(.delayed(action, after: .nanoseconds(try u64()), try options()))
            case 3:
                let interval = try u64()
                guard interval > 0 else { throw WorkerProtocol.Violation("a repeating action has interval 0") }
                requests.append(.repeating(action, every: .nanoseconds(interval), try options()))
            default: throw WorkerProtocol.Violation("unknown request kind \(kind)")
            }
        }
        return requests
    }

    private mutating func options() throws(WorkerProtocol.Violation) -> PluginEffectOptions {
        var options = PluginEffectOptions()
        if try bool() { options.id = try string(limit: PluginLimits.maxIdentifierBytes) }
        if try bool() {
            let name = try string(limit: PluginLimits.maxIdentifierBytes)
            let policy = try u8()
            let maxCount = Int(try u32())
            guard maxCount >= 1 else { throw WorkerProtocol.Violation("a queue has max_count 0") }
            switch PluginQueuePolicy(abiPolicy: UInt32(policy), maxCount: maxCount) {
            case let known?: options.queue = .init(name: name, policy: known)
            case nil: throw WorkerProtocol.Violation("unknown queue policy \(policy)")
            }
        }
        return options
    }

    mutating func reason() throws(WorkerProtocol.Violation) -> PluginCallError.Reason {
        let kind = try u8()
        let a = try string(limit: PluginLimits.maxStringArgumentBytes)
        let b = try string(limit: PluginLimits.maxStringArgumentBytes)
        let n = Int(clamping: try u64())
        switch kind {
        case 1: return .refused(action: a, message: b)
        case 2: return .invalidRequest(action: a, message: b)
        case 3: return .effectLimitReached(action: a, limit: n)
        case 4: return .describeFailed(a)
        case 5: return .snapshotFailed(a)
        case 6: return .restoreRefused(a)
        default: throw WorkerProtocol.Violation("unknown failure kind \(kind)")
        }
    }
}
