/// A state machine written as a transition table, in the RxAutomaton style.
///
/// Each row reads `input | from => to`, optionally followed by `| output`; `from` is a state or
/// a predicate on states. The first row that matches the input and the current state fires.
///
/// ```swift
/// let canForceLogout: @Sendable (State) -> Bool = { $0 == .loggingIn || $0 == .loggedIn }
/// let table = TransitionTable<Input, State, Effect>([
///     .login       | .loggedOut     => .loggingIn  | .startLogin,
///     .loginOK     | .loggingIn     => .loggedIn,
///     .logout      | .loggedIn      => .loggingOut | .startLogout,
///     .logoutOK    | .loggingOut    => .loggedOut,
///     .forceLogout | canForceLogout => .loggingOut | .startLogout,
/// ])
/// var machine = table.machine(state: .loggedOut) // a TransitionMachine<Input, State, Effect>
/// machine.send(.login) // .transitioned(from: .loggedOut, to: .loggingIn, output: .startLogin)
/// ```
public struct TransitionTable<Input: Sendable, State: Sendable, Output> {
    /// The rows, in priority order.
    public var rows: [TransitionRow<Input, State, Output>]

    /// Creates a table from rows; earlier rows win.
    @inlinable
    public init(_ rows: [TransitionRow<Input, State, Output>]) {
        self.rows = rows
    }

    /// The row that fires for `input` in `state`, if any.
    @inlinable
    public func row(for input: Input, in state: State) -> TransitionRow<Input, State, Output>? {
        for row in rows where row.matches(input, in: state) {
            return row
        }
        return nil
    }

    /// Runs `input` on `state`: moves it if a row matches, and says what happened.
    @inlinable
    public func send(_ input: Input, to state: inout State) -> TransitionReply<State, Output> {
        guard let row = row(for: input, in: state) else {
            return .noMatch(state: state)
        }
        let from = state
        state = row.transition.to
        return .transitioned(from: from, to: state, output: row.output)
    }
}

extension TransitionTable: Sendable where Output: Sendable {}

extension TransitionTable where Output: Sendable {
    /// The table as a reducer whose output is the ``TransitionReply`` of each input.
    ///
    /// Run it on a ``ReplyEffectManager`` to get each reply back from `send`, or `map(output:)`
    /// it to feed row outputs to another effect manager.
    @inlinable
    public var reducer: MealyReducer<Input, State, Void, TransitionReply<State, Output>> {
        MealyReducer { input, state, _ in self.send(input, to: &state) }
    }
}

/// The machine that runs a ``TransitionTable``: the table's ``TransitionTable/reducer`` on a
/// ``ReplyEffectManager``, so that `send` returns the ``TransitionReply`` of each input.
///
/// It names the type a stored machine needs, which spelled in full is
/// `MealyMachine<MealyReducer<Input, State, Void, TransitionReply<State, Output>>,
/// ReplyEffectManager<Input, TransitionReply<State, Output>>>`:
///
/// ```swift
/// struct Door {
///     var machine: TransitionMachine<DoorInput, DoorState, String>
/// }
/// ```
///
/// Make one with ``TransitionTable/machine(state:)``, or with `MealyMachine(state:reducer:effectManager:)`.
public typealias TransitionMachine<Input: Sendable, State: Sendable, Output: Sendable> = MealyMachine<
    MealyReducer<Input, State, Void, TransitionReply<State, Output>>,
    ReplyEffectManager<Input, TransitionReply<State, Output>>
>

extension TransitionTable where Output: Sendable {
    /// A machine in `state` that runs this table: its `send` returns each input's
    /// ``TransitionReply``.
    @inlinable
    public func machine(state: State) -> TransitionMachine<Input, State, Output> {
        MealyMachine(state: state, reducer: reducer, effectManager: ReplyEffectManager())
    }
}
