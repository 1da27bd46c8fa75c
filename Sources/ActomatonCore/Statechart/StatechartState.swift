/// The state of a running ``Statechart``: its active configuration and its history, as a plain
/// value of 32 bytes.
///
/// The active configuration holds every active state, compound and parallel ancestors
/// included, as SCXML defines it. Ask it with ``isIn(_:)``, or `switch` on the active child of
/// a compound state, which the chart knows (``Statechart/activeChild(of:in:)``):
///
/// ```swift
/// switch chart.activeChild(of: .door, in: state) {
/// case .closed?: ...
/// case .open?: ...
/// default: ...
/// }
/// ```
///
/// Two states are equal when the same states are active and the same history is remembered.
public struct StatechartState<StateID: StatechartStateID>: Hashable, Sendable {
    /// The active states.
    public var active: StatechartStateSet
    /// For every compound or parallel state that has been exited, the children that were active
    /// when it last exited: what its history states resume.
    ///
    /// Children of different parents never overlap, so one set holds every state's memory.
    public var history: StatechartStateSet

    /// A state with `active` states and no history; ``Statechart/initialState`` is the one a
    /// chart starts in.
    @inlinable
    public init(active: StatechartStateSet = StatechartStateSet(), history: StatechartStateSet = StatechartStateSet()) {
        self.active = active
        self.history = history
    }

    /// A state whose active configuration is exactly `states` (ancestors included), with no
    /// history: for writing an expected state in a test.
    @inlinable
    public init(_ states: [StateID]) {
        var active = StatechartStateSet()
        for state in states { active.insert(state.rawValue) }
        self.init(active: active)
    }

    /// Whether `state` is active. A compound state is active while any of its descendants is.
    @inlinable
    public func isIn(_ state: StateID) -> Bool {
        let index = state.rawValue
        return index >= 0 && index < StatechartStateSet.capacity && active.contains(index)
    }

    /// The active states, in the order of their raw values.
    public var activeStates: [StateID] {
        active.compactMap { StateID(rawValue: $0) }
    }
}

extension StatechartState: CustomStringConvertible {
    /// The raw values of the active states, such as `[0, 2, 5]`.
    public var description: String {
        var text = "["
        var first = true
        for index in active {
            if !first { text += ", " }
            text += String(index)
            first = false
        }
        return text + "]"
    }
}
