/// A piece of executable content: what a transition, an entry or an exit does besides moving
/// between states — update the context, emit an output (fixed, or computed from the state),
/// raise an event, or choose among branches by guards (SCXML's `<assign>`, `<send>`, `<raise>`
/// and `<if>`).
///
/// A list of actions runs in order, as SCXML runs a block of content, so an output computed
/// after an assignment sees the new value:
///
/// ```swift
/// .on(.fire, to: .ready, when: { $0.context.rounds > 0 }, actions: [
///     .assign { $0.rounds -= 1 },
///     .emit { state, _ in .shot(left: state.context.rounds) },
///     .if({ $0.context.rounds == 0 }, then: [.raise(.empty)]),
/// ])
/// ```
///
/// Actions are pure functions of the values they are given: the context to update, the state
/// (its configuration, for `In(…)`, and its context) and the event being processed — `nil`
/// while the chart starts, and for eventless transitions and done events. A chart calls them
/// while it runs, while it is compiled (``Statechart/compiled(events:stateLimit:classifiedBy:)``)
/// and while it generates tests, so they must not reach outside.
public struct StatechartAction<StateID: StatechartStateID, Event: Sendable, Output> {
    /// What an action does; read by the chart as it runs.
    @usableFromInline
    enum Kind {
        case assign(@Sendable (inout StateID.Context, Event?) -> Void)
        case output(Output)
        case computedOutput(@Sendable (StatechartState<StateID>, Event?) -> Output)
        case raise(Event)
        /// The first branch whose condition holds runs; a branch without a condition always
        /// holds (an `else`).
        case choose([Branch])
    }

    /// A branch of an `if(_:then:else:)`: a condition, `nil` for `else`, and
    /// what runs when it holds.
    @usableFromInline
    struct Branch {
        @usableFromInline let condition: (@Sendable (StatechartState<StateID>) -> Bool)?
        @usableFromInline let actions: [StatechartAction]
        /// The branch's number in its chart (see ``StatechartAction/serial``).
        @usableFromInline var serial: Int32 = -1

        @usableFromInline
        init(condition: (@Sendable (StatechartState<StateID>) -> Bool)?, actions: [StatechartAction]) {
            self.condition = condition
            self.actions = actions
        }
    }

    @usableFromInline let kind: Kind
    /// The action's number in its chart, given as the chart is built: actions and branches are
    /// numbered together, in document order, so a compiled chart can name the one to run.
    /// -1 until the chart numbers it.
    @usableFromInline var serial: Int32 = -1

    @usableFromInline
    init(_ kind: Kind) {
        self.kind = kind
    }

    /// Updates the context (SCXML's `<assign>`).
    public static func assign(_ update: @escaping @Sendable (inout StateID.Context) -> Void) -> Self {
        Self(.assign { context, _ in update(&context) })
    }

    /// Updates the context from the event being processed, which is `nil` while the chart
    /// starts and for eventless transitions and done events.
    public static func assign(withEvent update: @escaping @Sendable (inout StateID.Context, Event?) -> Void) -> Self {
        Self(.assign(update))
    }

    /// Emits `output`.
    public static func emit(_ output: Output) -> Self {
        Self(.output(output))
    }

    /// Emits the output `make` computes from the state as it is at this point — its context
    /// and its configuration — and the event being processed (`nil` while the chart starts,
    /// and for eventless transitions and done events).
    public static func emit(_ make: @escaping @Sendable (StatechartState<StateID>, Event?) -> Output) -> Self {
        Self(.computedOutput(make))
    }

    /// Raises `event` (SCXML's `<raise>`): it joins the internal queue, behind the events
    /// already waiting.
    public static func raise(_ event: Event) -> Self {
        Self(.raise(event))
    }

    /// Runs `then` when `condition` holds, else `otherwise` (SCXML's `<if>` / `<else>`); an
    /// `.if` as the only action of `otherwise` is an `<elseif>`.
    ///
    /// The condition sees the state as it is at this point of the content: the context as the
    /// actions before it left it, and the configuration as SCXML has it there — an exiting
    /// state is still active in its own exit actions, an entering one already active in its
    /// entry actions — so `{ $0.isIn(.s1) }` is SCXML's `In('s1')`.
    public static func `if`(
        _ condition: @escaping @Sendable (StatechartState<StateID>) -> Bool,
        then actions: [Self],
        else otherwise: [Self] = []
    ) -> Self {
        var branches = [Branch(condition: condition, actions: actions)]
        if otherwise.count == 1, case let .choose(more) = otherwise[0].kind {
            branches += more
        } else if !otherwise.isEmpty {
            branches.append(Branch(condition: nil, actions: otherwise))
        }
        return Self(.choose(branches))
    }
}

extension StatechartAction: Sendable where Output: Sendable {}
extension StatechartAction.Kind: Sendable where Output: Sendable {}
extension StatechartAction.Branch: Sendable where Output: Sendable {}

extension StatechartAction {
    /// The action with itself, its branches and the actions inside them numbered from `next`,
    /// in document order.
    func numbered(from next: inout Int32) -> Self {
        var action: Self
        if case let .choose(branches) = kind {
            let own = next
            next += 1
            action = Self(.choose(branches.map { branch in
                let serial = next
                next += 1
                var numbered = Branch(condition: branch.condition, actions: branch.actions.map { $0.numbered(from: &next) })
                numbered.serial = serial
                return numbered
            }))
            action.serial = own
        } else {
            action = self
            action.serial = next
            next += 1
        }
        return action
    }

    /// Whether the action, or one inside it, raises an event.
    var raisesEvents: Bool {
        switch kind {
        case .raise: true
        case let .choose(branches): branches.contains { $0.actions.contains { $0.raisesEvents } }
        default: false
        }
    }
}
