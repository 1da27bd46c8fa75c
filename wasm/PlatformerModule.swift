// platformer.wasm: the character controller statechart of Plugins/PlatformerExample behind a
// C ABI. The ABI is documented in actomaton_wasm.h.
//
// The chart is built when the module is first called: its tables are arrays on the module's
// heap (runtime.c). Sending an event then allocates only the array of its outputs.

import ActomatonCore
import PlatformerExample

let chart = try! Platformer.chart()
nonisolated(unsafe) var character = chart.machine()
/// The outputs of the last event, in order.
nonisolated(unsafe) var outputs: [Platformer.Output] = []

@_expose(wasm, "am_abi_version") @_cdecl("am_abi_version")
func abiVersion() -> Int32 { WasmABI.version }

/// Back to the initial state (idle, holstered), no history, no outputs.
@_expose(wasm, "platformer_reset") @_cdecl("platformer_reset")
func platformerReset() -> Int32 {
    character = chart.machine()
    outputs = chart.initialOutputs
    return WasmABI.ok
}

/// Sends event `kind` (0 move with `speed`, then jump, apex, leaveGround, land, hit, recover,
/// draw, holster, fire, tick); returns 1 transitioned, 2 ignored, 3 finished, 4 stopped at the
/// microstep limit, or unknownAction.
@_expose(wasm, "platformer_send") @_cdecl("platformer_send")
func platformerSend(_ kind: Int32, _ speed: Int32) -> Int32 {
    let event: Platformer.Event
    switch kind {
    case 0: event = .move(speed: Int(speed))
    case 1: event = .jump
    case 2: event = .apex
    case 3: event = .leaveGround
    case 4: event = .land
    case 5: event = .hit
    case 6: event = .recover
    case 7: event = .draw
    case 8: event = .holster
    case 9: event = .fire
    case 10: event = .tick
    default: return WasmABI.unknownAction
    }
    let reply = character.send(event)
    outputs = reply.outputs
    switch reply.status {
    case .transitioned: return 1
    case .ignored: return 2
    case .finished: return 3
    case .stoppedAtMicrostepLimit: return 4
    case .rejected: return 5
    }
}

/// The active leaves (atomic and final states), one bit per raw value of `Platformer.State`.
@_expose(wasm, "platformer_leaves") @_cdecl("platformer_leaves")
func platformerLeaves() -> Int32 {
    var bits: Int32 = 0
    for leaf in chart.activeLeaves(in: character.state) { bits |= 1 << Int32(leaf.rawValue) }
    return bits
}

/// The number of outputs of the last event.
@_expose(wasm, "platformer_output_count") @_cdecl("platformer_output_count")
func platformerOutputCount() -> Int32 { Int32(outputs.count) }

/// The raw value of the last event's output at `index`, or badArgument.
@_expose(wasm, "platformer_output") @_cdecl("platformer_output")
func platformerOutput(_ index: Int32) -> Int32 {
    guard index >= 0, Int(index) < outputs.count else { return WasmABI.badArgument }
    return Int32(outputs[Int(index)].rawValue)
}
