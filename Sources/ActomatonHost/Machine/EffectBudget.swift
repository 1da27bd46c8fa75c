import Synchronization

/// How many effects (delayed and repeating actions) one machine has running or waiting, and
/// how many it may have; see ``PluginLimits/defaultMaxEffects``.
///
/// Each effect holds a `Token` that gives its place back when the effect is released —
/// completed, cancelled, or dropped by its queue before it started — so the count cannot
/// drift, whatever path the effect takes.
public final class EffectBudget: Sendable {
    /// The most effects the machine may have at once.
    public let limit: Int
    private let current = Atomic<Int>(0)

    /// Creates a budget of `limit` effects.
    public init(limit: Int) {
        self.limit = limit
    }

    /// How many effects hold a token now.
    public var count: Int { current.load(ordering: .relaxed) }

    /// Takes a place for one effect; the place is given back when the token is released.
    func token() -> Token {
        current.add(1, ordering: .relaxed)
        return Token(budget: self)
    }

    /// One effect's place in the budget.
    final class Token: Sendable {
        private let budget: EffectBudget

        fileprivate init(budget: EffectBudget) {
            self.budget = budget
        }

        deinit {
            budget.current.subtract(1, ordering: .relaxed)
        }
    }
}
