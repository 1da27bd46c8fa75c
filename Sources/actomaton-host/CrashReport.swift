import CProcessControl
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Says in one line that the host crashed, then dies of the same signal, so that the exit
/// status says so (`serve` must never exit 0 after a crash).
///
/// A plugin runs in the host's process (with `--isolation none`), so its crash is the host's;
/// the line names the plugin and the call that crashed when it was plugin code (a stack
/// overflow included: plugin calls run with an alternate signal stack), and an `exit()` from
/// plugin code is reported the same way and never ends the host with status 0.
/// Swift's own backtracer is left in place when `SWIFT_BACKTRACE` is set, for whoever wants
/// a backtrace instead.
enum CrashReport {
    private static let signals: [(Int32, StaticString)] = [
        (SIGSEGV, "SIGSEGV, a bad memory access"),
        (SIGBUS, "SIGBUS, a bad memory access"),
        (SIGILL, "SIGILL, a trap or an illegal instruction"),
        (SIGTRAP, "SIGTRAP, a trap"),
        (SIGFPE, "SIGFPE, an arithmetic fault"),
        (SIGABRT, "SIGABRT, abort"),
    ]

    /// Installs the handlers; once, at start.
    static func install() {
        actomaton_report_plugin_exits()
        guard getenv("SWIFT_BACKTRACE") == nil else { return }
        for (signal, _) in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = crashed
            action.sa_flags = Int32(bitPattern: UInt32(SA_RESETHAND)) | Int32(SA_NODEFER) | Int32(SA_ONSTACK)
            sigemptyset(&action.sa_mask)
            sigaction(signal, &action, nil)
        }
    }

    fileprivate static func message(for signal: Int32) -> StaticString? {
        signals.first { $0.0 == signal }?.1
    }
}

/// Writes the line (with `write`, which is safe in a signal handler): `error: actomaton-host
/// crashed (SIGSEGV, a bad memory access) in plugin counter's 'add', and every plugin's machine
/// with it`; then raises the signal again with its default action, which ends the process.
private func crashed(_ signal: Int32) {
    if let message = CrashReport.message(for: signal) {
        writeStatic("error: actomaton-host crashed (")
        _ = write(actomaton_error_descriptor(), message.utf8Start, message.utf8CodeUnitCount)
        writeStatic(")")
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            let length = actomaton_plugin_call_describe(buffer.baseAddress, 256)
            if length > 0 {
                writeStatic(" in ")
                _ = write(actomaton_error_descriptor(), buffer.baseAddress, Int(length))
            }
        }
        writeStatic(", and every plugin's machine with it\n")
    }
    raise(signal)
}

private func writeStatic(_ text: StaticString) {
    _ = write(actomaton_error_descriptor(), text.utf8Start, text.utf8CodeUnitCount)
}
