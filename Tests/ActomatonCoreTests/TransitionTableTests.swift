import ActomatonCore
import Testing

enum LoginState: String, Equatable, Sendable, CustomStringConvertible {
    case loggedOut, loggingIn, loggedIn, loggingOut
    var description: String { rawValue }
}

enum LoginInput: String, Equatable, Sendable, CustomStringConvertible {
    case login, loginOK, logout, logoutOK, forceLogout
    var description: String { rawValue }
}

enum LoginEffect: Equatable, Sendable { case requestLogin, requestLogout, requestForceLogout }

let canForceLogout: @Sendable (LoginState) -> Bool = { $0 == .loggingIn || $0 == .loggedIn }

/// The RxAutomaton login flow, as a table.
let loginTable = TransitionTable<LoginInput, LoginState, LoginEffect>([
    /*  Input      |   fromState => toState        |      Output       */
    .login       | .loggedOut     => .loggingIn  | .requestLogin,
    .loginOK     | .loggingIn     => .loggedIn,
    .logout      | .loggedIn      => .loggingOut | .requestLogout,
    .logoutOK    | .loggingOut    => .loggedOut,
    .forceLogout | canForceLogout => .loggingOut | .requestForceLogout,
])

@Suite("TransitionTable")
struct TransitionTableTests {
    @Test func sendThroughTheTableRepliesWithEachTransition() {
        var machine = MealyMachine(state: .loggedOut, reducer: loginTable.reducer, effectManager: ReplyEffectManager())
        #expect(machine.send(.login) == .transitioned(from: .loggedOut, to: .loggingIn, output: .requestLogin))
        #expect(machine.send(.loginOK) == .transitioned(from: .loggingIn, to: .loggedIn, output: nil))
        #expect(machine.send(.logout) == .transitioned(from: .loggedIn, to: .loggingOut, output: .requestLogout))
        #expect(machine.send(.logoutOK) == .transitioned(from: .loggingOut, to: .loggedOut, output: nil))
        #expect(machine.state == .loggedOut)
    }

    @Test func noMatchingRowLeavesTheStateAlone() {
        var machine = MealyMachine(state: .loggedOut, reducer: loginTable.reducer, effectManager: ReplyEffectManager())
        let reply = machine.send(.logout)
        #expect(reply == .noMatch(state: .loggedOut))
        #expect(!reply.isTransitioned)
        #expect(reply.output == nil)
        #expect(machine.state == .loggedOut)
    }

    @Test func predicateRowsMatchEveryStateThePredicateAccepts() {
        for state in [LoginState.loggingIn, .loggedIn] {
            var current = state
            #expect(loginTable.send(.forceLogout, to: &current)
                == .transitioned(from: state, to: .loggingOut, output: .requestForceLogout))
        }
        var current = LoginState.loggedOut
        #expect(loginTable.send(.forceLogout, to: &current) == .noMatch(state: .loggedOut))
    }

    @Test func theFirstMatchingRowWins() {
        let table = TransitionTable<Int, String, String>([
            { $0 > 10 } | { _ in true } => "big" | "first",
            20 | "start" => "twenty" | "second",
        ])
        var state = "start"
        #expect(table.send(20, to: &state) == .transitioned(from: "start", to: "big", output: "first"))
        #expect(table.send(5, to: &state) == .noMatch(state: "big"))
    }

    @Test func rowOutputsDriveAnotherManagerThroughMapOutput() {
        // Each input that fires feeds back the next step of the flow, on ActionEffectManager.
        let reducer = loginTable.reducer.map(output: { reply -> [LoginInput] in
            switch reply.output {
            case .requestLogin: [.loginOK]
            case .requestLogout, .requestForceLogout: [.logoutOK]
            case nil: []
            }
        })
        var machine = MealyMachine(state: .loggedOut, reducer: reducer, effectManager: ActionEffectManager())
        #expect(machine.send(.login) == .completed(steps: 2))
        #expect(machine.state == .loggedIn)
        #expect(machine.send(.forceLogout) == .completed(steps: 2))
        #expect(machine.state == .loggedOut)
    }
}

@Suite("TransitionTable diagrams")
struct TransitionTableDiagramTests {
    /// The predicate row needs the states it could apply in to be known: all of them are named
    /// by other rows here.
    @Test func graphvizDOT() {
        let dot = loginTable.graphvizDOT(name: "Login", initial: .loggedOut)
        #expect(dot == """
            digraph "Login" {
                rankdir=LR;
                node [shape=box, style=rounded];
                "[*]" [shape=point, label=""];
                "[*]" -> "loggedOut";
                "loggedOut" -> "loggingIn" [label="login"];
                "loggingIn" -> "loggedIn" [label="loginOK"];
                "loggingIn" -> "loggingOut" [label="forceLogout"];
                "loggedIn" -> "loggingOut" [label="logout, forceLogout"];
                "loggingOut" -> "loggedOut" [label="logoutOK"];
            }

            """)
    }

    @Test func mermaidStateDiagram() {
        let mermaid = loginTable.mermaidStateDiagram(initial: .loggedOut)
        #expect(mermaid == """
            stateDiagram-v2
                [*] --> loggedOut
                loggedOut --> loggingIn : login
                loggingIn --> loggedIn : loginOK
                loggingIn --> loggingOut : forceLogout
                loggedIn --> loggingOut : logout, forceLogout
                loggingOut --> loggedOut : logoutOK

            """)
    }

    @Test func namesThatAreNotIdentifiersAreDeclaredAndEscaped() {
        let table = TransitionTable<String, String, Void>([
            "go" | "Ready \"1\"" => "in play",
        ])
        let mermaid = table.mermaidStateDiagram(stateName: { $0 }, inputName: { $0 })
        #expect(mermaid == """
            stateDiagram-v2
                state "Ready #quot;1#quot;" as Ready__1_
                state "in play" as in_play
                Ready__1_ --> in_play : go

            """)
        let dot = table.graphvizDOT(stateName: { $0 }, inputName: { $0 })
        #expect(dot.contains(#""Ready \"1\"" -> "in play" [label="go"];"#))
    }

    /// Regression: names that make one identifier ("door open", "door_open") were drawn as one
    /// state, a transition between them as a loop.
    @Test func namesThatMakeOneIdentifierStayApart() {
        let table = TransitionTable<String, String, Void>([
            "close" | "door_open" => "door open",
            "lock" | "door open" => "door-open",
            "open" | "door-open" => "door_open_2",
        ])
        let mermaid = table.mermaidStateDiagram(initial: "door_open", stateName: { $0 }, inputName: { $0 })
        #expect(mermaid == """
            stateDiagram-v2
                [*] --> door_open
                state "door open" as door_open_2
                door_open --> door_open_2 : close
                state "door-open" as door_open_3
                door_open_2 --> door_open_3 : lock
                state "door_open_2" as door_open_2_2
                door_open_3 --> door_open_2_2 : open

            """)
    }

    @Test func predicateInputsNeedTheInputsToTry() {
        let table = TransitionTable<Int, String, Void>([
            { $0 % 2 == 0 } | "idle" => "busy",
        ])
        #expect(table.diagramEdges(stateName: { $0 }, inputName: { "\($0)" }).isEmpty)
        let edges = table.diagramEdges(inputs: [1, 2, 4], stateName: { $0 }, inputName: { "\($0)" })
        #expect(edges == [TransitionDiagramEdge(from: "idle", to: "busy", inputs: ["2", "4"])])
    }
}
