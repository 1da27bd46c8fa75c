import ActomatonCore
import TicTacToeExample
import Testing

@Suite("tictactoe.wasm and counter.wasm against native machines")
struct TicTacToeWasmTests {
    /// The reply code the module's ABI uses for a native reply.
    private func code(_ reply: TicTacToe.Reply) -> Int32 {
        switch reply {
        case .moved: 1
        case .finished(.won(.x)): 2
        case .finished(.won(.o)): 3
        case .finished(.draw): 4
        case .restarted: 5
        case let .rejected(reason): -10 - Int32(reason.rawValue)
        }
    }

    /// Random moves, legal or not, plus restarts and unknown action codes.
    @Test func randomGamesMatchTheNativeRules() throws {
        let wasm = try WasmModule("tictactoe")
        #expect(try wasm.call("am_abi_version") == 1)
        #expect(try wasm.call("ttt_reset") == 0)
        var native = MealyMachine(state: TicTacToe.State(), reducer: TicTacToe(), effectManager: ReplyEffectManager())
        var random = SplitMix64(seed: 9)
        for step in 0..<3_000 {
            let row = Int32(random.next() % 5) - 1, column = Int32(random.next() % 5) - 1
            switch random.next() % 40 {
            case 0:
                #expect(try wasm.call("ttt_send", 1, 0, 0) == code(native.send(.restart)))
            case 1:
                #expect(try wasm.call("ttt_send", 7, row, column) == -2, "unknown action")
            default:
                #expect(try wasm.call("ttt_send", 0, row, column) == code(native.send(.place(row: Int(row), column: Int(column)))),
                        "step \(step)")
            }
            for r in 0..<3 {
                for c in 0..<3 {
                    #expect(try wasm.call("ttt_square", Int32(r), Int32(c)) == Int32(native.state[r, c]?.rawValue ?? 0))
                }
            }
            #expect(try wasm.call("ttt_next_player") == Int32(native.state.nextPlayer.rawValue))
            let outcome: Int32 = switch native.state.outcome {
            case nil: 0
            case .won(.x): 1
            case .won(.o): 2
            case .draw: 3
            }
            #expect(try wasm.call("ttt_outcome") == outcome)
        }
        #expect(try wasm.call("ttt_square", 3, 0) == -3)
    }

    @Test func counterMatchesASwitchOnInt32() throws {
        let wasm = try WasmModule("counter")
        #expect(try wasm.call("counter_reset") == 0)
        var expected: Int32 = 0
        var random = SplitMix64(seed: 3)
        for _ in 0..<2_000 {
            let action = Int32(random.next() % 6), argument = Int32(truncatingIfNeeded: random.next())
            switch action {
            case 0: expected &+= 1
            case 1: expected &-= 1
            case 2: expected &+= argument
            case 3: expected = 0
            default: break
            }
            #expect(try wasm.call("counter_send", action, argument) == (action < 4 ? 0 : -2))
            #expect(try wasm.call("counter_value") == expected)
        }
    }
}
