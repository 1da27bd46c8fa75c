import ActomatonPluginKit

// login.so: the shared reducer of Login.swift, exported with ActomatonPluginKit. The wasm
// plugin (wasm/plugins/LoginPlugin.swift) exports the same reducer with the wasm kit.

let loginPlugin = PluginExport(
    name: "login",
    version: "1.0.0",
    summary: "A login / logout flow with a session timer (Swift, ActomatonPluginKit)",
    reducer: loginReducer,
    initialState: Session(),
    actions: LoginAction.vocabulary,
    requests: { $0.call }
)

/// The plugin's entry symbol.
@_cdecl("actomaton_plugin_entry")
public func actomatonPluginEntry(_ hostABIVersion: UInt32) -> UnsafeRawPointer? {
    loginPlugin.manifest
}
