import ActomatonHost
@testable import ActomatonService
import CSQLite
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization
import Testing

/// `serve --listen` logs through swift-log: plugins' lines at info, what no request answers
/// (a timer's failed action, what the journal could not bring back) at warning; every line
/// says which instance, and is one line whatever a plugin wrote.
@Suite struct LoggingTests {
    static let hostile: PluginType = try! PluginType.load(path: plugin("ActomatonHostTestFixtures"), isolation: .none,
                                                          options: Plugin.LoadOptions(entrySymbol: "fixture_hostile_entry"))

    @Test func aPluginsLogLineGoesToTheLoggerAtInfoWithItsInstance() async throws {
        let logged = LogStore()
        let server = ActomatonServer(catalog: PluginCatalog([Self.hostile]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     logger: logged.logger(level: .trace))
        try await server.makeApplication().test(.router) { client in
            let response = try await client.post("room-1", #"{"action": "log_with_controls"}"#, plugin: "hostile")
            #expect(response.status == .ok)
        }
        let lines = logged.messages(at: .info)
        #expect(lines == [#"hostile/room-1: line one\r\nerror: forged\u{1B}[0m"#], "\(lines)")
    }

    /// Regression: a transition whose state the plugin could not describe answered `"state":
    /// null`, and the reason went nowhere.
    @Test func aStateThatCannotBeDescribedIsLoggedAtWarning() async throws {
        let logged = LogStore()
        let server = ActomatonServer(catalog: PluginCatalog([Self.hostile]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     logger: logged.logger(level: .trace))
        try await server.makeApplication().test(.router) { client in
            let response = try await client.post("d", #"{"action": "describe_mode", "args": [1]}"#, plugin: "hostile")
            #expect(response.status == .ok && response.text.contains(#""state":null"#), "\(response.text)")
        }
        let warnings = logged.messages(at: .warning)
        #expect(warnings == ["hostile/d: after 'describe_mode 1': cannot describe the state: the plugin asked for 18446744073709551615 bytes, "
                             + "more than the limit of 16777216"], "\(warnings)")
    }

    /// Regression: a plugin's refusal reached the log as it wrote it, a forged line included.
    @Test func aRefusalIsLoggedAtWarningOnOneLine() async throws {
        let logged = LogStore()
        let server = ActomatonServer(catalog: PluginCatalog([Self.hostile]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     logger: logged.logger(level: .trace))
        try await server.makeApplication().test(.router) { client in
            let response = try await client.post("r", #"{"action": "fail_with_controls"}"#, plugin: "hostile")
            #expect(response.status == .unprocessableContent)
        }
        let warnings = logged.messages(at: .warning)
        #expect(warnings == [#"POST /v1/machines/hostile/r: 422 plugin hostile: 'fail_with_controls' failed: "#
                             + #"no\nerror: forged line\u{1B}[31m red \xFF"#], "\(warnings)")
    }

    /// Regression: without `pluginLog`, what the journal could not bring back was dropped.
    @Test func whatTheJournalCannotBringBackIsLoggedAtWarning() async throws {
        let path = try temporaryDirectory() + "/state.sqlite"
        do {
            let journal = try PluginJournal(path: path)
            let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                         journal: try ServiceJournal(journal))
            try await server.makeApplication().test(.router) { client in
                for amount in 1...3 {
                    let response = try await client.post("a", #"{"action": "add", "args": [\#(amount)]}"#)
                    #expect(response.status == .ok)
                }
            }
            journal.close()
        }
        var handle: OpaquePointer?
        #expect(sqlite3_open(path, &handle) == SQLITE_OK)
        #expect(sqlite3_exec(handle, "UPDATE actions SET action = 'ju' || char(10) || 'mp' WHERE seq = 2", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(handle)

        let journal = try PluginJournal(path: path)
        defer { journal.close() }
        let logged = LogStore()
        let server = ActomatonServer(catalog: PluginCatalog([counterType]), tokens: nil, listen: try ListenAddress("127.0.0.1:0"),
                                     logger: logged.logger(level: .trace), journal: try ServiceJournal(journal))
        try await server.makeApplication().test(.router) { client in
            let status = try await client.get("/v1/machines/counter/a").text
            #expect(status.contains(#""state":{"count":4}"#), "\(status)")
        }
        let warnings = logged.messages(at: .warning)
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.hasPrefix(#"counter/a: journaled action #2 'ju\nmp 2' (version 1.0.0) cannot be replayed: "#) == true,
                "\(warnings)")
    }
}
