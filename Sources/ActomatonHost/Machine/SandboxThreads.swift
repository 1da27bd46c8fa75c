import Synchronization

/// The threads the machines of sandboxed plugins (WebAssembly modules) run on, a few per
/// plugin.
///
/// A module's call keeps its thread busy until it returns or its fuel runs out — up to a
/// second or so at the default fuel, for ever with `--fuel off` — so it must not run on a
/// thread of the concurrency pool: on two cores, two such calls held every thread of the pool,
/// and with them every request, health check, timer and other plugin of the host. Each plugin
/// has up to ``threadsPerPlugin`` threads of its own, made when first needed; its machines are
/// given them in turn, and each thread runs the jobs of its machines one at a time. A module
/// that spins holds up the instances of its own plugin that share its thread, nothing else.
enum SandboxThreads {
    /// How many threads one plugin's machines share.
    static let threadsPerPlugin = 4

    private struct Threads {
        var executors: [ThreadExecutor] = []
        var given = 0
    }

    private static let byPlugin = Mutex<[String: Threads]>([:])

    /// The thread the next machine of `plugin` runs on; `nil` when the system cannot start one
    /// and the plugin has none yet (the machine then runs on the pool: never wrong, only
    /// exposed to a spinning module).
    static func executor(for plugin: String) -> ThreadExecutor? {
        byPlugin.withLock { table in
            var threads = table[plugin, default: Threads()]
            defer { table[plugin] = threads }
            let index = threads.given % threadsPerPlugin
            threads.given += 1
            if index < threads.executors.count { return threads.executors[index] }
            guard let made = try? ThreadExecutor(name: "sandbox \(plugin)") else { return threads.executors.first }
            threads.executors.append(made)
            return made
        }
    }
}
