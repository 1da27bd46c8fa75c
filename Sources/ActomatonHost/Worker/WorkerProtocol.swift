import ActomatonPluginContract

/// The protocol between `actomaton-host` and a plugin's worker process, version 3.
///
/// A worker is the same executable started in worker mode, sharing two byte rings with the
/// host (a memory file, its descriptor 5) and connected to it by a Unix stream socket pair
/// (its end is descriptor 3) that only wakes a side and says when the other is gone (see
/// `WorkerChannel`). Each side writes frames and reads the other's:
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
///     host → worker   perform(action) | snapshot | restore(bytes) | describe | active
///     worker → host   performed(requests) | failed(reason) | snapshotTaken(bytes)
///                     | restored | described(string) | activeNodes(nodes)
///     worker → host   log(string)                              at any time before a reply
///
///     manifest = abi:u32 name:string version:string hasSummary:u8 [summary:string]
///                count:u32 (name:string parameterCount:u32 (name:string type:u32)*)*
///                and from ABI version 2: hasDiagram:u8 [diagram:string] namesActive:u32 (0 or 1)
///     nodes    = hasNodes:u8 [count:u32 name:string*]   (none: the plugin has no `active`)
///     requests = count:u32 request*;  request = kind:u8 (1 next, 2 delayed, 3 repeating,
///                4 cancel) then action [nanoseconds:u64 options] | id:string
///     options  = hasID:u8 [id:string] hasQueue:u8 [name:string policy:u8 (ACTOMATON_QUEUE_*) maxCount:u32]
///     reason   = kind:u8 a:string b:string n:u64   (see `WorkerProtocol/encode(_:)`)
///
/// In Swift the frames are ``WorkerRequest`` and ``WorkerReply``, encoded and decoded in this
/// file only; ``WorkerChannel`` carries them.
///
/// Both sides check every frame: a length past ``maxFrameBytes``, an unknown tag, a field
/// past its cap, a count past the contract's limits, trailing bytes, or a frame that is not
/// the expected answer is a protocol error. A worker is as untrusted as the plugin in it: the
/// host treats a protocol error like a crash (kills the worker and restarts it).
enum WorkerProtocol {
    /// The version both sides speak; the worker says it first. Version 2 added the diagram to
    /// the manifest and the `active` request; version 3 moved the frames into shared rings.
    static let version: UInt32 = 3
    /// The largest frame: a snapshot at the contract's limit, plus room for the header.
    static let maxFrameBytes = PluginLimits.maxSnapshotBytes + 4096
    /// The most effect requests one action may return through a worker: as many as it may make.
    static let maxRequests = PluginLimits.maxRequestsPerAction
    /// The longest plugin path in a `load` request (Linux's `PATH_MAX`).
    static let maxPathBytes = 4096
    /// The longest entry symbol name in a `load` request.
    static let maxEntrySymbolBytes = 256
    /// The longest `loadFailed` message.
    static let maxLoadFailureBytes = 4096
    /// The longest `log` line: a plugin's message at its limit, and room for its prefix.
    // A message's bad bytes are shown as `\\xHH`, four bytes each, and a cut one gets a note.
    static let maxLogLineBytes = 4 * PluginLimits.maxMessageBytes + 64

    /// What a frame is.
    enum Tag: UInt8, CustomStringConvertible {
        // host → worker
        case load = 1, perform = 2, snapshot = 3, restore = 4, describe = 5, active = 6
        // worker → host
        case hello = 64, loaded = 65, loadFailed = 66, performed = 67, failed = 68
        case snapshotTaken = 69, restored = 70, described = 71, log = 72, activeNodes = 73

        var description: String {
            switch self {
            case .load: "load"
            case .perform: "perform"
            case .snapshot: "snapshot"
            case .restore: "restore"
            case .describe: "describe"
            case .active: "active"
            case .hello: "hello"
            case .loaded: "loaded"
            case .loadFailed: "loadFailed"
            case .performed: "performed"
            case .failed: "failed"
            case .snapshotTaken: "snapshotTaken"
            case .restored: "restored"
            case .described: "described"
            case .log: "log"
            case .activeNodes: "activeNodes"
            }
        }
    }

    /// A frame that breaks the protocol, and how: one line.
    struct Violation: Error, Equatable, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }

        /// `reply` is not an answer to `request`.
        static func unexpected(_ reply: WorkerReply, answering request: WorkerProtocol.Tag) -> Violation {
            Violation("a \(reply.tag) frame answered \(request)")
        }
    }
}

// MARK: The conversation, typed

/// What the host asks of a worker: one frame host → worker (see ``WorkerProtocol``).
enum WorkerRequest: Equatable, Sendable {
    /// Load the plugin at `path` (as `Plugin.load` would in-process) and create its state.
    case load(path: String, entrySymbol: String, maxFileSize: Int64, allowWritableByOthers: Bool)
    /// Run the action `name` with `arguments`; the worker checks them against its plugin.
    case perform(name: String, arguments: [PluginValue])
    /// Take a snapshot of the state.
    case snapshot
    /// Replace the state with one read from these bytes.
    case restore([UInt8])
    /// Describe the state.
    case describe
    /// Name the diagram's nodes active in the state.
    case active

