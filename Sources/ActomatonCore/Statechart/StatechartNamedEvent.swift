/// An event type whose values have SCXML event names — tokens separated by dots, such as
/// `error.communication` or `done.state.level` — so that transitions can match them by
/// descriptor (``StatechartTransition/on(descriptors:to:kind:when:outputs:raise:actions:)``).
///
/// ```swift
/// enum Message: StatechartNamedEvent, Equatable {
///     case connected, failed(code: Int), timedOut
///     var name: String {
///         switch self {
///         case .connected: "net.connected"
///         case .failed: "net.error.refused"
///         case .timedOut: "net.error.timeout"
///         }
///     }
/// }
/// // .on(descriptors: "net.error", to: .offline) takes both errors.
/// ```
public protocol StatechartNamedEvent: Sendable {
    /// The event's name: one or more tokens separated by `.`.
    var name: String { get }
}

/// SCXML's event descriptors: a list separated by spaces, each matching the events whose name
/// is the descriptor or starts with it followed by a dot (`foo` matches `foo` and `foo.bar`,
/// not `foos`); a trailing `.*` changes nothing, and `*` matches every event.
public enum StatechartEventDescriptors {
    /// Whether one of `descriptors` (separated by spaces) matches the event name `name`,
    /// token by token. Allocates nothing.
    public static func matches(_ descriptors: String, name: String) -> Bool {
        let text = descriptors.utf8
        var start = text.startIndex
        while start < text.endIndex {
            if text[start] == UInt8(ascii: " ") {
                start = text.index(after: start)
                continue
            }
            var end = start
            while end < text.endIndex && text[end] != UInt8(ascii: " ") { end = text.index(after: end) }
            if matches(descriptor: text[start..<end], name: name.utf8) { return true }
            start = end
        }
        return false
    }

    private static func matches(descriptor: Substring.UTF8View, name: String.UTF8View) -> Bool {
        var descriptor = descriptor
        if descriptor.last == UInt8(ascii: "*") { descriptor = descriptor.dropLast() }
        if descriptor.last == UInt8(ascii: ".") { descriptor = descriptor.dropLast() }
        if descriptor.isEmpty { return true }
        var position = name.startIndex
        for byte in descriptor {
            guard position < name.endIndex, name[position] == byte else { return false }
            position = name.index(after: position)
        }
        return position == name.endIndex || name[position] == UInt8(ascii: ".")
    }
}

extension StatechartTransition where Event: StatechartNamedEvent {
    /// A transition on every event that one of `descriptors` matches (SCXML's
    /// `event="foo bar.baz"`, ``StatechartEventDescriptors``): `foo` takes `foo` and
    /// `foo.anything`, `*` every event. Diagrams label it with the descriptors.
    public static func on(
        descriptors: String,
        to target: StateID? = nil,
        kind: StatechartTransitionKind = .external,
        when condition: (@Sendable (StatechartState<StateID>) -> Bool)? = nil,
        outputs: [Output] = [],
        raise: [Event] = [],
        actions: [StatechartAction<StateID, Event, Output>] = []
    ) -> Self {
        on(descriptors: descriptors, toAll: target.map { [$0] } ?? [], kind: kind, when: condition, outputs: outputs,
           raise: raise, actions: actions)
    }

    /// A transition on every event that one of `descriptors` matches, to several targets at
    /// once, one per region of a parallel state.
    public static func on(
        descriptors: String,
        toAll targets: [StateID],
        kind: StatechartTransitionKind = .external,
        when condition: (@Sendable (StatechartState<StateID>) -> Bool)? = nil,
        outputs: [Output] = [],
        raise: [Event] = [],
        actions: [StatechartAction<StateID, Event, Output>] = []
    ) -> Self {
        Self(trigger: .event(TransitionPattern(where: { StatechartEventDescriptors.matches(descriptors, name: $0.name) })),
             targets: targets, kind: kind, condition: condition, outputs: outputs, raise: raise, actions: actions,
             label: descriptors)
    }
}
