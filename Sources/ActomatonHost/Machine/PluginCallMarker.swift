import CProcessControl
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Marks, on the current thread, which plugin code runs: so that when a plugin running in the
/// host's process ends it (a crash, a stack overflow, an `exit()`), the host's one line can
/// say which plugin and which call did. Entering gives the thread an alternate signal stack
/// once, so that a stack overflow is reported too.
///
/// The names are C strings made once per plugin instance: marking a call allocates nothing.
final class PluginCallMarker: @unchecked Sendable {
    private let pluginName: UnsafeMutablePointer<CChar>
    private let actionNames: [UnsafeMutablePointer<CChar>]

    /// The names of the calls that are not actions.
    enum Call {
        static let load: StaticString = "load"
        static let create: StaticString = "create"
        static let destroy: StaticString = "destroy"
        static let snapshot: StaticString = "snapshot"
        static let restore: StaticString = "restore"
        static let describe: StaticString = "describe"
        static let active: StaticString = "active"
    }

    init(plugin: String, actions: [String]) {
        pluginName = strdup(plugin)
        actionNames = actions.map { strdup($0) }
    }

    deinit {
        free(pluginName)
        actionNames.forEach { free($0) }
    }

    /// Runs `body` marked as the action at `index`.
    @inline(__always)
    func action<T>(_ index: Int, _ body: () -> T) -> T {
        actomaton_plugin_call_enter(pluginName, actionNames[index])
        defer { actomaton_plugin_call_leave() }
        return body()
    }

    /// Runs `body` marked as `call` (``Call``).
    @inline(__always)
    func call<T, E: Error>(_ call: StaticString, _ body: () throws(E) -> T) throws(E) -> T {
        actomaton_plugin_call_enter(pluginName, UnsafeRawPointer(call.utf8Start).assumingMemoryBound(to: CChar.self))
        defer { actomaton_plugin_call_leave() }
        return try body()
    }

    /// Runs `body` — mapping the library at `path`, which runs its constructors — marked as
    /// loading that file.
    static func loading<T>(_ path: String, _ body: () -> T) -> T {
        let name = "file " + (path.split(separator: "/").last.map(String.init) ?? path)
        return name.withCString { path in
            actomaton_plugin_call_enter(path, UnsafeRawPointer(Call.load.utf8Start).assumingMemoryBound(to: CChar.self))
            defer { actomaton_plugin_call_leave() }
            return body()
        }
    }
}
