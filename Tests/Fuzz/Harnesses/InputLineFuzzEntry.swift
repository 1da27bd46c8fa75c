// libFuzzer's entry point for the `input-line` harness. The check itself is `fuzzInputLine(_:)`,
// in Tests/HostCommandLineTests/InputLineFuzzCheck.swift, which the replay tests compile too.

/// Runs the `input-line` check on one input from libFuzzer; a broken rule stops the run as a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func inputLineFuzzEntry(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        try fuzzInputLine(bytes)
    } catch {
        fatalError("input-line: \(error)")
    }
    return 0
}
