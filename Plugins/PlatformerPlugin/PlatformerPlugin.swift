import ActomatonPluginKit
import PlatformerExample

// platformer.so: the shared reducer of Character.swift, exported with ActomatonPluginKit. The
// wasm plugin (wasm/plugins/PlatformerPlugin.swift) exports the same reducer with the wasm kit.

let platformerPlugin = PluginExport(
    name: "platformer",
    version: "1.1.0",
    summary: "A platformer character controller, a statechart from PlatformerExample (Swift, ActomatonPluginKit)",
    reducer: characterReducer,
    initialState: Character(),
    actions: Platformer.Event.vocabulary,
    requests: { $0.call },
    diagram: Character.diagram
)

/// The plugin's entry symbol.
@_cdecl("actomaton_plugin_entry")
public func actomatonPluginEntry(_ hostABIVersion: UInt32) -> UnsafeRawPointer? {
    platformerPlugin.manifest
}
