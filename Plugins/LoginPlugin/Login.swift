import ActomatonCore
import ActomatonPluginCore

// The plugin's reducer and state, shared by login.so (LoginPlugin.swift) and the login wasm
// plugin (wasm/plugins/LoginPlugin.swift): the seed README's login / logout flow. Login and
// logout take a second (a delayed action sharing the effect ID "login-flow", so forceLogout
// cancels a login in progress), and a session timer ticks every second while logged in.

/// The actions.
public enum LoginAction: Sendable {
    case login(user: String)
    case loginOK
    case logout
    case logoutOK
    case forceLogout
    case tick

    /// The plugin's vocabulary, for both kits.
    public static let vocabulary: [PluginActionEntry<LoginAction>] = [
        .action("login", "user") { (user: String) in .login(user: user) },
        .action("loginOK") { .loginOK },
        .action("logout") { .logout },
        .action("logoutOK") { .logoutOK },
        .action("forceLogout") { .forceLogout },
        .action("tick") { .tick },
    ]

    /// The vocabulary entry and arguments of the action (both kits' `requests` mapping).
    public var call: PluginCall {
        switch self {
        case let .login(user): PluginCall("login", .string(user))
        case .loginOK: PluginCall("loginOK")
        case .logout: PluginCall("logout")
        case .logoutOK: PluginCall("logoutOK")
        case .forceLogout: PluginCall("forceLogout")
        case .tick: PluginCall("tick")
        }
    }
}

/// The session.
public struct Session: Sendable, Equatable, CustomStringConvertible {
    public enum Phase: UInt8, Sendable {
        case loggedOut, loggingIn, loggedIn, loggingOut

        /// The phase's name, for messages and the description.
        public var name: String {
            switch self {
            case .loggedOut: "loggedOut"
            case .loggingIn: "loggingIn"
            case .loggedIn: "loggedIn"
            case .loggingOut: "loggingOut"
            }
        }
    }

    public var phase = Phase.loggedOut
    public var user: String?
    /// Seconds logged in, counted by the session timer.
    public var seconds = 0

    public init() {}

    /// `{"phase":"loggedIn","seconds":3,"user":"alice"}`; no `user` when logged out.
    public var description: String {
        var members: [(key: String, value: String)] = [("phase", JSONText.string(phase.name)), ("seconds", "\(seconds)")]
        if let user { members.append(("user", JSONText.string(user))) }
        return JSONText.object(members)
    }
}

extension Session: PluginSnapshotCodable {
    public func encode(to writer: inout PluginSnapshotWriter) {
        writer.write(UInt8(1))
        writer.write(phase.rawValue)
        writer.write(user != nil)
        if let user { writer.write(user) }
        writer.write(Int64(seconds))
    }

    public init(from reader: inout PluginSnapshotReader) throws(PluginSnapshotError) {
        guard try reader.read(UInt8.self) == 1 else { throw PluginSnapshotError("not a login snapshot (unknown version)") }
        guard let phase = Phase(rawValue: try reader.read(UInt8.self)) else { throw PluginSnapshotError("the snapshot holds an unknown phase") }
        self.phase = phase
        user = try reader.read(Bool.self) ? try reader.read(String.self, limit: 4096) : nil
        seconds = Int(try reader.read(Int64.self))
    }
}

extension LoginAction {
    /// The action's name, for messages.
    var name: String { call.name }
}

/// The plugin's reducer.
public let loginReducer = MealyReducer<LoginAction, Session, Void, PluginEffect<LoginAction>> { action, session, _ in
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
        return .fail("cannot \(action.name) while \(session.phase.name)")
    }
}
