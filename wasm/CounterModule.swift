// counter.wasm: the smallest machine — a counter on NoOpEffectManager — behind a C ABI.
// The ABI is documented in actomaton_wasm.h.

import ActomatonCore

/// The counter's actions, by ABI code.
enum CounterAction {
    case increment, decrement, add(Int32), reset
}

struct Counter: MealyReducerProtocol {
    func reduce(_ action: CounterAction, into count: inout Int32, environment: Void) {
        switch action {
        case .increment: count &+= 1
        case .decrement: count &-= 1
        case let .add(n): count &+= n
        case .reset: count = 0
        }
    }
}

nonisolated(unsafe) var counter = MealyMachine(state: 0, reducer: Counter())

@_expose(wasm, "am_abi_version") @_cdecl("am_abi_version")
func abiVersion() -> Int32 { WasmABI.version }

@_expose(wasm, "counter_reset") @_cdecl("counter_reset")
func counterReset() -> Int32 {
    counter = MealyMachine(state: 0, reducer: Counter())
    return WasmABI.ok
}

@_expose(wasm, "counter_send") @_cdecl("counter_send")
func counterSend(_ action: Int32, _ argument: Int32) -> Int32 {
    switch action {
    case 0: counter.send(.increment)
    case 1: counter.send(.decrement)
    case 2: counter.send(.add(argument))
    case 3: counter.send(.reset)
    default: return WasmABI.unknownAction
    }
    return WasmABI.ok
}

@_expose(wasm, "counter_value") @_cdecl("counter_value")
func counterValue() -> Int32 { counter.state }
