import ActomatonUI
import Observation
import Synchronization

/// Waits, on observation events (never sleeping), until `condition` holds for what it reads.
@MainActor
func waitUntil(_ condition: @escaping @MainActor () -> Bool) async {
    while !condition() {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumed = Mutex(false)
            _ = withObservationTracking {
                condition()
            } onChange: {
                let first = resumed.withLock { resumed in
                    defer { resumed = true }
                    return !resumed
                }
                if first { continuation.resume() }
            }
        }
    }
}

/// Whether an observed read was told of a change: set by `withObservationTracking`'s `onChange`.
final class ChangeFlag: Sendable {
    private let changes = Mutex(0)

    /// How many times `onChange` ran.
    var count: Int { changes.withLock { $0 } }

    /// Records a change.
    func record() { changes.withLock { $0 += 1 } }
}

/// Runs `read` under observation tracking; the returned flag counts the changes it is told of.
@MainActor
func track(_ read: @escaping @MainActor () -> Void) -> ChangeFlag {
    let flag = ChangeFlag()
    withObservationTracking {
        read()
    } onChange: {
        flag.record()
    }
    return flag
}

/// Waits, by yielding (never sleeping), until `condition` holds; `false` if it never does.
@MainActor
func eventually(_ condition: @MainActor () async -> Bool) async -> Bool {
    for _ in 0..<10_000 {
        if await condition() { return true }
        await Task.yield()
    }
    return await condition()
}
