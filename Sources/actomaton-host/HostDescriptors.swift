import CProcessControl
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The descriptors the host reads its input from and writes its output and errors to.
///
/// A plugin that runs in the host (`--isolation none`) shares its process. A debug `printf`
/// in one wrote into the host's output, where it read as a transition or an error line, and
/// one that closed descriptors 0–2 left the host reading nothing and printing nothing, with
/// status 0. ``takePrivateCopies()`` gives the host copies of its own, above the descriptors
/// a careless plugin touches, and points descriptor 1 at standard error: what a plugin prints
/// goes there, never into the output. (A plugin that means harm can still reach anything in the
/// process: run plugins you do not trust with `--isolation process`.)
enum HostDescriptors {
    private static let input = Atomic<Int32>(0)
    private static let output = Atomic<Int32>(1)
    private static let errors = Atomic<Int32>(2)

    /// The lowest descriptor a private copy takes.
    static let lowestPrivate: Int32 = 100

    /// The host's input.
    static var inputDescriptor: Int32 { input.load(ordering: .relaxed) }
    /// The host's output: transitions and states.
    static var outputDescriptor: Int32 { output.load(ordering: .relaxed) }
    /// The host's errors.
    static var errorDescriptor: Int32 { errors.load(ordering: .relaxed) }

    /// Copies standard input, output and error to private descriptors (close-on-exec, from
    /// ``lowestPrivate`` up) that the host uses from now on, and points descriptor 1 at standard
    /// error. Call once, before any plugin is loaded; a copy the system refuses leaves that one
    /// as it was.
    static func takePrivateCopies() {
        for descriptor: Int32 in 0...2 {
            let copied = fcntl(descriptor, F_DUPFD_CLOEXEC, lowestPrivate)
            guard copied >= 0 else { continue }
            switch descriptor {
            case 0: input.store(copied, ordering: .relaxed)
            case 1: output.store(copied, ordering: .relaxed)
            default: errors.store(copied, ordering: .relaxed)
            }
        }
        if outputDescriptor != 1 { _ = dup2(2, 1) }
        // The library's lines, the crash report and an exit() from plugin code write there too.
        actomaton_set_error_descriptor(errorDescriptor)
    }
}
