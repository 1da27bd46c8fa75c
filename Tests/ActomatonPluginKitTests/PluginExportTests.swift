import ActomatonCore
import ActomatonPluginABI
@testable import ActomatonPluginKit
import Synchronization
import Testing

// A plugin exported with the kit, as the README shows it, called here the way the host calls
// it: through the manifest's C function pointers, with a host table of C functions.

enum CounterAction: Sendable {
    case add(Int64)
    case reset
    case remind(note: String, times: UInt8)
}

let counter = MealyReducer<CounterAction, Int64, Void, PluginEffect<CounterAction>> { action, count, _ in
    switch action {
    case let .add(amount):
        let (sum, overflow) = count.addingReportingOverflow(amount)
        if overflow { return .fail("adding \(amount) would overflow") }
        count = sum
        return .empty
    case .reset:
        count = 0
        return .after(.seconds(2), send: .remind(note: "reset", times: 3), id: "reminder")
    case .remind:
        return .cancel(id: "reminder")
    }
}

let plugin = PluginExport(
    name: "counter",
    version: "1.0.0",
    reducer: counter,
    initialState: 0,
    actions: [
        .action("add", "amount") { (amount: Int64) in .add(amount) },
        .action("reset") { .reset },
        .action("remind", "note", "times") { (note: String, times: UInt8) in .remind(note: note, times: times) },
    ],
    requests: { action in
        switch action {
        case let .add(amount): PluginCall("add", .int(amount))
        case .reset: PluginCall("reset")
        case let .remind(note, times): PluginCall("remind", .string(note), .uint(UInt64(times)))
        }
    }
)

@_cdecl("actomaton_plugin_entry")
public func actomatonPluginEntry(_ hostABIVersion: UInt32) -> UnsafeRawPointer? {
    plugin.manifest
}

/// An action type whose `description` is not its case name: the kit used to look requested
/// actions up by `description` and refused `TIMER`.
enum ShoutingAction: Sendable, CustomStringConvertible {
    case start, timer

    var description: String { self == .start ? "START" : "TIMER" }
}

let shouting = PluginExport(
    name: "shouting",
    version: "1.0.0",
    reducer: MealyReducer<ShoutingAction, Int64, Void, PluginEffect<ShoutingAction>> { action, count, _ in
        count += 1
        return action == .start ? .after(.seconds(1), send: .timer) : .empty
    },
    initialState: 0,
    actions: [.action("start") { .start }, .action("timer") { .timer }],
    requests: { PluginCall($0 == .start ? "start" : "timer") }
)

/// A mapping that sends `timer` to an entry that does not exist: refused when the manifest is built.
let misnamed = PluginExport(
    name: "misnamed",
    version: "1.0.0",
    reducer: MealyReducer<ShoutingAction, Int64, Void, PluginEffect<ShoutingAction>> { _, _, _ in .empty },
    initialState: 0,
    actions: [.action("start") { .start }, .action("timer") { .timer }],
    requests: { PluginCall($0.description) }
)

/// A state that cannot be written as JSON (a non-finite number).
struct Unencodable: Codable, Sendable {
    var value = Double.nan
}

let unencodable = PluginExport(
    name: "unencodable",
    version: "1.0.0",
    reducer: MealyReducer<ShoutingAction, Unencodable, Void, PluginEffect<ShoutingAction>> { _, _, _ in .empty },
    initialState: Unencodable(),
    actions: [.action("start") { .start }]
)

/// What the fake host table received; C functions cannot capture, so it is global.
let received = Mutex<[String]>([])
/// What the fake host's effect functions return.
let hostAnswer = Atomic<Int32>(ACTOMATON_OK)

private func string(_ pointer: UnsafePointer<CChar>?) -> String {
    pointer.map { String(cString: $0) } ?? "NULL"
}

private func describeCall(_ call: UnsafePointer<actomaton_call>?) -> String {
    let call = call!.pointee
    var text = string(call.action)
    for index in 0..<Int(call.arg_count) {
        let value = call.args[index]
        switch value.type {
        case ACTOMATON_TYPE_STRING: text += " s:\(string(value.as.s))"
        case ACTOMATON_TYPE_UINT8: text += " u8:\(value.as.u)"
        case ACTOMATON_TYPE_INT64: text += " i64:\(value.as.i)"
        default: text += " type\(value.type)"
        }
    }
    return text
}

