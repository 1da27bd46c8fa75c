import ActomatonHost

// `actomaton-worker worker --parent PID --plugin PATH --memory BYTES --files COUNT [--cpu SECONDS]
// [--processes 1] [--use-files 1] [--network 1]`: a plugin's worker process, started by the host
// (not for users). The same as `actomaton-host worker`, without the command line and the network
// service linked in: a worker starts faster and weighs less, and what runs isolated plugins builds
// without any server dependency.

PluginWorker.restrictBeforeThreads()
PluginWorker.main(CommandLine.arguments, program: "actomaton-worker")
