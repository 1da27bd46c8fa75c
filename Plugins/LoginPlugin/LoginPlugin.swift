import ActomatonCore
import ActomatonPluginKit

// The seed README's login / logout flow as a plugin: login and logout take a second (a
// delayed action sharing the effect ID "login-flow", so forceLogout cancels a login in
// progress), and a session timer ticks every second while logged in.

/// The actions, named as the vocabulary names them.
enum LoginAction: Sendable {
    case login(user: String)
    case loginOK
    case logout
    case logoutOK
    case forceLogout
    case tick
}

/// The session.
struct Session: Codable, Sendable, Equatable {
    enum Phase: String, Codable, Sendable {
        case loggedOut, loggingIn, loggedIn, loggingOut
    }

    var phase = Phase.loggedOut
    var user: String?
    /// Seconds logged in, counted by the session timer.
    var seconds = 0
}

let loginReducer = MealyReducer<LoginAction, Session, Void, PluginEffect<LoginAction>> { action, session, _ in
    switch (action, session.phase) {
    case let (.login(user), .loggedOut):
        guard !user.isEmpty else { return .fail("the user name must not be empty") }
        session.phase = .loggingIn
        session.user = user
        return .after(.seconds(1), send: .loginOK, id: "login-flow")

    case (.loginOK, .loggingIn):
        session.phase = .loggedIn
        return .every(.seconds(1), send: .tick, id: "session-timer")

    case (.tick, .loggedIn):
        session.seconds += 1
        return .empty

    case (.logout, .loggedIn), (.forceLogout, .loggingIn), (.forceLogout, .loggedIn):
        session.phase = .loggingOut
        return .cancel(id: "session-timer") + .after(.seconds(1), send: .logoutOK, id: "login-flow")

    case (.logoutOK, .loggingOut):
        session = Session()
        return .empty

    default:
        return .fail("cannot \(action) while \(session.phase)")
    }
}

let loginPlugin = PluginExport(
    name: "login",
    version: "1.0.0",
    summary: "A login / logout flow with a session timer (Swift, ActomatonPluginKit)",
    reducer: loginReducer,
    initialState: Session(),
    actions: [
        .action("login", "user") { (user: String) in .login(user: user) },
        .action("loginOK") { .loginOK },
        .action("logout") { .logout },
        .action("logoutOK") { .logoutOK },
        .action("forceLogout") { .forceLogout },
        .action("tick") { .tick },
    ]
)

/// The plugin's entry symbol.
@_cdecl("actomaton_plugin_entry")
public func actomatonPluginEntry(_ hostABIVersion: UInt32) -> UnsafeRawPointer? {
    loginPlugin.manifest
}
