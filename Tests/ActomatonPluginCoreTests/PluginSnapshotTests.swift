import ActomatonPluginCore
import Testing

private struct Sample: PluginSnapshotCodable, Equatable {
    var count: Int64
    var name: String
    var tags: [String]
    var on: Bool

    func encode(to writer: inout PluginSnapshotWriter) {
        writer.write(UInt8(1))
        writer.write(count)
        writer.write(name)
        writer.write(tags)
        writer.write(on)
    }

    init(count: Int64, name: String, tags: [String], on: Bool) {
        (self.count, self.name, self.tags, self.on) = (count, name, tags, on)
    }

    init(from reader: inout PluginSnapshotReader) throws(PluginSnapshotError) {
        guard try reader.read(UInt8.self) == 1 else { throw PluginSnapshotError("unknown version") }
        count = try reader.read(Int64.self)
        name = try reader.read(String.self)
        tags = try reader.read([String].self)
        on = try reader.read(Bool.self)
    }
}

@Suite("Plugin snapshot bytes")
struct PluginSnapshotTests {
    @Test func roundTrips() throws {
        let sample = Sample(count: -42, name: "héllo", tags: ["a", "", "b/c"], on: true)
        #expect(try Sample(snapshotBytes: sample.snapshotBytes) == sample)
    }

    @Test func integersAreLittleEndian() {
        var writer = PluginSnapshotWriter()
        writer.write(UInt32(0x0403_0201))
        #expect(writer.bytes == [1, 2, 3, 4])
    }

    /// Every prefix of a valid snapshot is refused with a message, never a trap.
    @Test func everyTruncationIsRefused() {
        let bytes = Sample(count: 7, name: "abc", tags: ["x"], on: false).snapshotBytes
        for length in 0..<bytes.count {
            #expect(throws: PluginSnapshotError.self) { try Sample(snapshotBytes: Array(bytes[..<length])) }
        }
    }

    @Test func trailingBytesAreRefused() {
        let bytes = Sample(count: 7, name: "abc", tags: [], on: false).snapshotBytes + [0]
        #expect(throws: PluginSnapshotError("the snapshot has 1 bytes too many")) { try Sample(snapshotBytes: bytes) }
    }

    @Test func countsPastTheBytesAreRefused() {
        // version 1, count 7, then a string claiming 4 GiB.
        let bytes: [UInt8] = [1, 7, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]
        #expect(throws: PluginSnapshotError.self) { try Sample(snapshotBytes: bytes) }
        var reader = PluginSnapshotReader([0xFF, 0xFF, 0xFF, 0x7F])
        #expect(throws: PluginSnapshotError.self) { try reader.read([String].self) }
    }

    @Test func limitsAreInclusive() throws {
        var writer = PluginSnapshotWriter()
        writer.write([UInt8](repeating: 1, count: 4))
        var atLimit = PluginSnapshotReader(writer.bytes)
        #expect(try atLimit.read([UInt8].self, limit: 4).count == 4)
        var pastLimit = PluginSnapshotReader(writer.bytes)
        #expect(throws: PluginSnapshotError.self) { try pastLimit.read([UInt8].self, limit: 3) }
    }

    @Test func invalidUTF8AndBooleansAreRefused() {
        var strings = PluginSnapshotReader([2, 0, 0, 0, 0xC3, 0x28])
        #expect(throws: PluginSnapshotError("the snapshot holds a string that is not UTF-8")) { try strings.read(String.self) }
        var booleans = PluginSnapshotReader([2])
        #expect(throws: PluginSnapshotError.self) { try booleans.read(Bool.self) }
    }
}

@Suite("JSON text")
struct JSONTextTests {
    @Test func escapesAsJSONEncoderDoes() {
        #expect(JSONText.string("a\"b\\c/d\n\t\u{1}é") == #""a\"b\\c\/d\n\t\u0001é""#)
        #expect(JSONText.object([("k", JSONText.array(["1", "null"]))]) == #"{"k":[1,null]}"#)
    }
}

@Suite("Request mappings")
struct PluginMappingTests {
    enum Action { case add(Int64), reset, rename(String) }

    let entries: [(name: String, parameters: [PluginValueType])] = [("add", [.int64]), ("reset", []), ("rename", [.string])]

    func make(_ index: Int) -> Action { [Action.add(0), .reset, .rename("")][index] }

    @Test func aFaithfulMappingPasses() {
        #expect(pluginMappingProblem(entries: entries, action: make) { action in
            switch action {
            case let .add(n): PluginCall("add", .int(n))
            case .reset: PluginCall("reset")
            case let .rename(name): PluginCall("rename", .string(name))
            }
        } == nil)
    }

    @Test func aWrongNameCountOrTypeIsNamed() {
        #expect(pluginMappingProblem(entries: entries, action: make) { action in
            if case .reset = action { return PluginCall("RESET") }
            return action.fallback
        } == "the vocabulary entry 'reset' makes an action that requests(_:) maps to 'RESET'")
        #expect(pluginMappingProblem(entries: entries, action: make) { _ in PluginCall("add") }
            == "requests(_:) maps 'add' to 0 arguments; the entry has 1 parameters")
        #expect(pluginMappingProblem(entries: entries, action: make) { _ in PluginCall("add", .string("x")) }
            == "requests(_:) maps 'add' to an argument 1 that is not a int64")
    }
}

extension PluginMappingTests.Action {
    var fallback: PluginCall {
        switch self {
        case let .add(n): PluginCall("add", .int(n))
        case .reset: PluginCall("reset")
        case let .rename(name): PluginCall("rename", .string(name))
        }
    }
}
