import ActomatonCore
import PlatformerExample
import Testing

@Suite("platformer.wasm against the native chart")
struct PlatformerWasmTests {
    /// The module's code for an event (`platformer_send`'s kind and speed).
    private func code(_ event: Platformer.Event) -> (kind: Int32, speed: Int32) {
        switch event {
        case let .move(speed): (0, Int32(speed))
        case .jump: (1, 0)
        case .apex: (2, 0)
        case .leaveGround: (3, 0)
        case .land: (4, 0)
        case .hit: (5, 0)
        case .recover: (6, 0)
        case .draw: (7, 0)
        case .holster: (8, 0)
        case .fire: (9, 0)
        case .tick: (10, 0)
        case .reload: (11, 0)
        }
    }

    /// The module's code for a status.
    private func code(_ status: StatechartStatus) -> Int32 {
        switch status {
        case .transitioned: 1
        case .ignored: 2
        case .finished: 3
        case .stoppedAtMicrostepLimit: 4
        case .stoppedAtRaisedEventLimit: 5
        case .rejected: -2
        }
    }

    /// The leaves as the module's bit set.
    private func bits(_ leaves: [Platformer.State]) -> Int32 {
        leaves.reduce(0) { $0 | 1 << Int32($1.rawValue) }
    }

    /// Random events of every kind (speeds from -2 to 9) and unknown kinds: same status, same
    /// leaves, same outputs in the same order, after every one.
    @Test func randomEventsMatchTheNativeChart() throws {
        let wasm = try WasmModule("platformer")
        #expect(try wasm.call("am_abi_version") == 1)
        #expect(try wasm.call("platformer_reset") == 0)
        let chart = try Platformer.chart()
        var native = chart.machine()
        #expect(try wasm.call("platformer_leaves") == bits([.idle, .holstered]))
        #expect(try wasm.call("platformer_output_count") == 0)
        var random = SplitMix64(seed: 21)
        var seen = Set<Int32>()
        for step in 0..<5_000 {
            switch random.next() % 60 {
            case 0:
                #expect(try wasm.call("platformer_reset") == 0)
                native = chart.machine()
                continue
            case 1:
                #expect(try wasm.call("platformer_send", 12 + Int32(random.next() % 5), 0) == -2, "unknown kind")
            default:
                let event = Platformer.sampleEvents[Int(random.next() % UInt64(Platformer.sampleEvents.count))]
                let sent: Platformer.Event = if case .move = event { .move(speed: Int(random.next() % 12) - 2) } else { event }
                let reply = native.send(sent)
                let (kind, speed) = code(sent)
                #expect(try wasm.call("platformer_send", kind, speed) == code(reply.status), "step \(step): \(sent)")
                let count = try wasm.call("platformer_output_count")
                try #require(count == Int32(reply.outputs.count), "step \(step)")
                for (index, output) in reply.outputs.enumerated() {
                    #expect(try wasm.call("platformer_output", Int32(index)) == Int32(output.rawValue))
                }
                #expect(try wasm.call("platformer_output", count) == -3)
            }
            let leaves = try wasm.call("platformer_leaves")
            #expect(leaves == bits(chart.activeLeaves(in: native.state)), "step \(step)")
            seen.insert(leaves)
        }
        #expect(try wasm.call("platformer_output", -1) == -3)
        #expect(seen.count >= 15, "the random events reach most configurations: \(seen.count)")
    }

    /// The README and the docs call the module 17 KB, with the chart compiled into tables: most
    /// of it is the table, 210 states × 14 event classes since the chart carries data (it was
    /// 5 KB before, 30 states × 13).
    @Test func theModuleIsAbout17KB() throws {
        let size = try WasmModule.size(of: "platformer")
        #expect(size > 0 && size <= 17_408, "platformer.wasm is \(size) bytes")
    }

    /// The module keeps an event's outputs in a buffer of eight: the tables it embeds must never
    /// emit more in one event.
    @Test func theLongestOutputSequenceFitsTheModulesBuffer() {
        #expect(Platformer.embeddedChart.tables.longestOutputSequence == 2)
    }
}
