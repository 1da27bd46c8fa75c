// libFuzzer's entry point for the `manifest` harness. The check itself is `fuzzManifest(_:)`, in
// Tests/ActomatonPluginContractTests/ManifestFuzzCheck.swift, which the replay tests compile too.

/// Runs the `manifest` check on one input from libFuzzer; a disagreement stops the run as a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func manifestFuzzEntry(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        try fuzzManifest(bytes)
    } catch {
        fatalError("manifest: \(error)")
    }
    return 0
}
