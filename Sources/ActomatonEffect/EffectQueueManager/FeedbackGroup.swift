/// The effects a send with `tracksFeedbacks` started, and every effect their actions started in
/// turn, transitively: the send's task waits until none is left, and cancelling that task
/// cancels them all.
///
/// One flat group per send, not a tree of tasks awaiting each other: an effect never waits for
/// the effects its actions start, so tracking changes neither when a sequence sends its next
/// action nor what a cancellation reaches. An effect cancelled by a rule (its ID, a replacement,
/// a queue policy) ends at once, and the effects its actions started stay in the group, living
/// by their own IDs. A timer that replaces itself from its own tick thus holds only itself.
///
/// Each member is held only until its task ends. Members join before their task exists and
/// leave as it ends; since only a member's actions add members, the group is empty for good
/// once it is empty.
@usableFromInline
final class FeedbackGroup: Sendable {
    /// A member's number in the group.
    struct Member: Sendable {
        fileprivate let number: Int
    }

    private struct State {
        var nextNumber = 0
        /// The members still running, with their task once it is attached.
        var members: [Int: Task<Void, Error>?] = [:]
        var isCancelled = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Locked(State())

    /// How many members have not ended yet.
    var memberCount: Int { state.withLock { $0.members.count } }

    /// Counts a new member, before its task exists; the task calls ``leave(_:)`` as it ends.
    func join() -> Member {
        state.withLock { state in
            defer { state.nextNumber += 1 }
            state.members[state.nextNumber] = .some(nil)
            return Member(number: state.nextNumber)
        }
    }

    /// Gives `member` its task, to cancel with the group; cancels it at once if the group was
    /// cancelled.
    func attach(_ task: Task<Void, Error>, to member: Member) {
        let cancelNow = state.withLock { state -> Bool in
            guard state.members[member.number] != nil else { return false }
            state.members[member.number] = task
            return state.isCancelled
        }
        if cancelNow { task.cancel() }
    }

    /// Records that `member`'s task ended.
    func leave(_ member: Member) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.members[member.number] = nil
            guard state.members.isEmpty else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Cancels every member, and every member that joins later.
    func cancelAll() {
        let tasks = state.withLock { state -> [Task<Void, Error>] in
            state.isCancelled = true
            return state.members.values.compactMap { $0 }
        }
        for task in tasks { task.cancel() }
    }

    /// Returns once no member is left; cancelling the waiting task cancels them all. One task
    /// waits: the send's.
    func waitForAll() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ended = state.withLock { state in
                    if state.members.isEmpty { return true }
                    state.waiter = continuation
                    return false
                }
                if ended { continuation.resume() }
            }
        } onCancel: {
            cancelAll()
        }
    }
}
