#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Says in one line that the host crashed, then dies of the same signal, so that the exit
/// status says so (`serve` must never exit 0 after a crash).
///
/// A plugin runs in the host's process (with `--isolation none`), so its crash is the host's.
/// Swift's own backtracer is left in place when `SWIFT_BACKTRACE` is set, for whoever wants
/// a backtrace instead.
enum CrashReport {
    private static let signals: [(Int32, StaticString)] = [
        (SIGSEGV, "error: actomaton-host crashed (SIGSEGV, a bad memory access), and every plugin's machine with it\n"),
        (SIGBUS, "error: actomaton-host crashed (SIGBUS, a bad memory access), and every plugin's machine with it\n"),
        (SIGILL, "error: actomaton-host crashed (SIGILL, a trap or an illegal instruction), and every plugin's machine with it\n"),
        (SIGTRAP, "error: actomaton-host crashed (SIGTRAP, a trap), and every plugin's machine with it\n"),
        (SIGFPE, "error: actomaton-host crashed (SIGFPE, an arithmetic fault), and every plugin's machine with it\n"),
        (SIGABRT, "error: actomaton-host crashed (SIGABRT, abort), and every plugin's machine with it\n"),
    ]

    /// Installs the handlers; once, at start.
    static func install() {
        guard getenv("SWIFT_BACKTRACE") == nil else { return }
        for (signal, _) in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = crashed
            action.sa_flags = Int32(bitPattern: UInt32(SA_RESETHAND)) | Int32(SA_NODEFER)
            sigemptyset(&action.sa_mask)
            sigaction(signal, &action, nil)
        }
    }

    fileprivate static func message(for signal: Int32) -> StaticString? {
        signals.first { $0.0 == signal }?.1
    }
}

/// Writes the line (with `write`, which is safe in a signal handler), then raises the signal
/// again with its default action, which ends the process.
private func crashed(_ signal: Int32) {
    if let message = CrashReport.message(for: signal) {
        _ = write(2, message.utf8Start, message.utf8CodeUnitCount)
    }
    raise(signal)
}
