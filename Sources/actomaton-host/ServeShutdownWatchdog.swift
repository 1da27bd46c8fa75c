import ActomatonHost
import Dispatch
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `serve --listen`'s last resort when a graceful shutdown does not end.
///
/// The service's shutdown (swift-service-lifecycle) waits for the requests in flight, and
/// cancels them once `--shutdown-timeout` has passed. A plugin's call that cancellation cannot
/// end — a `.wasm` plugin looping under `--fuel off`, a native plugin in this process — held
/// the process for good, a second SIGTERM included: only `kill -9` ended it. With the
/// watchdog, once the first shutdown signal is `--shutdown-timeout` plus
/// ``cancellationGrace`` old, or at a second shutdown signal, the journal is closed (every
/// action answered is in it; what the calls still running do is not), one line says so, and
/// the process exits with status 1.
enum ServeShutdownWatchdog {
    /// How long the requests cancelled at the end of `--shutdown-timeout` have to end.
    static let cancellationGrace: Duration = .seconds(5)

    /// The sources, kept for the life of the process.
    private static let sources = Mutex<[SignalSource]>([])
    /// Whether a shutdown signal came.
    private static let signalled = Atomic<Bool>(false)
    /// Whether the service ended: the watchdog then leaves the rest of the stop to it, however
    /// long closing the journal takes.
    private static let ended = Atomic<Bool>(false)

    /// Tells the watchdog that the service ended.
    static func serviceEnded() {
        ended.store(true, ordering: .releasing)
    }

    /// A dispatch source, held only to keep it alive.
    private struct SignalSource: @unchecked Sendable {
        let source: any DispatchSourceSignal
    }

    /// Watches `signals` (beside the service's own handling of them): after the first, waits
    /// `timeout` plus ``cancellationGrace``; then, or at a second one, runs `finish` on a
    /// thread of its own, logs why, and exits with status 1.
    static func install(signals: [Int32], timeout: Duration, logger: Logger, finish: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "serve-shutdown-watchdog")
        @Sendable func end(_ why: String) {
            guard !ended.load(ordering: .acquiring) else { return }
            let stop: @Sendable () -> Void = {
                finish()
                let line = "\(why): the journal is closed, with every action answered in it; the requests still in flight were not "
                    + "answered, and nothing they did is in it"
                logger.error("\(line)")
                exit(1)
            }
            do {
                try BlockingQueue(name: "serve-stop").enqueue(stop)
            } catch {
                stop()
            }
        }
        var made: [SignalSource] = []
        for number in signals {
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                guard !signalled.exchange(true, ordering: .acquiringAndReleasing) else {
                    end("stopping at once on a second \(signalName(number)) during the shutdown")
                    return
                }
                // `--shutdown-timeout` is at most 30 days: milliseconds fit.
                queue.asyncAfter(deadline: .now() + .milliseconds(Int((timeout + cancellationGrace) / .milliseconds(1)))) {
                    end("stopping at once: the shutdown did not end within --shutdown-timeout and \(cancellationGrace.components.seconds) s more "
                        + "(a plugin's call that cancelling cannot end: a .wasm plugin under --fuel off, or a native plugin in this process)")
                }
            }
            source.resume()
            made.append(SignalSource(source: source))
        }
        sources.withLock { $0.append(contentsOf: made) }
    }
}

/// A closing that runs once, whoever asks first; a second caller returns once it has run.
final class RunOnce: Sendable {
    private let state: Mutex<(@Sendable () -> Void)?>

    /// Will run `body` at the first ``run()``.
    init(_ body: @escaping @Sendable () -> Void) {
        state = Mutex(body)
    }

    /// Runs the body, unless it ran or runs (then waits for it).
    func run() {
        state.withLock { body in
            body?()
            body = nil
        }
    }
}
