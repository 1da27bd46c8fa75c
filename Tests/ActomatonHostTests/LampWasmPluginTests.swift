@testable import ActomatonHost
import Testing

/// The lamp of Tests/ActomatonPluginKitTests/Lamp.swift, whose vocabulary is declared once and
/// exported both as a .so (the kit's VocabularyTests) and as this .wasm: four parameters, two
/// of them strings, and an action requesting two of its own through the shared mapping.
@Suite("A vocabulary declared once, as a .wasm plugin")
struct LampWasmPluginTests {
    @Test func stringParametersAndFourParameterActions() async throws {
        let lines = try await transcript(of: wasmPlugin("lamp", in: "fixtures"), [
            #"label "desk lamp" 12"#, #"paint 255 128 0 "amber""#, ":state",
            #"label "" 1"#, "paint 256 0 0 \"x\"", "dim 101", ":state",
        ])
        let states = lines.filter { $0.hasPrefix("log: state ") }
        #expect(states.count == 2, "\(lines)")
        #expect(states.allSatisfy { $0.contains(#""color":"ff8000""#) && $0.contains(#""text":"amber""#) && $0.contains(#""size":12"#) },
                "\(lines)")
        #expect(lines.contains { $0.contains("the label must not be empty") }, "\(lines)")
        #expect(lines.contains { $0.contains("the level is a percentage, 0...100") }, "\(lines)")
        #expect(lines.filter { $0.hasPrefix("log: error ") }.count == 3, "\(lines)")
    }

    @Test func requestedActionsGoThroughTheSharedMapping() async throws {
        let lines = try await transcript(of: wasmPlugin("lamp", in: "fixtures"), ["toggle", "blink", ":state"])
        // toggle: on; blink: off at once (next), on again after a second (the delayed toggle
        // is still pending when :state is read).
        #expect(lines.last { $0.hasPrefix("log: state ") }?.contains(#""on":false"#) == true, "\(lines)")
    }
}
