// Status codes shared by every Actomaton wasm module (see actomaton_wasm.h).
enum WasmABI {
    /// The version of the C ABI these modules export.
    static let version: Int32 = 1
    static let ok: Int32 = 0
    /// The action code is not one the module knows; nothing changed.
    static let unknownAction: Int32 = -2
    /// An argument is out of range (a length larger than the input buffer, …); nothing changed.
    static let badArgument: Int32 = -3
    /// The module could not allocate memory; nothing changed.
    static let outOfMemory: Int32 = -4
}
