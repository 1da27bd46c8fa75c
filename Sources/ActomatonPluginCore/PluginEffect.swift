import ActomatonCore

/// What a plugin's reducer asks the host to do next: the output type of a reducer exported
/// with `PluginExport`.
///
/// Each part becomes a host function call (`next_action`, `delayed_action`,
/// `repeating_action`, `cancel`, `fail`) and, in the host, an async-layer `Effect` on the
/// machine's `EffectQueueManager`. Parts combine with `+`, in order.
///
/// ```swift
/// return .cancel(id: "session") + .after(.seconds(1), send: .logoutOK, id: "login-flow")
/// ```
public struct PluginEffect<Action>: ReducerOutput {
    /// One request, in the order the reducer made them.
    public enum Part {
        /// ``PluginEffect/next(_:)``.
        case next(Action)
        /// ``PluginEffect/after(_:send:id:queue:)``.
        case delayed(Action, Duration, id: String?, queue: PluginQueue?)
        /// ``PluginEffect/every(_:send:id:queue:)``.
        case repeating(Action, Duration, id: String?, queue: PluginQueue?)
        /// ``PluginEffect/cancel(id:)``.
        case cancel(String)
        /// ``PluginEffect/fail(_:)``.
        case fail(String)
    }

    /// The requests, in order.
    public private(set) var parts: [Part]

    init(_ parts: [Part]) {
        self.parts = parts
    }

    /// Nothing to do.
    public static var empty: PluginEffect { PluginEffect([]) }

    /// `lhs`'s parts, then `rhs`'s.
    public static func + (lhs: PluginEffect, rhs: PluginEffect) -> PluginEffect {
        PluginEffect(lhs.parts + rhs.parts)
    }

    /// Feeds `action` back at once, within the same send.
    public static func next(_ action: Action) -> PluginEffect {
        PluginEffect([.next(action)])
    }

    /// Sends `action` after `delay` on the machine's clock.
    ///
    /// - Parameters:
    ///   - delay: How long to wait, on the machine's clock.
    ///   - action: The action to send when the delay is over.
    ///   - id: Cancels running effects with the same ID when this one starts, and lets
    ///     ``cancel(id:)`` cancel this one.
    ///   - queue: The queue this effect runs in.
    public static func after(_ delay: Duration, send action: Action, id: String? = nil, queue: PluginQueue? = nil) -> PluginEffect {
        PluginEffect([.delayed(action, delay, id: id, queue: queue)])
    }

    /// Sends `action` every `interval` on the machine's clock until cancelled by `id`.
    public static func every(_ interval: Duration, send action: Action, id: String? = nil, queue: PluginQueue? = nil) -> PluginEffect {
        PluginEffect([.repeating(action, interval, id: id, queue: queue)])
    }

    /// Cancels the running effects with ID `id`.
    public static func cancel(id: String) -> PluginEffect {
        PluginEffect([.cancel(id)])
    }

    /// Refuses the action: the state stays as it was before the reducer ran, no other part
    /// of the output is requested, and the host reports `message` to the user.
    public static func fail(_ message: String) -> PluginEffect {
        PluginEffect([.fail(message)])
    }
}

extension PluginEffect: Sendable where Action: Sendable {}
extension PluginEffect.Part: Sendable where Action: Sendable {}

/// A named queue for delayed and repeating actions: effects with the same name share its
/// policy, as with the async layer's `EffectQueue`.
public struct PluginQueue: Sendable, Hashable {
    /// How many of the queue's effects run at once, and what happens to the rest.
    public typealias Policy = PluginQueuePolicy

    /// The queue's name.
    public var name: String
    /// Its policy.
    public var policy: Policy

    /// Creates a queue.
    public init(_ name: String, policy: Policy) {
        self.name = name
        self.policy = policy
    }
}
