import Actomaton
import Testing

// The seed README's example 1-2: login / logout, with forceLogout cancelling login's effect
// through a shared EffectID. Network calls are replaced by sleeps on the machine's clock.
private enum State: Sendable, Equatable {
    case loggedOut, loggingIn, loggedIn, loggingOut
}

private enum Action: Sendable {
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

@Suite("Example: login / logout")
struct LoginExampleTests {
    let clock = ManualClock()

    private func makeActomaton() -> Actomaton<Action, State> {
        Actomaton<Action, State>(
            state: .loggedOut,
            reducer: reducer,
            environment: environment,
            clock: clock
        )
    }

    @Test func loginLogout() async throws {
        let actomaton = makeActomaton()
        var t: Task<(), Error>?

        #expect(await actomaton.state == .loggedOut)

        t = await actomaton.send(.login)
        #expect(await actomaton.state == .loggingIn)

        await clock.waitForSleepers(1) // the login request is under way
        await clock.advance(by: .seconds(1))
        try await t?.value // wait for previous effect
        #expect(await actomaton.state == .loggedIn)

        t = await actomaton.send(.logout)
        #expect(await actomaton.state == .loggingOut)

        await clock.waitForSleepers(1)
        await clock.advance(by: .seconds(1))
        try await t?.value // wait for previous effect
        #expect(await actomaton.state == .loggedOut)
    }

    @Test func loginForceLogout() async throws {
        let actomaton = makeActomaton()
        var t: Task<(), Error>?

        #expect(await actomaton.state == .loggedOut)

        let login = await actomaton.send(.login)
        #expect(await actomaton.state == .loggingIn)

        // Wait for a while and interrupt by `forceLogout`.
        // Login's effect will be automatically cancelled because of same `EffectID.
        await clock.waitForSleepers(1)
        await clock.advance(by: .milliseconds(500))
        t = await actomaton.send(.forceLogout)

        #expect(await actomaton.state == .loggingOut)
        await #expect(throws: CancellationError.self) { try await login?.value } // cancelled, delivered nothing

        await clock.waitForSleepers(1) // the logout request
        await clock.advance(by: .seconds(1))
        try await t?.value // wait for previous effect
        #expect(await actomaton.state == .loggedOut)
    }
}
