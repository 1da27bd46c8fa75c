/// The checks the host makes on a plugin file's first bytes, before reading the rest: an ELF
/// shared object of this machine's class, byte order and architecture.
enum ELFHeader {
    /// The bytes read: the 64-bit ELF header.
    static let size = 64

    private static let sharedObject: UInt16 = 3 // ET_DYN

    #if arch(x86_64)
    private static let machine: UInt16 = 62 // EM_X86_64
    private static let machineName = "x86-64"
    #elseif arch(arm64)
    private static let machine: UInt16 = 183 // EM_AARCH64
    private static let machineName = "AArch64"
    #else
    private static let machine: UInt16 = 0
    private static let machineName = "this machine"
    #endif

    /// Throws unless `bytes` (the file's first bytes) start a shared library this host can map.
    static func check(_ bytes: ArraySlice<UInt8>) throws(PluginLoadError.Reason) {
        let b = Array(bytes)
        guard b.count >= 4, b[0] == 0x7F, b[1] == 0x45, b[2] == 0x4C, b[3] == 0x46 else { throw .notELF }
        guard b.count >= 20 else { throw .notASharedLibrary("the ELF header is truncated") }
        guard b[4] == 2 else { throw .notASharedLibrary("it is a 32-bit ELF file; this host is 64-bit") }
        guard b[5] == 1 else { throw .notASharedLibrary("it is a big-endian ELF file; this host is little-endian") }
        let type = UInt16(b[16]) | UInt16(b[17]) << 8
        guard type == sharedObject else {
            let kind = switch type {
            case 1: "a relocatable object (.o)"
            case 2: "an executable"
            case 4: "a core dump"
            default: "an ELF file of type \(type)"
            }
            throw .notASharedLibrary("it is \(kind), not a shared library")
        }
        let fileMachine = UInt16(b[18]) | UInt16(b[19]) << 8
        if machine != 0 && fileMachine != machine {
            throw .notASharedLibrary("it is built for another architecture (ELF machine \(fileMachine)); this host is \(machineName)")
        }
        guard b.count >= size else { throw .notASharedLibrary("the ELF header is truncated") }
    }

    /// The most program headers a plugin may have (a linker writes about ten).
    static let maxProgramHeaders = 256
    private static let programHeaderSize = 56
    private static let loadable: UInt32 = 1 // PT_LOAD
    private static let dynamic: UInt32 = 2 // PT_DYNAMIC

    /// Where the program header table is, from the ELF header (`check(_:)`ed first): its offset
    /// and byte count; throws when it cannot be a table this host reads.
    static func programHeaderTable(_ header: [UInt8]) throws(PluginLoadError.Reason) -> (offset: UInt64, length: Int) {
        let entrySize = Int(integer(header, at: 54, bytes: 2))
        let count = Int(integer(header, at: 56, bytes: 2))
        guard count > 0, entrySize == programHeaderSize else {
            throw .notASharedLibrary("its ELF header describes no program headers of this host's size")
        }
        guard count <= maxProgramHeaders else {
            throw .notASharedLibrary("it has \(count) program headers, more than the limit of \(maxProgramHeaders)")
        }
        return (integer(header, at: 32, bytes: 8), count * programHeaderSize)
    }

    /// Throws unless every segment the dynamic linker maps from the file lies within its
    /// `fileSize` bytes, as does the table itself at `tableOffset`. A truncated file passes
    /// the header's checks, but mapping it faults (SIGBUS) at the first byte past its end: in
    /// process, that took the host down.
    static func checkSegments(_ table: [UInt8], tableOffset: UInt64, fileSize: UInt64) throws(PluginLoadError.Reason) {
        let (tableEnd, tableOverflow) = tableOffset.addingReportingOverflow(UInt64(table.count))
        guard !tableOverflow, tableEnd <= fileSize else {
            throw .notASharedLibrary("it is truncated: its program headers end at byte \(tableEnd), past the file's \(fileSize) bytes")
        }
        for start in stride(from: 0, to: table.count, by: programHeaderSize) {
            let type = UInt32(integer(table, at: start, bytes: 4))
            guard type == loadable || type == dynamic else { continue }
            let offset = integer(table, at: start + 8, bytes: 8)
            let length = integer(table, at: start + 32, bytes: 8)
            let (end, overflow) = offset.addingReportingOverflow(length)
            guard !overflow, end <= fileSize else {
                throw .notASharedLibrary("it is truncated: a segment of \(length) bytes at offset \(offset) ends past the file's \(fileSize) bytes")
            }
            if type == loadable && length > integer(table, at: start + 40, bytes: 8) {
                throw .notASharedLibrary("a segment holds more bytes of the file (\(length)) than of memory")
            }
        }
    }

    /// The little-endian unsigned integer of `bytes` bytes at `offset`.
    private static func integer(_ data: [UInt8], at offset: Int, bytes: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in (0..<bytes).reversed() { value = value << 8 | UInt64(data[offset + index]) }
        return value
    }
}