private func describeOptions(_ options: UnsafePointer<actomaton_effect_options>?) -> String {
    guard let options = options?.pointee else { return "no options" }
    return "id \(string(options.id)), queue \(string(options.queue)) policy \(options.policy) max \(options.max_count)"
}

func fakeHost() -> UnsafeMutablePointer<actomaton_host> {
    let host = UnsafeMutablePointer<actomaton_host>.allocate(capacity: 1)
    host.initialize(to: actomaton_host())
    host.pointee.abi_version = ACTOMATON_PLUGIN_ABI_VERSION
    host.pointee.next_action = { call in
        received.withLock { $0.append("next \(describeCall(call))") }
        return hostAnswer.load(ordering: .relaxed)
    }
    host.pointee.delayed_action = { call, delay, options in
        received.withLock { $0.append("delayed \(describeCall(call)) after \(delay)ns, \(describeOptions(options))") }
        return hostAnswer.load(ordering: .relaxed)
    }
    host.pointee.repeating_action = { call, interval, options in
        received.withLock { $0.append("repeating \(describeCall(call)) every \(interval)ns, \(describeOptions(options))") }
        return hostAnswer.load(ordering: .relaxed)
    }
    host.pointee.cancel = { id in
        received.withLock { $0.append("cancel \(string(id))") }
        return hostAnswer.load(ordering: .relaxed)
    }
    host.pointee.fail = { message in received.withLock { $0.append("fail \(string(message))") } }
    host.pointee.log = { message in received.withLock { $0.append("log \(string(message))") } }
    return host
}

typealias AddEntry = @convention(c) (UnsafeMutableRawPointer?, Int64) -> Int32
typealias NoArgumentEntry = @convention(c) (UnsafeMutableRawPointer?) -> Int32
typealias RemindEntry = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, UInt8) -> Int32

