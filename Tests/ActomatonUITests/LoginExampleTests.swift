import ActomatonUI
import Testing

// The upstream tutorial's second example, login / logout with cancellation, on a Store. The
// requests sleep on the machine's clock, which the test moves.
private enum Action: Sendable {
    case login, loginOK, logout, logoutOK
    case forceLogout
}

private enum State: Equatable, Sendable {
    case loggedOut, loggingIn, loggedIn, loggingOut
}

private struct LoginFlowEffectID: EffectID {}

private struct Environment: Sendable {
    let login: @Sendable (_ userId: String) -> Effect<Action>
    let logout: Effect<Action>
}

private let environment = Environment(
    login: { userId in
        Effect(id: LoginFlowEffectID()) { context in
            try await context.clock.sleep(for: .seconds(1)) // the login request
            return Action.loginOK
        }
    },
    logout: Effect(id: LoginFlowEffectID()) { context in
        try await context.clock.sleep(for: .seconds(1)) // the logout request
        return Action.logoutOK
    }
)

private let reducer = Reducer<Action, State, Environment> { action, state, environment in
    switch (action, state) {
    case (.login, .loggedOut):
        state = .loggingIn
        return environment.login("alice")
    case (.loginOK, .loggingIn):
        state = .loggedIn
        return .empty
    case (.logout, .loggedIn), (.forceLogout, .loggingIn), (.forceLogout, .loggedIn):
        state = .loggingOut
        return environment.logout
    case (.logoutOK, .loggingOut):
        state = .loggedOut
        return .empty
    default:
        return .empty
    }
}

@MainActor
@Suite("Example: login / logout")
struct LoginStoreExampleTests {
    @Test func loginLogout() async throws {
        let clock = ManualClock()
        let store = Store<Action, State, Environment>(
            state: .loggedOut,
            reducer: reducer,
            environment: environment,
            clock: clock
        )

        let login = store.send(.login)
        await waitUntil { store.state == .loggingIn }
        await clock.waitForSleepers(1) // the login request is under way
        await clock.advance(by: .seconds(1))
        try await login.value
        #expect(store.state == .loggedIn)

        let logout = store.send(.logout)
        await waitUntil { store.state == .loggingOut }
        await clock.waitForSleepers(1)
        await clock.advance(by: .seconds(1))
        try await logout.value
        #expect(store.state == .loggedOut)
    }

    @Test func forceLogoutCancelsTheLogin() async throws {
        let clock = ManualClock()
        let store = Store<Action, State, Environment>(
            state: .loggedOut,
            reducer: reducer,
            environment: environment,
            clock: clock
        )

        let login = store.send(.login)
        await clock.waitForSleepers(1)
        let logout = store.send(.forceLogout) // same EffectID: the login request is cancelled
        await #expect(throws: CancellationError.self) { try await login.value }
        #expect(store.state == .loggingOut)

        await clock.waitForSleepers(1)
        await clock.advance(by: .seconds(1))
        try await logout.value
        #expect(store.state == .loggedOut)
    }
}
