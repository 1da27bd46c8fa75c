import ActomatonPluginContract

/// Why an action, a snapshot, a restore or a description of one plugin's state failed.
///
/// Its description is one line: `plugin counter: 'add 1 2' ...`. When an action fails, the
/// effects it requested are discarded; what is known about the plugin's state is part of the
/// message (a plugin that refused an action promises to keep its state; a plugin the host
/// stopped may have changed it).
public struct PluginCallError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The plugin's name.
    public var plugin: String
    /// What went wrong.
    public var reason: Reason

    /// Creates an error.
    public init(_ reason: Reason, plugin: String) {
        self.plugin = plugin
        self.reason = reason
    }

    /// `plugin NAME: reason`.
    public var description: String { "plugin \(plugin): \(reason)" }

    /// What went wrong in a call.
    public enum Reason: Error, Sendable, Hashable, CustomStringConvertible {
        /// No action of that name in the plugin's vocabulary.
        case unknownAction(String, plugin: String, known: [String])
        /// The action was given the wrong number of arguments.
        case wrongArgumentCount(action: String, signature: String, expected: Int, got: Int)
        /// An argument has the wrong type for its parameter.
        case wrongArgumentType(action: String, index: Int, parameter: String, expected: PluginValueType, got: String)
        /// An integer argument does not fit its parameter's type.
        case integerOutOfRange(action: String, index: Int, parameter: String, type: PluginValueType, value: String)
        /// Named arguments lack one of the action's parameters.
        case missingArgument(action: String, parameter: String, signature: String)
        /// Named arguments name a parameter the action does not have.
        case unknownParameter(action: String, parameter: String, signature: String)
        /// A string argument contains a NUL character, which a C string cannot carry.
        case stringContainsNUL(action: String, index: Int, parameter: String)
        /// A string argument is longer than ``PluginLimits/maxStringArgumentBytes``.
        case stringTooLong(action: String, index: Int, parameter: String, limit: Int)
        /// The plugin refused the action; its message. The contract asks it to keep its state,
        /// which the host cannot check, so the message claims nothing about the state.
        case refused(action: String, message: String)
        /// The plugin made a request the host refused (a bad effect request, a NULL, an
        /// unknown action); the action's effects were discarded, and the plugin may have
        /// changed its state before the request.
        case invalidRequest(action: String, message: String)
        /// The action asked for more effects than the machine may have running or waiting.
        case effectLimitReached(action: String, limit: Int)
        /// The action asked for more effects than all the machines of the host (a service) may
        /// have running or waiting together (``EffectBudget/total``).
        case effectTotalReached(action: String, limit: Int)
        /// The action asked for delayed or repeating actions, and the journal had no key left
        /// for them: its keys for this host end at `lastKey` (``JournalStore/timerKeys()``).
        case timerKeysUsedUp(action: String, lastKey: Int64)
        /// A chain of `next_action` requests went past the host's limits (see
        /// ``PluginLimits/maxFeedbackDepth`` and ``PluginLimits/maxFeedbackSteps``).
        case feedbackLimitReached(action: String, limit: String)
        /// `describe` broke the contract (a size past the limit, a write past the buffer).
        case describeFailed(String)
        /// `snapshot` broke the contract (a size past the limit, a write past the buffer).
        case snapshotFailed(String)
        /// The plugin refused a snapshot in `restore`; its message.
        case restoreRefused(String)
        /// The plugin's worker process crashed, exited, hung or broke the protocol during the
        /// call (`cause`), and was restarted from the last good state or stopped (`recovery`).
        case workerFailed(call: String, cause: String, recovery: String)
        /// The plugin was stopped after failing too often; nothing runs it any more.
        case pluginStopped(String)
        /// A `.wasm` plugin's call trapped or ran out of fuel (`cause`); `recovery` says what
        /// became of the instance.
        case sandboxTrapped(call: String, cause: String, recovery: String)
        /// A `.wasm` plugin's call failed (`failure`) after the host refused it a `memory.grow`,
        /// because the host's instances already hold too much of the `limit` bytes they may have
        /// together (``WasmMemoryBudget``); the grow asked for a memory of `size` bytes, `needed`
        /// more than the instance held. The call may succeed once other instances free memory.
        indirect case wasmMemoryTotalReached(limit: Int, size: Int, needed: Int, failure: Reason)

        /// The action ran, but its journal record could not be made durable: it is not
        /// acknowledged (see ``PluginJournal``).
        case notAcknowledged(action: String, journal: PluginJournalError)

        /// Whether the plugin's code ran for the action and returned: it may have changed the
        /// state before it refused, or before the host refused what it asked for.
        var ranThePlugin: Bool {
            switch self {
            case .refused, .invalidRequest, .effectLimitReached, .effectTotalReached, .timerKeysUsedUp: true
            case let .wasmMemoryTotalReached(_, _, _, failure): failure.ranThePlugin
            default: false
            }
        }

        /// Whether the plugin may have changed its state before the action failed, as the line
        /// says ("its state may have changed"): a request the host refused after the plugin's
        /// code ran. Such an action must not be sent again as if nothing was applied. A refusal
        /// is not counted: the contract has the plugin keep its state.
        public var mayHaveChangedState: Bool {
            switch self {
            case .invalidRequest, .effectLimitReached, .effectTotalReached, .timerKeysUsedUp: true
            case let .wasmMemoryTotalReached(_, _, _, failure): failure.mayHaveChangedState
            default: false
            }
        }

        /// The reason, as one line.
        public var description: String {
            switch self {
            case let .unknownAction(name, plugin, known):
                return "unknown action '\(echo(name))' for plugin '\(plugin)' (its actions: \(known.joined(separator: ", ")))"
            case let .wrongArgumentCount(action, signature, expected, got):
                return "'\(echo(action))' takes \(expected) argument\(expected == 1 ? "" : "s"), got \(got): \(signature)"
            case let .wrongArgumentType(action, index, parameter, expected, got):
                return "argument \(index) (\(parameter)) of '\(echo(action))' must be \(article(expected)) \(expected), got \(echo(got))"
            case let .integerOutOfRange(action, index, parameter, type, value):
                return "argument \(index) (\(parameter)) of '\(echo(action))' is \(echo(value)), out of range for \(type) (\(range(type)))"
            case let .missingArgument(action, parameter, signature):
                return "'\(echo(action))' needs argument \"\(parameter)\": \(signature)"
            case let .unknownParameter(action, parameter, signature):
                return "'\(echo(action))' has no parameter \"\(parameter)\": \(signature)"
            case let .stringContainsNUL(action, index, parameter):
                return "argument \(index) (\(parameter)) of '\(echo(action))' contains a NUL character, which a plugin cannot receive"
            case let .stringTooLong(action, index, parameter, limit):
                return "argument \(index) (\(parameter)) of '\(echo(action))' is longer than the limit of \(limit) bytes"
            case let .refused(action, message):
                return "'\(echo(action))' failed: \(message)"
            case let .invalidRequest(action, message):
                return "'\(echo(action))' failed: the plugin made an invalid request: \(message); its effects were discarded, and its state may have changed"
            case let .effectLimitReached(action, limit):
                return "'\(echo(action))' failed: its delayed and repeating actions would take the machine past its limit of \(limit) effects running or waiting (--max-effects); "
                    + "its effects were discarded, and its state may have changed"
            case let .effectTotalReached(action, limit):
                return "'\(echo(action))' failed: its delayed and repeating actions would take the host's machines past their limit of \(limit) effects "
                    + "running or waiting in all (--max-effects-total); its effects were discarded, and its state may have changed"
            case let .timerKeysUsedUp(action, lastKey):
                return "'\(echo(action))' failed: the journal has no key left for a new timer (its keys for this host end at \(lastKey)): "
                    + "a cluster host takes new ones when it restarts; a state database whose timers reach the end was edited; "
                    + "its effects were discarded, and its state may have changed"
            case let .feedbackLimitReached(action, limit):
                return "'\(echo(action))' not run: a chain of next actions went past \(limit) (a loop in the plugin?); the chain was cut off"
            case let .describeFailed(message):
                return "cannot describe the state: \(message)"
            case let .snapshotFailed(message):
                return "cannot take a snapshot of the state: \(message)"
            case let .restoreRefused(message):
                return "the plugin refused the snapshot: \(message)"
            case let .workerFailed(call, cause, recovery):
                return "\(echo(call)) failed: the plugin \(cause); \(recovery)"
            case let .pluginStopped(why):
                return "the plugin is stopped: \(why)"
            case let .sandboxTrapped(call, cause, recovery):
                return "\(echo(call)) failed: \(cause); \(recovery)"
            case let .wasmMemoryTotalReached(limit, _, _, failure):
                return "\(failure) (a memory.grow was refused: \(WasmMemoryBudget.reachedPhrase(limit: limit)))"
            case let .notAcknowledged(action, journal):
                // Fenced, the machine that ran it is dropped, and the host that owns the
                // instance now brings it back without it: it was not applied anywhere.
                if case .fenced = journal.reason { return "'\(echo(action))' was not applied: \(journal)" }
                return "'\(echo(action))' ran but is not acknowledged (it will not be there after a restart): \(journal)"
            }
        }
    }
}

/// `text` as an error line echoes it (``PluginLimits/echo(_:)``).
private func echo(_ text: String) -> String { PluginLimits.echo(text) }

private func article(_ type: PluginValueType) -> String {
    switch type {
    case .int8, .int16, .int32, .int64: "an"
    default: "a"
    }
}

private func range(_ type: PluginValueType) -> String {
    if type == .float { return "±\(Float.greatestFiniteMagnitude)" }
    if let range = type.signedRange { return "\(range.lowerBound)...\(range.upperBound)" }
    if let max = type.unsignedMax { return "0...\(max)" }
    return "-"
}
