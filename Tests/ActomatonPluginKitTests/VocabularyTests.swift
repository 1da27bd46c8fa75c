import ActomatonCore
import ActomatonPluginABI
import ActomatonPluginContract
@testable import ActomatonPluginKit
import Foundation
import Testing

// One vocabulary, declared once (Lamp.swift), exported as a .so plugin here; the same value
// builds the wasm fixture lamp.wasm, which the host's LampWasmPluginTests run.

let lampPlugin = PluginExport(
    name: "lamp",
    version: "1.0.0",
    reducer: lampReducer,
    initialState: Lamp(),
    actions: lampVocabulary,
    requests: { $0.call }
)

/// An entry of `count` `int32` parameters, declared without the builders.
func wideEntry(_ count: Int) -> PluginActionEntry<LampAction> {
    PluginActionEntry(
        name: "wide", parameters: (0..<count).map { (name: "p\($0)", type: PluginValueType.int32) },
        make: { values in values.count == count ? .toggle : nil })
}

func widePlugin(_ count: Int) -> PluginExport<MealyReducer<LampAction, Lamp, Void, PluginEffect<LampAction>>> {
    PluginExport(name: "wide", version: "1.0.0", reducer: lampReducer, initialState: Lamp(),
                 actions: [wideEntry(count), .action("toggle") { .toggle }])
}

typealias PaintEntry = @convention(c) (UnsafeMutableRawPointer?, UInt8, UInt8, UInt8, UnsafePointer<CChar>?) -> Int32
typealias LabelEntry = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, Int32) -> Int32

extension PluginExportTests {
    @Test func aSharedVocabularyIsExportedWithItsTypes() throws {
        let manifest = lampPlugin.manifest.load(as: actomaton_manifest.self)
        #expect(manifest.create != nil)
        let read = try ManifestReader.read(lampPlugin.manifest.assumingMemoryBound(to: actomaton_manifest.self))
        #expect(read.actions.map(\.name) == ["toggle", "dim", "label", "paint", "blink"])
        #expect(read.actions[3].parameters.map(\.name) == ["red", "green", "blue", "name"])
        #expect(read.actions[3].parameters.map(\.type) == [.uint8, .uint8, .uint8, .string])
        #expect(read.actions[2].parameters.map(\.type) == [.string, .int32])
    }

    @Test func aSharedVocabularyRunsThroughTheTypedEntryPoints() throws {
        received.withLock { $0 = [] }
        let manifest = lampPlugin.manifest.load(as: actomaton_manifest.self)
        let host = fakeHost()
        defer { host.deallocate() }
        let state = try #require(manifest.create(host))
        defer { manifest.destroy(state) }
        let label = unsafeBitCast(manifest.actions[2].entry, to: LabelEntry.self)
        let paint = unsafeBitCast(manifest.actions[3].entry, to: PaintEntry.self)
        #expect(label(state, "desk", 12) == ACTOMATON_OK)
        #expect(paint(state, 255, 128, 0, "amber") == ACTOMATON_OK)
        #expect(describe(manifest, state) == #"{"color":"ff8000","level":0,"on":false,"size":12,"text":"amber"}"#)
        // Refused by the reducer: unchanged.
        #expect(label(state, "", 1) == ACTOMATON_ERROR)
        #expect(received.withLock { $0 } == ["fail the label must not be empty"])

        // An action requesting its own actions goes through the shared `requests` mapping.
        received.withLock { $0 = [] }
        let blink = unsafeBitCast(manifest.actions[4].entry, to: NoArgumentEntry.self)
        #expect(blink(state) == ACTOMATON_OK)
        #expect(received.withLock { $0 } == [
            "next toggle", "delayed toggle after 1000000000ns, id blink, queue NULL policy 0 max 0",
        ])
    }

    @Test func parametersUpToTheContractsLimit() throws {
        #expect(PluginVocabularyLimits.maxParameters == Int(ACTOMATON_MAX_PARAMETERS))
        #expect(PluginVocabularyLimits.maxActions == Int(ACTOMATON_MAX_ACTIONS))
        // The wasm contract states the same limits.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let wasmHeader = try String(contentsOf: root.appendingPathComponent("wasm/kit/actomaton_wasm_plugin.h"), encoding: .utf8)
        #expect(wasmHeader.contains("#define ACTOMATON_WASM_MAX_PARAMETERS \(PluginVocabularyLimits.maxParameters)u"))
        #expect(wasmHeader.contains("#define ACTOMATON_WASM_MAX_ACTIONS \(PluginVocabularyLimits.maxActions)u"))

        // At the limit: exported, and the host's manifest reader accepts it.
        let atLimit = widePlugin(PluginVocabularyLimits.maxParameters)
        let manifest = atLimit.manifest.assumingMemoryBound(to: actomaton_manifest.self)
        #expect(manifest.pointee.create != nil)
        #expect(try ManifestReader.read(manifest).actions[0].parameters.count == 16)

        // One past: refused at load, with the reason.
        let past = widePlugin(PluginVocabularyLimits.maxParameters + 1)
        #expect(past.manifest.load(as: actomaton_manifest.self).create == nil)
        #expect(type(of: past).vocabularyProblem(past.actions, nil) == "the vocabulary entry 'wide' has 17 parameters; at most 16")
    }

    @Test func theVocabularyProblemNamesTheEntryPastTheLimit() {
        #expect(pluginVocabularyProblem(lampVocabulary) == nil)
        #expect(pluginVocabularyProblem([wideEntry(16)]) == nil)
        #expect(pluginVocabularyProblem([wideEntry(17)]) == "the vocabulary entry 'wide' has 17 parameters; at most 16")
        #expect(pluginVocabularyProblem([PluginActionEntry<LampAction>]()) == "the vocabulary has no actions")
        let most = (0..<PluginVocabularyLimits.maxActions).map { index in PluginActionEntry<LampAction>.action("a\(index)") { .toggle } }
        #expect(pluginVocabularyProblem(most) == nil)
        #expect(pluginVocabularyProblem(most + [.action("extra") { .blink }]) == "the vocabulary has 257 actions; at most 256")
    }
}
