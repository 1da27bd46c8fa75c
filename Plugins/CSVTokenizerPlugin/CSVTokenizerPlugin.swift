import ActomatonPluginKit

// csv.so: the shared reducer of Sheet.swift, exported with ActomatonPluginKit. The wasm
// plugin (wasm/plugins/CSVPlugin.swift) exports the same reducer with the wasm kit.

let csvPlugin = PluginExport(
    name: "csv",
    version: "1.0.0",
    summary: "The streaming RFC 4180 tokenizer from CSVExample (Swift, ActomatonPluginKit)",
    reducer: sheetReducer,
    initialState: Sheet(),
    actions: SheetAction.vocabulary,
    requests: { $0.call }
)

/// The plugin's entry symbol.
@_cdecl("actomaton_plugin_entry")
public func actomatonPluginEntry(_ hostABIVersion: UInt32) -> UnsafeRawPointer? {
    csvPlugin.manifest
}