func describe(_ manifest: actomaton_manifest, _ state: UnsafeMutableRawPointer?) -> String {
    var buffer = [CChar](repeating: 0, count: 64)
    let length = manifest.describe(state, &buffer, 64)
    return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

@Suite("PluginExport: a reducer as a plugin", .serialized)
struct PluginExportTests {
    let manifest = actomatonPluginEntry(ACTOMATON_PLUGIN_ABI_VERSION)!.assumingMemoryBound(to: actomaton_manifest.self).pointee

    @Test func manifestDescribesTheVocabulary() {
        #expect(manifest.abi_version == ACTOMATON_PLUGIN_ABI_VERSION)
        #expect(String(cString: manifest.name) == "counter")
        #expect(String(cString: manifest.version) == "1.0.0")
        #expect(manifest.summary == nil)
        #expect(manifest.action_count == 3)
        let actions = (0..<3).map { manifest.actions[$0] }
        #expect(actions.map { String(cString: $0.name) } == ["add", "reset", "remind"])
        #expect(actions.map(\.parameter_count) == [1, 0, 2])
        #expect(String(cString: actions[2].parameters[0].name) == "note")
        #expect(actions[0].parameters[0].type == ACTOMATON_TYPE_INT64)
        #expect(actions[2].parameters[0].type == ACTOMATON_TYPE_STRING)
        #expect(actions[2].parameters[1].type == ACTOMATON_TYPE_UINT8)
        #expect(actions.allSatisfy { $0.entry != nil })
        #expect(manifest.create != nil && manifest.destroy != nil && manifest.snapshot != nil)
    }

    @Test func typedEntryPointsRunTheReducer() throws {
        received.withLock { $0 = [] }
        let host = fakeHost()
        defer { host.deallocate() }
        let state = manifest.create(host)
        defer { manifest.destroy(state) }
        let add = unsafeBitCast(manifest.actions[0].entry, to: AddEntry.self)
        #expect(add(state, 5) == ACTOMATON_OK)
        #expect(add(state, -2) == ACTOMATON_OK)
        #expect(describe(manifest, state) == "3")

        // A refused action: state unchanged, the reason handed to the host.
        #expect(add(state, .max) == ACTOMATON_ERROR)
        #expect(describe(manifest, state) == "3")
        #expect(received.withLock { $0 } == ["fail adding 9223372036854775807 would overflow"])
    }

    @Test func effectsBecomeHostCallsWithTypedValues() throws {
        received.withLock { $0 = [] }
        let host = fakeHost()
        defer { host.deallocate() }
        let state = manifest.create(host)
        defer { manifest.destroy(state) }
        let add = unsafeBitCast(manifest.actions[0].entry, to: AddEntry.self)
        let reset = unsafeBitCast(manifest.actions[1].entry, to: NoArgumentEntry.self)
        let remind = unsafeBitCast(manifest.actions[2].entry, to: RemindEntry.self)
        #expect(add(state, 7) == ACTOMATON_OK)
        #expect(reset(state) == ACTOMATON_OK)
        #expect(describe(manifest, state) == "0")
        #expect(remind(state, "x", 1) == ACTOMATON_OK)
        #expect(received.withLock { $0 } == [
            "delayed remind s:reset u8:3 after 2000000000ns, id reminder, queue NULL policy 0 max 0",
            "cancel reminder",
        ])

        // When the host refuses a request, the action fails and the state is unchanged.
        #expect(add(state, 7) == ACTOMATON_OK)
        hostAnswer.store(ACTOMATON_INVALID_REQUEST, ordering: .relaxed)
        defer { hostAnswer.store(ACTOMATON_OK, ordering: .relaxed) }
        #expect(reset(state) == ACTOMATON_INVALID_REQUEST)
        #expect(describe(manifest, state) == "7")
    }

    @Test func snapshotAndRestore() throws {
        received.withLock { $0 = [] }
        let host = fakeHost()
        defer { host.deallocate() }
        let state = manifest.create(host)
        defer { manifest.destroy(state) }
        let add = unsafeBitCast(manifest.actions[0].entry, to: AddEntry.self)
        #expect(add(state, 42) == ACTOMATON_OK)
        #expect(manifest.snapshot(state, nil, 0) == 2)
        var bytes = [UInt8](repeating: 0, count: 2)
        #expect(manifest.snapshot(state, &bytes, 2) == 2)
        #expect(bytes == Array("42".utf8))

        let other = manifest.create(host)
        defer { manifest.destroy(other) }
        #expect(manifest.restore(other, bytes, bytes.count) == ACTOMATON_OK)
        #expect(describe(manifest, other) == "42")
        let garbage = Array("not json".utf8)
        #expect(manifest.restore(other, garbage, garbage.count) == ACTOMATON_ERROR)
        #expect(describe(manifest, other) == "42")
        #expect(received.withLock { $0 }.first?.hasPrefix("fail cannot read the snapshot") == true)
    }

    @Test func requestedActionsGoThroughTheMapping() throws {
        let manifest = shouting.manifest.load(as: actomaton_manifest.self)
        let host = fakeHost()
        let state = try #require(manifest.create(host))
        defer { manifest.destroy(state) }
        received.withLock { $0.removeAll() }
        let start = unsafeBitCast(manifest.actions[0].entry, to: (@convention(c) (UnsafeMutableRawPointer?) -> Int32).self)
        #expect(start(state) == ACTOMATON_OK)
        #expect(received.withLock { $0 }.first?.hasPrefix("delayed timer ") == true, "\(received.withLock { $0 })")
    }

    @Test func aMappingThatDoesNotMapTheVocabularyBackIsRefusedAtLoad() {
        let manifest = misnamed.manifest.load(as: actomaton_manifest.self)
        #expect(manifest.create == nil)
        #expect(shouting.manifest.load(as: actomaton_manifest.self).create != nil)
        #expect(PluginExport<MealyReducer<ShoutingAction, Int64, Void, PluginEffect<ShoutingAction>>>.vocabularyProblem(
            misnamed.actions, misnamed.requests) == "the vocabulary entry 'start' makes an action that requests(_:) maps to 'START'")
    }

    /// A snapshot that cannot be written used to come back as an empty snapshot; now it fails
    /// (a size past the contract's limit) and says why in the host's log.
    @Test func aSnapshotThatCannotBeWrittenFailsAndSaysWhy() throws {
        received.withLock { $0 = [] }
        let manifest = unencodable.manifest.load(as: actomaton_manifest.self)
        let host = fakeHost()
        defer { host.deallocate() }
        let state = try #require(manifest.create(host))
        defer { manifest.destroy(state) }
        #expect(manifest.snapshot(state, nil, 0) == Int(ACTOMATON_MAX_SNAPSHOT_SIZE) + 1)
        #expect(received.withLock { $0 }.first?.hasPrefix("log cannot write the snapshot: ") == true, "\(received.withLock { $0 })")
    }

    @Test func durationsBecomeNanoseconds() {
        #expect(nanoseconds(.milliseconds(1500)) == 1_500_000_000)
        #expect(nanoseconds(.seconds(-1)) == 0)
    }
}
