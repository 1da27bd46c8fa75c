/// The name of a state in a ``Statechart``: an enum with `Int` raw values from 0 to 127.
///
/// The raw value is the state's bit in a ``StatechartState``, so checking whether a state is
/// active is one bit test, with no lookup and no allocation. An `enum` with an `Int` raw type
/// numbers its cases 0, 1, 2, … on its own:
///
/// ```swift
/// enum Door: Int, StatechartStateID {
///     case closed, open, locked
/// }
/// ```
///
/// ## Extended state
///
/// The states' type also names the data the chart carries beside its configuration: its
/// ``Context``, SCXML's data model, XState's `context`. It is ``StatechartNoContext`` unless
/// the type says otherwise:
///
/// ```swift
/// enum Gun: Int, StatechartStateID {
///     typealias Context = Magazine     // struct Magazine: Hashable, Sendable { var rounds: Int }
///     case ready, empty
/// }
/// ```
///
/// Every ``StatechartState`` of such a chart holds a `Magazine` in
/// ``StatechartState/context``: guards read it, and ``StatechartAction``s on transitions,
/// entries and exits update it.
public protocol StatechartStateID: RawRepresentable, Hashable, Sendable where RawValue == Int {
    /// The chart's extended state: a value that guards read and actions update. A chart
    /// without one uses ``StatechartNoContext``, which takes no room.
    associatedtype Context: Hashable & Sendable = StatechartNoContext
}

/// The context of a chart that carries no data: an empty value, so its states stay 32 bytes
/// and its charts keep the API they had without a context.
public struct StatechartNoContext: Hashable, Sendable {
    /// The empty context.
    @inlinable
    public init() {}
}
