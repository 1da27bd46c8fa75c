/// How strictly a ``TestMachine`` checks a test.
public enum Exhaustivity: Hashable, Sendable {
    /// Every state change, every received action and every effect is asserted: a `send`'s or
    /// `receive`'s closure must describe the whole change, every action effects send back
    /// must be received, in order, and no effect may still run when the test ends.
    case on

    /// Only what the test asserts is checked: a closure's assignments must hold, `receive`
    /// skips the actions before the one it expects, and actions not received and effects
    /// still running at the end are dropped silently. For tests of one part of a large
    /// feature.
    case off
}
