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
    }
}
