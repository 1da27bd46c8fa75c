import CHeapStats
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the memory benchmarks measure: the allocator's bytes in use, and the process's
/// resident memory. Linux with glibc only; elsewhere both read 0.
public enum MemoryStats {
    /// Bytes allocated and not freed, from the C allocator's own counters.
    public static var heapInUse: Int { Int(heap_stats_in_use()) }

    /// Gives the allocator's free memory back to the system, so that the resident memory
    /// measured next is what is in use, not what an earlier iteration left cached.
    public static func trim() { heap_stats_trim() }

    /// The process's resident memory (`VmRSS` in `/proc/self/status`), in bytes.
    public static var resident: Int { status("VmRSS") }

    /// The process's peak resident memory since it started or since ``resetPeak()``
    /// (`VmHWM`), in bytes.
    public static var peakResident: Int { status("VmHWM") }

    /// Starts the peak of ``peakResident`` over from the resident memory now (Linux 4.0 and later).
    public static func resetPeak() {
        #if os(Linux)
        guard let file = fopen("/proc/self/clear_refs", "w") else { return }
        fputs("5", file)
        fclose(file)
        #endif
    }

    /// A field of `/proc/self/status` given in kB, in bytes; 0 where unknown.
    private static func status(_ field: String) -> Int {
        #if os(Linux)
        guard let file = fopen("/proc/self/status", "r") else { return 0 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix(field + ":") {
                // "VmRSS:\t  123456 kB"
                let kilobytes = text.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int($0) } ?? 0
                return kilobytes * 1024
            }
        }
        #endif
        return 0
    }
}
