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
public protocol StatechartStateID: RawRepresentable, Hashable, Sendable where RawValue == Int {}
