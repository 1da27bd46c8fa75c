// The login wasm plugin: the shared reducer of Plugins/LoginPlugin/Login.swift (which
// login.so exports with ActomatonPluginKit), exported with the wasm kit. Its timers are
// effect requests the host runs on its EffectQueueManager, as for login.so.
import ActomatonPluginCore
import ActomatonWasmKit

let login = WasmPlugin(
    name: "login",
    version: "1.0.0",
    summary: "A login / logout flow with a session timer (Embedded Swift, WebAssembly)",
    reducer: loginReducer,
    initialState: Session(),
    actions: LoginAction.vocabulary,
    requests: { $0.call }
)

@_cdecl("actomaton_wasm_plugin")
func plugin() -> UnsafeMutableRawPointer { login.handle }

@_expose(wasm, "actomaton_action_login") @_cdecl("actomaton_action_login")
func loginAction(_ user: UInt32, _ length: UInt32) -> Int32 { login.send(.login(user: wasmString(user, length))) }

@_expose(wasm, "actomaton_action_loginOK") @_cdecl("actomaton_action_loginOK")
func loginOK() -> Int32 { login.send(.loginOK) }

@_expose(wasm, "actomaton_action_logout") @_cdecl("actomaton_action_logout")
func logout() -> Int32 { login.send(.logout) }

@_expose(wasm, "actomaton_action_logoutOK") @_cdecl("actomaton_action_logoutOK")
func logoutOK() -> Int32 { login.send(.logoutOK) }

@_expose(wasm, "actomaton_action_forceLogout") @_cdecl("actomaton_action_forceLogout")
func forceLogout() -> Int32 { login.send(.forceLogout) }

@_expose(wasm, "actomaton_action_tick") @_cdecl("actomaton_action_tick")
func tick() -> Int32 { login.send(.tick) }
