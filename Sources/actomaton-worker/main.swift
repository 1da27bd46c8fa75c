import ActomatonHost
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// `actomaton-worker worker --parent PID --memory BYTES --files COUNT [--cpu SECONDS] [--processes 1]`: a plugin's
// worker process, started by the host (not for users). The same as `actomaton-host worker`,
// without the command line and the network service linked in: a worker starts faster and
// weighs less, and what runs isolated plugins builds without any server dependency.

PluginWorker.restrictBeforeThreads()

/// The arguments the host passes, or `nil` with why.
func workerArguments(_ arguments: [String]) -> Result<(parent: Int32, limits: WorkerLimits), WorkerArgumentError> {
    var rest = arguments.dropFirst()
    guard rest.first == "worker" else { return .failure(WorkerArgumentError("the first argument must be `worker`")) }
    rest = rest.dropFirst()
    var values: [String: String] = [:]
    while let name = rest.first {
        guard ["--parent", "--memory", "--files", "--cpu", "--processes"].contains(name), rest.count >= 2 else {
            return .failure(WorkerArgumentError("unexpected argument '\(name)'"))
        }
        values[name] = rest.dropFirst().first
        rest = rest.dropFirst(2)
    }
    guard let parent = values["--parent"].flatMap(Int32.init), let memory = values["--memory"].flatMap(UInt64.init),
          let files = values["--files"].flatMap(UInt64.init) else {
        return .failure(WorkerArgumentError("--parent, --memory and --files are required, as numbers"))
    }
    var cpu: UInt64?
    if let text = values["--cpu"] {
        guard let seconds = UInt64(text) else { return .failure(WorkerArgumentError("--cpu must be a number")) }
        cpu = seconds
    }
    let processes = values["--processes"]
    guard processes == nil || processes == "1" else { return .failure(WorkerArgumentError("--processes takes only 1")) }
    return .success((parent, WorkerLimits(memoryBytes: memory, cpuSeconds: cpu, openFiles: files, mayStartProcesses: processes == "1")))
}

/// Why the arguments were refused.
struct WorkerArgumentError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

switch workerArguments(CommandLine.arguments) {
case let .success((parent, limits)):
    PluginWorker.run(parent: parent, limits: limits)
case let .failure(error):
    let line = "actomaton-worker: \(error.message) (a plugin worker, started by actomaton-host; not for users)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(2)
}
