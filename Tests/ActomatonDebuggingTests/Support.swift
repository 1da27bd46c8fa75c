import ActomatonDebugging
import Synchronization

/// A sink that keeps what it is given, and can be switched off.
final class RecordingSink: Sendable {
    private let entries = Mutex<[String]>([])
    private let enabled: Atomic<Bool>
    private let checks = Atomic(0)

    init(isEnabled: Bool = true) {
        enabled = Atomic(isEnabled)
    }

    /// The entries written so far.
    var messages: [String] { entries.withLock { $0 } }

    /// How many times the logging reducer asked whether the sink is enabled.
    var enabledChecks: Int { checks.load(ordering: .relaxed) }

    var sink: DebugLogSink {
        DebugLogSink(
            isEnabled: {
                self.checks.add(1, ordering: .relaxed)
                return self.enabled.load(ordering: .relaxed)
            },
            write: { message in self.entries.withLock { $0.append(message) } }
        )
    }
}

/// Counts how many times values of the types below were formatted: custom-dump reads a value
/// through its mirror, so a mirror that counts counts every dump and diff.
final class DumpCounter: Sendable {
    private let count = Atomic(0)

    var dumps: Int { count.load(ordering: .relaxed) }

    func record() {
        count.add(1, ordering: .relaxed)
    }
}
