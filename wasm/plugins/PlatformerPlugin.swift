// The platformer wasm plugin: the shared reducer of Plugins/PlatformerPlugin/Character.swift
// (which platformer.so exports with ActomatonPluginKit), exported with the wasm kit. The chart
// is built when the module first runs the reducer; its tables live on the module's heap.
import ActomatonPluginCore
import ActomatonWasmKit
import PlatformerExample

let platformer = WasmPlugin(
    name: "platformer",
    version: "1.1.0",
    summary: "A platformer character controller, a statechart from PlatformerExample (Embedded Swift, WebAssembly)",
    reducer: characterReducer,
    initialState: Character(),
    actions: Platformer.Event.vocabulary,
    requests: { $0.call },
    diagram: Character.diagram
)

@_cdecl("actomaton_wasm_plugin")
func plugin() -> UnsafeMutableRawPointer { platformer.handle }

@_expose(wasm, "actomaton_action_move") @_cdecl("actomaton_action_move")
func move(_ speed: Int32) -> Int32 { platformer.send(.move(speed: Int(speed))) }

@_expose(wasm, "actomaton_action_jump") @_cdecl("actomaton_action_jump")
func jump() -> Int32 { platformer.send(.jump) }

@_expose(wasm, "actomaton_action_apex") @_cdecl("actomaton_action_apex")
func apex() -> Int32 { platformer.send(.apex) }

@_expose(wasm, "actomaton_action_leaveGround") @_cdecl("actomaton_action_leaveGround")
func leaveGround() -> Int32 { platformer.send(.leaveGround) }

@_expose(wasm, "actomaton_action_land") @_cdecl("actomaton_action_land")
func land() -> Int32 { platformer.send(.land) }

@_expose(wasm, "actomaton_action_hit") @_cdecl("actomaton_action_hit")
func hit() -> Int32 { platformer.send(.hit) }

@_expose(wasm, "actomaton_action_recover") @_cdecl("actomaton_action_recover")
func recover() -> Int32 { platformer.send(.recover) }

@_expose(wasm, "actomaton_action_draw") @_cdecl("actomaton_action_draw")
func draw() -> Int32 { platformer.send(.draw) }

@_expose(wasm, "actomaton_action_holster") @_cdecl("actomaton_action_holster")
func holster() -> Int32 { platformer.send(.holster) }

@_expose(wasm, "actomaton_action_fire") @_cdecl("actomaton_action_fire")
func fire() -> Int32 { platformer.send(.fire) }

@_expose(wasm, "actomaton_action_tick") @_cdecl("actomaton_action_tick")
func tick() -> Int32 { platformer.send(.tick) }

@_expose(wasm, "actomaton_action_reload") @_cdecl("actomaton_action_reload")
func reload() -> Int32 { platformer.send(.reload) }
