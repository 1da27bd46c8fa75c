import Actomaton
import ActomatonTesting
import Testing

// The seed README's example 1-2, login / logout, tested with `TestMachine`: every state change
// and every action the effects send back is asserted, and time moves only by hand.
private enum State: Sendable, Equatable {
    case loggedOut, loggingIn, loggedIn, loggingOut
}

private enum Action: Sendable, Equatable {
    case login, loginOK, logout, logoutOK
    case forceLogout
}

// NOTE:
// Use same `EffectID` so that if previous effect is still running,
// next effect with same `EffectID` will automatically cancel the previous one.
private struct LoginFlowEffectID: EffectID {}

private struct Environment: Sendable {
    let loginEffect: @Sendable (_ userId: String) -> Effect<Action>
    let logoutEffect: Effect<Action>
}

private let environment = Environment(
    loginEffect: { userId in
        Effect(id: LoginFlowEffectID()) { context in
            try await context.clock.sleep(for: .seconds(1)) // the login request
            if Task.isCancelled { return nil }
            return Action.loginOK // next action
        }
    },
    logoutEffect: Effect(id: LoginFlowEffectID()) { context in
        try await context.clock.sleep(for: .seconds(1)) // the logout request
        if Task.isCancelled { return nil }
        return Action.logoutOK // next action
    }
)

private let reducer = Reducer<Action, State, Environment> { action, state, environment in
    switch (action, state) {
    case (.login, .loggedOut):
        state = .loggingIn
        return environment.loginEffect("alice")

    case (.loginOK, .loggingIn):
        state = .loggedIn
        return .empty

    case (.logout, .loggedIn),
        (.forceLogout, .loggingIn),
        (.forceLogout, .loggedIn):
        state = .loggingOut
        return environment.logoutEffect

    case (.logoutOK, .loggingOut):
        state = .loggedOut
        return .empty

    default:
        return Effect.fireAndForget {
            print("State transition failed...")
        }
    }
}

@Suite("TestMachine: login / logout")
struct LoginTests {
    @Test func loginLogout() async {
        let machine = TestMachine(state: State.loggedOut, reducer: reducer, environment: environment)

        await machine.send(.login) { $0 = .loggingIn }
        await machine.advance(by: .seconds(1))
        await machine.receive(.loginOK) { $0 = .loggedIn }

        await machine.send(.logout) { $0 = .loggingOut }
        await machine.advance(by: .seconds(1))
        await machine.receive(.logoutOK) { $0 = .loggedOut }
    }

    @Test func loginForceLogout() async {
        let machine = TestMachine(state: State.loggedOut, reducer: reducer, environment: environment)

        await machine.send(.login) { $0 = .loggingIn }

        // Wait for a while and interrupt by `forceLogout`.
        // Login's effect will be automatically cancelled because of same `EffectID`.
        await machine.advance(by: .milliseconds(500))
        await machine.send(.forceLogout) { $0 = .loggingOut }

        // Only the logout effect answers: the cancelled login never sends `loginOK`.
        await machine.advance(by: .seconds(1))
        await machine.receive(.logoutOK) { $0 = .loggedOut }
    }

    @Test func loginIsNotAnsweredBeforeItsTime() async {
        let machine = TestMachine(state: State.loggedOut, reducer: reducer, environment: environment)

        await machine.send(.login) { $0 = .loggingIn }
        await machine.advance(by: .milliseconds(999))
        #expect(await machine.runningEffectCount == 1)
        #expect(await machine.state == .loggingIn)

        await machine.advance(by: .milliseconds(1))
        await machine.receive(.loginOK) { $0 = .loggedIn }
    }

    @Test func invalidTransitionChangesNothing() async {
        let machine = TestMachine(state: State.loggedOut, reducer: reducer, environment: environment)

        // `logout` while logged out is not a transition: the state stays, a log effect runs.
        await machine.send(.logout)
        await machine.finish()
    }
}
