import ActomatonPluginABI
import ActomatonPluginContract
import Testing

@Suite("The contract in Swift: types, policies, C strings")
struct ContractTests {
    @Test func integerRanges() {
        #expect(PluginValueType.int8.accepts(Int64(127)) && !PluginValueType.int8.accepts(Int64(128)))
        #expect(PluginValueType.int8.accepts(Int64(-128)) && !PluginValueType.int8.accepts(Int64(-129)))
        #expect(PluginValueType.uint8.accepts(Int64(255)) && !PluginValueType.uint8.accepts(Int64(256)) && !PluginValueType.uint8.accepts(Int64(-1)))
        #expect(PluginValueType.int64.accepts(UInt64(Int64.max)) && !PluginValueType.int64.accepts(UInt64(Int64.max) + 1))
        #expect(PluginValueType.uint64.accepts(UInt64.max))
        #expect(PluginValueType.uint32.accepts(UInt64(UInt32.max)) && !PluginValueType.uint32.accepts(UInt64(UInt32.max) + 1))
        #expect(!PluginValueType.string.accepts(Int64(0)) && !PluginValueType.double.accepts(UInt64(0)))
    }

    @Test func typesMatchTheHeader() {
        #expect(PluginValueType(abiType: ACTOMATON_TYPE_BOOL) == .bool)
        #expect(PluginValueType(abiType: ACTOMATON_TYPE_STRING) == .string)
        #expect(PluginValueType(abiType: 0) == nil && PluginValueType(abiType: 13) == nil)
        #expect(PluginValueType.allCases.allSatisfy { PluginValueType(abiType: $0.abiType) == $0 })
        #expect(PluginValueType.allCases.map(\.description) == [
            "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float", "double", "string",
        ])
    }

    @Test func queuePoliciesMatchTheHeader() {
        let policies: [PluginQueuePolicy] = [.runNewest(maxCount: 1), .runOldest(maxCount: 2, discardNew: false), .runOldest(maxCount: 3, discardNew: true)]
        #expect(policies.map(\.abiPolicy) == [ACTOMATON_QUEUE_RUN_NEWEST, ACTOMATON_QUEUE_RUN_OLDEST_SUSPEND_NEW, ACTOMATON_QUEUE_RUN_OLDEST_DISCARD_NEW])
        #expect(policies.allSatisfy { PluginQueuePolicy(abiPolicy: $0.abiPolicy, maxCount: $0.maxCount) == $0 })
        #expect(PluginQueuePolicy(abiPolicy: 0, maxCount: 1) == nil && PluginQueuePolicy(abiPolicy: 4, maxCount: 1) == nil)
    }

    @Test func cStringsAreBounded() throws {
        let text: [CChar] = Array("abcd".utf8CString)
        let atLimit = text.withUnsafeBufferPointer { try? CString.read($0.baseAddress, limit: 4) }
        #expect(atLimit == "abcd")
        _ = text.withUnsafeBufferPointer { buffer in
            #expect(throws: CString.Problem.tooLong(limit: 3)) { try CString.read(buffer.baseAddress, limit: 3) }
        }
        #expect(try CString.read(nil, limit: 4) == nil)
        let invalid: [CChar] = [CChar(bitPattern: 0xC3), 0x28, 0]
        _ = invalid.withUnsafeBufferPointer { buffer in
            #expect(throws: CString.Problem.invalidUTF8) { try CString.read(buffer.baseAddress, limit: 8) }
        }
    }

    @Test func quotedStrings() {
        #expect(PluginValue.quoted("a \"b\"\\\n\t\u{1}") == #""a \"b\"\\\n\t\u{1}""#)
        #expect(PluginValue.string("x").description == #""x""#)
    }
}
