// platformer.wasm: the character controller statechart of Plugins/PlatformerExample behind a
// C ABI. The ABI is documented in actomaton_wasm.h.
//
// The module runs the chart compiled into tables (Plugins/PlatformerExample/PlatformerTables.swift,
// generated from the chart and checked current by a test): an event is one table lookup, and
// neither the chart's definition nor its compiler is in the module. Sending allocates nothing.

import ActomatonCore
import PlatformerExample

var character: CompiledStatechart<Platformer.State, Platformer.Event, Platformer.Output> { Platformer.embeddedChart }
nonisolated(unsafe) var state = character.initialState
nonisolated(unsafe) var outputs = LastOutputs()

/// The outputs of the last event, in order. The platformer's longest output sequence is 2
/// (a test checks the tables), so eight always hold them.
struct LastOutputs: OutputSink {
    static let capacity = 8
    var values: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0)
    var count = 0

    /// Keeps `output`; past the capacity it is only counted, so `platformer_output` refuses
    /// what it cannot give rather than give a wrong value (a test keeps this from happening).
    mutating func receive(_ output: Platformer.Output) {
        if count < Self.capacity {
            withUnsafeMutableBytes(of: &values) { $0[count] = output.rawValue }
        }
        count += 1
    }

    func value(at index: Int) -> UInt8? {
        guard index >= 0, index < count, index < Self.capacity else { return nil }
        return withUnsafeBytes(of: values) { $0[index] }
    }
}

@_expose(wasm, "am_abi_version") @_cdecl("am_abi_version")
func abiVersion() -> Int32 { WasmABI.version }

/// Back to the initial state (idle, holstered), no history, no outputs.
@_expose(wasm, "platformer_reset") @_cdecl("platformer_reset")
func platformerReset() -> Int32 {
    state = character.initialState
    outputs = LastOutputs()
    character.emitInitialOutputs(into: &outputs)
    return WasmABI.ok
}

/// Sends event `kind` (0 move with `speed`, then jump, apex, leaveGround, land, hit, recover,
/// draw, holster, fire, tick, reload); returns 1 transitioned, 2 ignored, 3 finished, 4 stopped at the
/// microstep limit, 5 stopped at the raised-event limit (the platformer raises no event), or
/// unknownAction.
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
    case 11: event = .reload
    default: return WasmABI.unknownAction
    }
    outputs = LastOutputs()
    switch character.send(event, to: &state, outputs: &outputs) {
    case .transitioned: return 1
    case .ignored: return 2
    case .finished: return 3
    case .stoppedAtMicrostepLimit: return 4
    case .stoppedAtRaisedEventLimit: return 5
    case .rejected: return WasmABI.unknownAction
    }
}

/// The active leaves (atomic and final states), one bit per raw value of `Platformer.State`.
@_expose(wasm, "platformer_leaves") @_cdecl("platformer_leaves")
func platformerLeaves() -> Int32 {
    let active = character.configuration(of: state)
    var bits: Int32 = 0
    for leaf in character.tables.leaves where active.contains(Int(leaf)) { bits |= 1 << Int32(leaf) }
    return bits
}

/// The number of outputs of the last event.
@_expose(wasm, "platformer_output_count") @_cdecl("platformer_output_count")
func platformerOutputCount() -> Int32 { Int32(outputs.count) }

/// The raw value of the last event's output at `index`, or badArgument.
@_expose(wasm, "platformer_output") @_cdecl("platformer_output")
func platformerOutput(_ index: Int32) -> Int32 {
    guard let value = outputs.value(at: Int(index)) else { return WasmABI.badArgument }
    return Int32(value)
}
