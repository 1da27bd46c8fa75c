import ActomatonCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A failure of the effect layer that no caller can see: nothing awaits it, so it goes to the
/// machine's failure handler instead of being dropped.
///
/// Give the handler to ``EffectQueueManager/init(clock:randomSeed:maxFeedbackDepth:onFailure:)``
/// (or to `Actomaton`'s and `TestMachine`'s initializers, which pass it on). By default
/// (``writeToStandardError(_:)``) each failure is one line on standard error. To route failures
/// to a swift-log `Logger` instead, hand over a closure that logs them:
///
/// ```swift
/// let logger = Logger(label: "app.effects")
/// let actomaton = Actomaton<Action, State>(state: State(), reducer: reducer, onFailure: { failure in
///     logger.error("\(failure)")
/// })
/// ```
///
/// The handler is called where the failure happens — on the host's actor for a feedback loop,
/// in the effect's task for an error — so it must be quick and thread-safe.
///
/// Cancellation is not a failure: an effect that ends by throwing `CancellationError`, or by
/// throwing anything once cancelled, is not reported, nor is the work of an effect cancelled or
/// dropped before it started (see `Effect`'s cancellation rules).
public enum EffectFailure: Error, Sendable, CustomStringConvertible {
    /// An ``Effect/nextAction(_:)`` loop reached the manager's loop limits (see
    /// `ActionEffectManager`): the `send` stopped there, and the actions still waiting to be
    /// fed back were dropped. The result says which limit, and how many transitions ran.
    case feedbackLoopCutOff(FeedbackResult)

    /// An effect's work threw `error` while it was not cancelled: the effect ended there, and
    /// delivers nothing more. `effectID` is the effect's ID, if it has one.
    case effectThrew(any Error, effectID: AnyEffectID?)

    /// One line saying what failed.
    public var description: String {
        switch self {
        case let .feedbackLoopCutOff(result):
            "an Effect.nextAction loop was cut off (\(result)); the actions still waiting were dropped: check the reducer for a cycle"
        case let .effectThrew(error, effectID?):
            "an effect with ID \(effectID) threw an error, and delivers nothing more: \(error)"
        case let .effectThrew(error, nil):
            "an effect threw an error, and delivers nothing more: \(error)"
        }
    }

    /// The default failure handler: writes `Actomaton: <description>` as one line to standard
    /// error.
    @Sendable
    public static func writeToStandardError(_ failure: EffectFailure) {
        var line = "Actomaton: \(failure.description)\n"
        line.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return }
            var offset = 0
            while offset < bytes.count {
                let written = write(STDERR_FILENO, base + offset, bytes.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}
