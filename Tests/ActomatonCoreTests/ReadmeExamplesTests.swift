// Every code block of the README's ActomatonCore tour, verbatim, so the README cannot rot.
// `make readme-check` verifies that each README block appears in a test file.

import ActomatonCore
import Testing

@Suite("README: ActomatonCore tour")
struct ReadmeCoreExamplesTests {
    @Test func counter() {
        enum Action { case increment, decrement }

        struct Counter: MealyReducerProtocol {
            func reduce(_ action: Action, into count: inout Int, environment: Void) {
                switch action {
                case .increment: count += 1
                case .decrement: count -= 1
                }
            }
        }

        var machine = MealyMachine(state: 0, reducer: Counter())
        machine.send(.increment)
        machine.send(.increment)
        machine.send(.decrement)
        #expect(machine.state == 1)
    }

    @Test func feedback() {
        enum Action { case tap(Int), add(Int), count }
        struct Totals { var total = 0, taps = 0 }

        let reducer = MealyReducer<Action, Totals, Void, Feedback<Action>> { action, totals, _ in
            switch action {
            case let .tap(n): return .actions(.add(n), .count)  // fed back, in order
            case let .add(n): totals.total += n
            case .count: totals.taps += 1
            }
            return .none
        }

        var machine = MealyMachine(state: Totals(), reducer: reducer, effectManager: ActionEffectManager())
        #expect(machine.send(.tap(5)) == .completed(steps: 3))
        #expect(machine.state.total == 5 && machine.state.taps == 1)
    }

    @Test func composition() {
        struct App { var count = 0, log: [String] = [] }
        enum AppAction { case counter(Int), log(String) }

        let counter = MealyReducer<Int, Int, Void, Void> { delta, count, _ in count += delta }
        let logger = MealyReducer<String, [String], Void, Void> { line, log, _ in log.append(line) }

        let app = MealyReducer.combine(
            counter
                .contramap(action: { (action: AppAction) in
                    if case let .counter(delta) = action { delta } else { nil }
                })
                .contramap(state: StateLens<App, Int>(get: { $0.count }, modify: { app, body in body(&app.count) })),
            logger
                .contramap(action: { (action: AppAction) in
                    if case let .log(line) = action { line } else { nil }
                })
                .contramap(state: StateLens<App, [String]>(get: { $0.log }, modify: { app, body in body(&app.log) }))
        )

        var machine = MealyMachine(state: App(), reducer: app)
        machine.send(.counter(2))
        machine.send(.log("hello"))
        #expect(machine.state.count == 2 && machine.state.log == ["hello"])
    }

    @Test func transitionTable() {
        enum State: String, CustomStringConvertible { case loggedOut, loggingIn, loggedIn, loggingOut; var description: String { rawValue } }
        enum Input: String, CustomStringConvertible { case login, loginOK, logout, logoutOK, forceLogout; var description: String { rawValue } }

        let canForceLogout: @Sendable (State) -> Bool = { $0 == .loggingIn || $0 == .loggedIn }

        let table = TransitionTable<Input, State, String>([
            /*  Input      |   fromState => toState        |  Output  */
            .login       | .loggedOut     => .loggingIn  | "request login",
            .loginOK     | .loggingIn     => .loggedIn,
            .logout      | .loggedIn      => .loggingOut | "request logout",
            .logoutOK    | .loggingOut    => .loggedOut,
            .forceLogout | canForceLogout => .loggingOut | "request logout",
        ])

        var machine = MealyMachine(state: .loggedOut, reducer: table.reducer, effectManager: ReplyEffectManager())
        #expect(machine.send(.login) == .transitioned(from: .loggedOut, to: .loggingIn, output: "request login"))
        #expect(machine.send(.logout) == .noMatch(state: .loggingIn))   // no row: state unchanged
        #expect(machine.send(.forceLogout).isTransitioned)

        print(table.mermaidStateDiagram(initial: .loggedOut))
        #expect(table.mermaidStateDiagram(initial: .loggedOut) == """
            stateDiagram-v2
                [*] --> loggedOut
                loggedOut --> loggingIn : login
                loggingIn --> loggedIn : loginOK
                loggingIn --> loggingOut : forceLogout
                loggedIn --> loggingOut : logout, forceLogout
                loggingOut --> loggedOut : logoutOK

            """)
    }
}
