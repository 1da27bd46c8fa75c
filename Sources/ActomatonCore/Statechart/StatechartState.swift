/// The state of a running ``Statechart``: its active configuration, its history and its
/// context, as a plain value: 32 bytes for a chart without context
/// (``StatechartNoContext``), 32 bytes and the context otherwise.
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
/// Two states are equal when the same states are active, the same history is remembered and
/// the contexts are equal.
public struct StatechartState<StateID: StatechartStateID>: Hashable, Sendable {
    /// The active states.
    public var active: StatechartStateSet
    /// For every compound or parallel state that has been exited, the children that were active
    /// when it last exited: what its history states resume.
    ///
    /// Children of different parents never overlap, so one set holds every state's memory.
    public var history: StatechartStateSet
    /// The chart's extended state: what its guards read and its actions
    /// (``StatechartAction``) update.
    public var context: StateID.Context

    /// A state with `active` states, `history` and `context`; ``Statechart/initialState`` is
    /// the one a chart starts in.
    @inlinable
    public init(active: StatechartStateSet = StatechartStateSet(), history: StatechartStateSet = StatechartStateSet(), context: StateID.Context) {
        self.active = active
        self.history = history
        self.context = context
    }

    /// A state whose active configuration is exactly `states` (ancestors included), with no
    /// history and `context`: for writing an expected state in a test.
    @inlinable
    public init(_ states: [StateID], context: StateID.Context) {
        var active = StatechartStateSet()
        for state in states { active.insert(state.rawValue) }
        self.init(active: active, context: context)
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

extension StatechartState where StateID.Context == StatechartNoContext {
    /// A state with `active` states and no history, for a chart without context;
    /// ``Statechart/initialState`` is the one a chart starts in.
    @inlinable
    public init(active: StatechartStateSet = StatechartStateSet(), history: StatechartStateSet = StatechartStateSet()) {
        self.init(active: active, history: history, context: StatechartNoContext())
    }

    /// A state whose active configuration is exactly `states` (ancestors included), with no
    /// history, for a chart without context: for writing an expected state in a test.
    @inlinable
    public init(_ states: [StateID]) {
        self.init(states, context: StatechartNoContext())
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