    /// The request's kind.
    var tag: WorkerProtocol.Tag {
        switch self {
        case .load: .load
        case .perform: .perform
        case .snapshot: .snapshot
        case .restore: .restore
        case .describe: .describe
        case .active: .active
        }
    }

    /// The whole frame, length first.
    var frame: [UInt8] {
        var writer = FrameWriter(tag)
        switch self {
        case let .load(path, entrySymbol, maxFileSize, allowWritableByOthers):
            writer.string(path)
            writer.string(entrySymbol)
            writer.u64(UInt64(clamping: maxFileSize))
            writer.bool(allowWritableByOthers)
        case let .perform(name, arguments):
            writer.action(name: name, arguments: arguments)
        case .snapshot, .describe, .active:
            break
        case let .restore(bytes):
            writer.data(bytes)
        }
        return writer.finished()
    }

    /// Decodes a frame's tag and payload; any malformed frame is one ``WorkerProtocol/Violation``.
    init(tag code: UInt8, payload: [UInt8]) throws(WorkerProtocol.Violation) {
        guard let tag = WorkerProtocol.Tag(rawValue: code) else { throw .init("unknown frame tag \(code)") }
        var reader = FrameReader(payload: payload)
        do {
            switch tag {
            case .load:
                self = .load(path: try reader.string(limit: WorkerProtocol.maxPathBytes),
                             entrySymbol: try reader.string(limit: WorkerProtocol.maxEntrySymbolBytes),
                             maxFileSize: Int64(clamping: try reader.u64()), allowWritableByOthers: try reader.bool())
            case .perform:
                let (name, arguments) = try reader.action()
                self = .perform(name: name, arguments: arguments)
            case .snapshot: self = .snapshot
            case .restore: self = .restore(try reader.data(limit: PluginLimits.maxSnapshotBytes))
            case .describe: self = .describe
            case .active: self = .active
            default: throw WorkerProtocol.Violation("a \(tag) frame is not a request")
            }
            try reader.finish()
        } catch {
            throw .init("a malformed \(tag) frame: \(error)")
        }
    }
}

/// What a worker says to the host: one frame worker → host (see ``WorkerProtocol``).
enum WorkerReply: Equatable, Sendable {
    /// The worker's first frame: the protocol version it speaks.
    case hello(version: UInt32)
    /// The plugin is loaded and its state created; its manifest, validated again by the host.
    case loaded(PluginManifest)
    /// The plugin could not be loaded; why, one line.
    case loadFailed(String)
    /// The action ran; the effects it requested.
    case performed([PluginEffectRequest])
    /// The action, snapshot, restore or description failed; why.
    case failed(PluginCallError.Reason)
    /// The snapshot's bytes.
    case snapshotTaken([UInt8])
    /// The state was replaced.
    case restored
    /// The description of the state.
    case described(String)
    /// A line the plugin logged; may come at any time before a reply.
    case log(String)
    /// The names of the diagram's nodes active in the state; `nil` when the plugin names none.
    case activeNodes([String]?)

    /// The reply's kind.
    var tag: WorkerProtocol.Tag {
        switch self {
        case .hello: .hello
        case .loaded: .loaded
        case .loadFailed: .loadFailed
        case .performed: .performed
        case .failed: .failed
        case .snapshotTaken: .snapshotTaken
        case .restored: .restored
        case .described: .described
        case .log: .log
        case .activeNodes: .activeNodes
        }
    }

    /// The whole frame, length first.
    var frame: [UInt8] {
        var writer = FrameWriter(tag)
        switch self {
        case let .hello(version): writer.u32(version)
        case let .loaded(manifest): writer.manifest(manifest)
        case let .loadFailed(message): writer.string(message)
        case let .performed(requests): writer.requests(requests)
        case let .failed(reason): writer.reason(reason)
        case let .snapshotTaken(bytes): writer.data(bytes)
        case .restored: break
        case let .described(text): writer.string(text)
        case let .log(line): writer.string(line)
        case let .activeNodes(names):
            writer.bool(names != nil)
            if let names {
                writer.u32(UInt32(truncatingIfNeeded: names.count))
                for name in names { writer.string(name) }
            }
        }
        return writer.finished()
    }

