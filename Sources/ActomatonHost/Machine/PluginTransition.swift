import ActomatonPluginContract

/// One transition of a plugin's machine: what ``PluginMachine/send(_:)-(PluginAction)``
/// returns, and what observers are told.
public struct PluginTransition: Sendable {
    /// Where the action came from.
    public enum Origin: Sendable, Hashable {
        /// Sent by the host's user (an input line, an API call).
        case input
        /// Fed back by the previous action (`host->next_action`).
        case next
        /// Sent by a delayed action effect, with its effect ID if any.
        case delayed(id: String?)
        /// Sent by a repeating action effect, with its effect ID if any.
        case repeating(id: String?)
    }

    /// The plugin's name.
    public var plugin: String
    /// The name its machine is addressed and journaled by (``PluginMachine/journalName``): the
    /// plugin's, or `plugin/key` for one of its keyed instances (``PluginHost/machine(at:)``).
    public var address: String
    /// The transition's number on its machine: how many actions succeeded on it so far, this
    /// one included; a failed action keeps the number before it. Strictly increasing over the
    /// successful transitions of a machine, also across a restart from a journal.
    public var sequence: UInt64
    /// The action.
    public var action: PluginAction
    /// Where it came from.
    public var origin: Origin
    /// The effects it requested, or why it failed.
    public var outcome: Result<[PluginEffectRequest], PluginCallError>
    /// The effect IDs its cancel requests found running or waiting (and cancelled): a cancel
    /// of an ID nothing had is not listed.
    public var cancelled: [String]
    /// The plugin's description of the state after the transition, or why it could not be
    /// had; `nil` when the machine does not describe states (`describesState`).
    public var state: Result<String, PluginCallError>?
    /// The names of the plugin's diagram nodes active in the state after the transition
    /// (`PluginManifest.diagram`, its `active` function), asked right after the description
    /// in the same turn, or why they could not be had (a list past the contract's limits
    /// fails with one line, as a description does); `nil` when the machine does not describe
    /// states or the plugin names no active nodes (`PluginManifest.namesActiveNodes`).
    public var activeNodes: Result<[String], PluginCallError>? = nil
    /// When the transition counts as acknowledged (durable, per the journal's
    /// ``JournalSyncPolicy``).
    public var acknowledgement: PluginAcknowledgement
    /// Where the transition stands among every transition its machine made in this process,
    /// failed ones included, counting from 1: the order they were made in, for merging the
    /// transitions a send returns with those its observer was told about (``sequence`` counts
    /// successful transitions only, and goes on across a restart).
    public var ordinal: UInt64 = 0

    /// The effects the action requested; empty when it failed.
    public var effects: [PluginEffectRequest] {
        (try? outcome.get()) ?? []
    }

    /// The delayed and repeating actions and next actions it started (its requests but the
    /// cancellations); empty when it failed.
    public var started: [PluginEffectRequest] {
        effects.filter { if case .cancel = $0 { false } else { true } }
    }
}

/// A plugin's state as a transition shows it, for a state reached otherwise (after a recovery,
/// a restore or a reload): ``PluginMachine/describedState()``.
public struct PluginDescribedState: Sendable {
    /// The plugin's description of the state, or why it could not be had.
    public var description: Result<String, PluginCallError>
    /// The names of the diagram's nodes active in the state, or why they could not be had;
    /// `nil` when the plugin names none.
    public var activeNodes: Result<[String], PluginCallError>?

    /// Creates a described state.
    public init(description: Result<String, PluginCallError>, activeNodes: Result<[String], PluginCallError>?) {
        self.description = description
        self.activeNodes = activeNodes
    }
}

/// A way to wait until a transition counts as acknowledged: at once without a journal; with
/// one, once its record and every record before it is durable (``JournalSyncPolicy``).
public struct PluginAcknowledgement: Sendable {
    let journal: PluginJournal?
    let ticket: UInt64
    let action: PluginAction
    let plugin: String

    /// Nothing to wait for: a transition that was not journaled (no journal, or a failed
    /// action, which changes nothing to journal).
    static func immediate(action: PluginAction, plugin: String) -> PluginAcknowledgement {
        PluginAcknowledgement(journal: nil, ticket: 0, action: action, plugin: plugin)
    }

    /// Whether there is anything to wait for.
    public var isImmediate: Bool { journal == nil }

    /// Where an acknowledgement stands.
    public enum State: Sendable, Hashable {
        /// Not yet.
        case pending
        /// Acknowledged.
        case acknowledged
        /// Never will be: a commit failed, or the journal closed first.
        case refused
    }

    /// Where the acknowledgement stands now, without waiting.
    public var state: State {
        guard let journal else { return .acknowledged }
        return journal.acknowledgementState(of: ticket)
    }

    /// Returns once the transition counts as acknowledged, and every one journaled before it
    /// does; throws ``PluginCallError/Reason/notAcknowledged(action:journal:)`` if it never will.
    public func wait() async throws(PluginCallError) {
        guard let journal else { return }
        do {
            try await journal.waitUntilAcknowledged(ticket)
        } catch {
            throw PluginCallError(.notAcknowledged(action: action.description, journal: error), plugin: plugin)
        }
    }
}

/// An action ``PluginMachine/submit(_:receipt:)`` performed: its transition and those of the next
/// actions it fed back, and a way to wait for their acknowledgement.
public struct PluginSubmission: Sendable {
    /// The action's transition.
    public let transition: PluginTransition
    /// The transitions of the next actions it fed back, in the order they ran (a chain cut off
    /// by the feedback limits ends with the refused one).
    public let feedback: [PluginTransition]

    /// The effects the action requested.
    public var effects: [PluginEffectRequest] { transition.effects }

    /// Whether the action and its feedback count as acknowledged already (always without a
    /// journal): ``acknowledged()`` would return at once.
    public var isAcknowledged: Bool {
        let last = feedback.last(where: { !$0.acknowledgement.isImmediate }) ?? transition
        return last.acknowledgement.state == .acknowledged
    }

    /// Returns once the action and its feedback count as acknowledged (``JournalSyncPolicy``;
    /// at once without a journal), and every action submitted before them to the same journal
    /// does; throws ``PluginCallError/Reason/notAcknowledged(action:journal:)`` if they never
    /// will be.
    public func acknowledged() async throws(PluginCallError) {
        let last = feedback.last(where: { !$0.acknowledgement.isImmediate }) ?? transition
        try await last.acknowledgement.wait()
    }
}
