import CProcessControl
import ActomatonHost
import Dispatch
import HostCommandLine
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// SIGTERM, SIGINT and SIGHUP in `run` and in `serve` without `--listen`: a stop, not a crash.
///
/// Without handlers, the signal ended the process where it stood: under `--sync batch`, the
/// actions printed (acknowledged) in the last window were lost with it. With them, the first
/// of these signals stops reading input, closes the journal — what is queued is committed and
/// synced, what comes later is refused, never printed — prints what that made durable, says
/// so on standard error, and exits with 128 + the signal's number, as a shell reports a
/// process the signal ended (143, 130, 129). The handler runs on a thread of its own: closing
/// the journal waits for its writer. A second signal ends the process at once, with a line
/// saying the journal was not closed (it ended it without a word, and under `--sync batch` the
/// last window's printed actions were lost unsaid). SIGINT or SIGHUP
/// that the process was started ignoring (a background job's SIGINT, `nohup`'s SIGHUP) stays
/// ignored.
enum StopSignals {
    /// The signals that stop the host.
    static let signals: [Int32] = [SIGTERM, SIGINT, SIGHUP]

    /// The sources, kept for the life of the process.
    private static let sources = Mutex<[SignalSource]>([])
    /// Whether a stop began.
    private static let started = Atomic<Bool>(false)

    /// A dispatch source, held only to keep it alive.
    private struct SignalSource: @unchecked Sendable {
        let source: any DispatchSourceSignal
    }

    /// Returns at once when no stop began; otherwise never: the stop ends the process.
    static func waitIfStopping() async {
        guard started.load(ordering: .acquiring) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // Kept, never resumed: a continuation dropped unresumed is reported as a misuse.
            parked.withLock { $0.append(continuation) }
        }
    }

    /// The waits of ``waitIfStopping()``.
    private static let parked = Mutex<[CheckedContinuation<Void, Never>]>([])

    /// Installs the handlers: the first signal runs `stop` once, on a thread of its own, then
    /// ends the process with 128 + its number. Call once, before opening the journal.
    static func install(_ stop: @escaping @Sendable (_ signal: Int32) -> Void) {
        _ = secondSignalLines
        let queue = DispatchQueue(label: "stop-signals")
        var made: [SignalSource] = []
        // Those the host was started ignoring stay ignored, also once a stop began.
        let taken = signals.filter { $0 == SIGTERM || !SystemCall.ignores(signal: $0) }
        for number in taken {
            // The source, not the default action, takes the signal from now on.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                guard !Self.started.exchange(true, ordering: .acquiringAndReleasing) else {
                    secondSignalHandler(number)
                    return
                }
                // A second signal of any of them ends the process without waiting.
                for other in taken { signal(other, secondSignalHandler) }
                do {
                    let thread = try BlockingQueue(name: "stop")
                    try thread.enqueue {
                        stop(number)
                        _exit(128 + number)
                    }
                } catch {
                    stop(number)
                    _exit(128 + number)
                }
            }
            source.resume()
            made.append(SignalSource(source: source))
        }
        sources.withLock { $0.append(contentsOf: made) }
    }
}

/// The line a second stop signal writes before it ends the process, by signal number: made
/// before any signal comes, as a signal handler may not allocate.
private nonisolated(unsafe) let secondSignalLines: UnsafeMutablePointer<(UnsafeMutablePointer<UInt8>, Int)?> = {
    let table = UnsafeMutablePointer<(UnsafeMutablePointer<UInt8>, Int)?>.allocate(capacity: 65)
    table.initialize(repeating: nil, count: 65)
    for number in StopSignals.signals where number < 65 {
        let line = Array("stopped at once by a second \(signalName(number)), before the journal was closed: under --sync batch, "
                         .appending("the actions printed in its last window may not be in it\n").utf8)
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: line.count)
        bytes.initialize(from: line, count: line.count)
        table[Int(number)] = (bytes, line.count)
    }
    return table
}()

/// A second stop signal's handler: its line, then the exit (both safe in a signal handler);
/// also what the dispatch source does with a second signal that reaches it first.
private let secondSignalHandler: @convention(c) (Int32) -> Void = { number in
    if number >= 0, number < 65, let (bytes, count) = secondSignalLines[Int(number)] { _ = write(actomaton_error_descriptor(), bytes, count) }
    _exit(128 + number)
}

/// What a stop by signal closes, filled in as `run` and `serve` make it: the signal handlers are
/// installed first, so that a signal while the journal is opened, a plugin loaded or recovered
/// timers fire is a stop too, not the signal's default action.
final class StopTarget: Sendable {
    private struct Parts {
        var input: InputLineReader?
        var journal: PluginJournal?
        var printer: TransitionPrinter?
    }

    private let parts = Mutex(Parts())

    /// Makes a target and installs the stop signals' handlers on it.
    static func installed() -> StopTarget {
        let target = StopTarget()
        StopSignals.install { signal in target.stop(by: signal) }
        return target
    }

    /// What the stop closes from now on.
    func set(input: InputLineReader, journal: PluginJournal?, printer: TransitionPrinter) {
        parts.withLock { $0 = Parts(input: input, journal: journal, printer: printer) }
    }

    /// Stops reading input, closes the journal (what is queued is made durable, what comes
    /// later refused), prints what that acknowledged, and says so on standard error.
    func stop(by signal: Int32) {
        let parts = parts.withLock { $0 }
        parts.input?.cancel()
        parts.journal?.close()
        parts.printer?.printAcknowledged()
        finishErrors()
        let journaled = parts.journal == nil ? "" : "; every action printed is in the journal"
        writeLine("stopped by \(signalName(signal))\(journaled)", to: 2)
    }
}