    /// Decodes a frame's tag and payload; any malformed frame is one ``WorkerProtocol/Violation``.
    ///
    /// - Parameter plugin: The plugin loaded, whose vocabulary every effect request of a
    ///   `performed` frame is checked against; `nil` before it is loaded.
    init(tag code: UInt8, payload: [UInt8], vocabulary plugin: Plugin?) throws(WorkerProtocol.Violation) {
        guard let tag = WorkerProtocol.Tag(rawValue: code) else { throw .init("unknown frame tag \(code)") }
        var reader = FrameReader(payload: payload)
        do {
            switch tag {
            case .hello: self = .hello(version: try reader.u32())
            case .loaded: self = .loaded(try reader.manifest())
            case .loadFailed: self = .loadFailed(try reader.string(limit: WorkerProtocol.maxLoadFailureBytes))
            case .performed:
                guard let plugin else { throw WorkerProtocol.Violation("it came before a plugin was loaded") }
                self = .performed(try reader.requests(checkedAgainst: plugin))
            case .failed: self = .failed(try reader.reason())
            case .snapshotTaken: self = .snapshotTaken(try reader.data(limit: PluginLimits.maxSnapshotBytes))
            case .restored: self = .restored
            case .described: self = .described(try reader.string(limit: PluginLimits.maxDescriptionBytes))
            case .log: self = .log(try reader.string(limit: WorkerProtocol.maxLogLineBytes))
            case .activeNodes: self = .activeNodes(try reader.activeNodes())
            default: throw WorkerProtocol.Violation("a \(tag) frame is not a reply")
            }
            try reader.finish()
        } catch {
            throw .init("a malformed \(tag) frame: \(error)")
        }
    }
}

/// Builds a frame's payload.
private struct FrameWriter {
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
private struct FrameReader {
    private let bytes: [UInt8]
    private var offset: Int

    /// Reads the payload of `frame` (tag excluded).
    init(payload bytes: [UInt8]) {
        self.bytes = bytes
        offset = 0
    }

    mutating func take(_ count: Int) throws(WorkerProtocol.Violation) -> ArraySlice<UInt8> {
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
        if manifest.abiVersion >= 2 {
            bool(manifest.diagram != nil)
            if let diagram = manifest.diagram { string(diagram) }
            u32(manifest.namesActiveNodes ? 1 : 0)
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
        // An action's text is cut as every error line cuts it: whole, it could pass a string's limit.
        case let .refused(action, message): put(1, PluginLimits.echo(action), message)
        case let .invalidRequest(action, message): put(2, PluginLimits.echo(action), message)
        case let .effectLimitReached(action, limit): put(3, PluginLimits.echo(action), "", limit)
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

/// A manifest's fields in frame order: `hasSummary:u8` before the summary and `hasDiagram:u8`
/// before the diagram, every other text a string, every number a `u32`.
private struct FrameManifestSource: ManifestSource {
    var reader: FrameReader
    /// What was wrong with the frame itself, as opposed to the manifest in it.
    var violation: WorkerProtocol.Violation?

    mutating func text(_ field: ManifestField, limit: Int, what: String) throws(PluginManifestError) -> ManifestText {
        do {
            if field == .summary || field == .diagram, try !reader.bool() { return .absent }
            let length = Int(try reader.u32())
            guard length <= limit else { return .tooLong }
            return String(validating: try reader.take(length), as: UTF8.self).map(ManifestText.text) ?? .invalidUTF8
        } catch {
            violation = error
            throw .invalid(error.description)
        }
    }

    mutating func number(_ field: ManifestField, what: String) throws(PluginManifestError) -> UInt32 {
        do {
            return try reader.u32()
        } catch {
            violation = error
            throw .invalid(error.description)
        }
    }
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
        let name = try string(limit: ManifestLimits.maxNameBytes)
        let count = try self.count(limit: ManifestLimits.maxParameters, of: "arguments")
        var arguments: [PluginValue] = []
        for _ in 0..<count { arguments.append(try value()) }
        return (name, arguments)
    }

    /// A manifest, checked by the contract's rules with ``ManifestValidator`` (the worker is
    /// not trusted to have).
    mutating func manifest() throws(WorkerProtocol.Violation) -> PluginManifest {
        let abi = try u32()
        guard ManifestReader.supportedABIVersions.contains(abi) else {
            throw WorkerProtocol.Violation("the manifest has ABI version \(abi), not one of \(ManifestReader.oldestSupportedABIVersion) to \(ManifestReader.supportedABIVersion)")
        }
        var source = FrameManifestSource(reader: self)
        do {
            let manifest = try ManifestValidator.read(&source, abiVersion: abi)
            self = source.reader
            return manifest
        } catch {
            throw source.violation ?? WorkerProtocol.Violation("the manifest breaks the contract: \(error)")
        }
    }

    /// Active node names, checked by the contract's rules with `ActiveNodes.check(_:)` (the
    /// worker is not trusted to have).
    mutating func activeNodes() throws(WorkerProtocol.Violation) -> [String]? {
        guard try bool() else { return nil }
        let count = try self.count(limit: ActiveNodes.maxCount, of: "active nodes")
        var names: [String] = []
        for _ in 0..<count { names.append(try string(limit: ActiveNodes.maxNameBytes)) }
        do throws(ActiveNodes.Problem) {
            try ActiveNodes.check(names)
        } catch {
            throw WorkerProtocol.Violation("\(error)")
        }
        return names
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
