// libFuzzer's entry point for the `csv` harness. The check itself is `fuzzCSV(_:)`, in
// Tests/CSVExampleTests/CSVFuzzCheck.swift, which the replay tests compile too.

/// Runs the `csv` check on one input from libFuzzer; a disagreement stops the run as a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func csvFuzzEntry(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        try fuzzCSV(bytes)
    } catch {
        fatalError("csv: \(error)")
    }
    return 0
}
