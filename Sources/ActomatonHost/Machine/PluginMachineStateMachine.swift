import ActomatonPluginContract

/// The decisions of a ``PluginMachine``, as a pure value: which action runs, which is refused
/// or dropped (the `next_action` chain limits), how transitions are numbered, and when the
/// journal gets a snapshot. Its methods return what to do; the machine's actor does it (calls
/// the runtime, journals, starts effects, reports). Tested alone, without a plugin.
struct PluginMachineStateMachine {
    /// What to do with an action that arrives.
    enum Admission: Equatable {
        /// Perform it.
        case perform
        /// Refuse it with this reason (reported, once per cut chain).
        case refuse(PluginCallError.Reason)
        /// Drop it silently: the rest of a chain already cut off and reported.
        case drop

        static func == (lhs: Admission, rhs: Admission) -> Bool {
            switch (lhs, rhs) {
            case (.perform, .perform), (.drop, .drop): true
            case let (.refuse(a), .refuse(b)): a.description == b.description
            default: false
            }
        }
    }

    /// What to do after an action was performed.
    struct Step: Equatable {
        /// The transition's number: the machine's successful transitions so far, this one
        /// included (a failed action keeps the last number).
        var sequence: UInt64
        /// Whether to journal the action.
        var journal: Bool
        /// Whether to journal a snapshot after it.
        var snapshot: Bool
    }

    /// Successful transitions so far.
    private(set) var sequence: UInt64 = 0
    /// Actions run by `next_action` requests since the last action that was not one.
    private var feedbackSteps = 0
    /// Whether the chain in progress was cut off (its other next actions are dropped).
    private var feedbackCut = false
    /// Journaled actions since the last journaled snapshot.
    private var actionsSinceSnapshot = 0
    /// Snapshots every this many journaled actions; `nil` without a journal.
    let snapshotInterval: Int?

    init(snapshotInterval: Int?) {
        self.snapshotInterval = snapshotInterval.map { max($0, 1) }
    }

    /// Counts an action of `origin` at `depth` against the feedback limits
    /// (``PluginLimits/maxFeedbackDepth``, ``PluginLimits/maxFeedbackSteps``). Only the first
    /// action past a limit is refused with a reason; the rest of its chain is dropped.
    mutating func admit(origin: PluginTransition.Origin, depth: Int, action: PluginAction) -> Admission {
        guard origin == .next else {
            feedbackSteps = 0
            feedbackCut = false
            return .perform
        }
        if feedbackCut { return .drop }
        feedbackSteps += 1
        let limit: String
        if depth > PluginLimits.maxFeedbackDepth {
            limit = "\(PluginLimits.maxFeedbackDepth) levels"
        } else if feedbackSteps > PluginLimits.maxFeedbackSteps {
            limit = "\(PluginLimits.maxFeedbackSteps) actions"
        } else {
            return .perform
        }
        feedbackCut = true
        return .refuse(.feedbackLimitReached(action: action.description, limit: limit))
    }

    /// An action was performed (`succeeded`) or failed: its number, and whether to journal it
    /// and a snapshot after it.
    mutating func performed(succeeded: Bool) -> Step {
        guard succeeded else { return Step(sequence: sequence, journal: false, snapshot: false) }
        sequence += 1
        guard let snapshotInterval else { return Step(sequence: sequence, journal: false, snapshot: false) }
        actionsSinceSnapshot += 1
        return Step(sequence: sequence, journal: true, snapshot: actionsSinceSnapshot >= snapshotInterval)
    }

    /// Whether the machine journals its actions.
    var journals: Bool { snapshotInterval != nil }

    /// A snapshot was journaled: the next is due after another interval.
    mutating func snapshotJournaled() {
        actionsSinceSnapshot = 0
    }

    /// A journal snapshot could not be taken: try again after the next action.
    mutating func snapshotFailed() {
        actionsSinceSnapshot = max(actionsSinceSnapshot - 1, 0)
    }

    /// The journal brought back `actions` transitions (replayed after its snapshot), out of
    /// `total` the machine made before it stopped.
    mutating func recovered(replayed actions: Int, sequence total: UInt64) {
        actionsSinceSnapshot = actions
        sequence = total
    }
}
