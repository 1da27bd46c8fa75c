@testable import ActomatonHost
import ActomatonPluginContract
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The worker conversation, typed: every request and reply survives its frame, and a
/// malformed frame is one violation with a clear message, never a trap.
@Suite("Worker protocol frames")
struct WorkerProtocolTests {
    /// The plugin the host checks effect requests against.
    private static let counter: Plugin = {
        try! Plugin.load(path: plugin("CounterPlugin"))
    }()

    private static func decodeRequest(_ frame: [UInt8]) -> Result<WorkerRequest, WorkerProtocol.Violation> {
        Result { () throws(WorkerProtocol.Violation) in try WorkerRequest(tag: frame[4], payload: Array(frame[5...])) }
    }

    private static func decodeReply(_ frame: [UInt8], vocabulary: Plugin? = counter) -> Result<WorkerReply, WorkerProtocol.Violation> {
        Result { () throws(WorkerProtocol.Violation) in try WorkerReply(tag: frame[4], payload: Array(frame[5...]), vocabulary: vocabulary) }
    }

    /// What the machine's idle thread reads between two calls: a frame only once it is whole.
    /// Part of one is not pending work (the thread then sleeps on the socket until the rest
    /// comes): taken for pending, a frame cut in two made the idle thread spin a core.
    @Test func betweenCallsAFrameIsReadOnlyOnceItIsWhole() throws {
        let pair = try ChannelPair()
        let channel = pair.host
        let frame = WorkerReply.log("between two calls").frame
        #expect(try channel.receiveReplyIfReady(vocabulary: nil) == nil)
        #expect(!channel.ringHoldsBytes)
        try pair.worker.send(bytes: Array(frame.prefix(7)), deadline: nil)
        #expect(channel.ringHoldsBytes, "the idle thread is told to look")
        #expect(try channel.receiveReplyIfReady(vocabulary: nil) == nil)
        #expect(!channel.holdsWholeFrame && !channel.ringHoldsBytes, "part of a frame is not pending work")
        try pair.worker.send(bytes: Array(frame.dropFirst(7) + frame), deadline: nil)
        #expect(try channel.receiveReplyIfReady(vocabulary: nil) == .log("between two calls"))
        #expect(channel.holdsWholeFrame, "the second frame came with the first")
        #expect(try channel.receiveReplyIfReady(vocabulary: nil) == .log("between two calls"))
        #expect(!channel.holdsWholeFrame)
        pair.closeWorkerSocket()
        #expect(throws: WorkerChannel.Failure.self) { try channel.receiveReplyIfReady(vocabulary: nil) }
    }

    @Test func everyRequestSurvivesItsFrame() {
        let requests: [WorkerRequest] = [
            .load(path: "/plugins/counter.so", entrySymbol: "actomaton_plugin_entry", maxFileSize: 256 << 20, allowWritableByOthers: true),
            .perform(name: "add", arguments: [.int(-5), .uint(7), .bool(true), .float(1.5), .string("é\n")]),
            .snapshot, .restore([0, 1, 2, 255]), .restore([]), .describe, .active,
        ]
        for request in requests { #expect(Self.decodeRequest(request.frame) == .success(request)) }
    }

    @Test func everyReplySurvivesItsFrame() throws {
        let add = try Self.counter.checkedAction("add", [.int(1)])
        let replies: [WorkerReply] = [
            .hello(version: WorkerProtocol.version),
            .loaded(Self.counter.manifest),
            .loadFailed("no such file"),
            .performed([
                .next(add),
                .delayed(add, after: .milliseconds(5), PluginEffectOptions(id: "tick", queue: .init(name: "q", policy: .runNewest(maxCount: 2)))),
                .repeating(add, every: .seconds(1), PluginEffectOptions()),
                .cancel(id: "tick"),
            ]),
            .failed(.refused(action: "add", message: "no")),
            .failed(.restoreRefused("bad bytes")),
            .snapshotTaken([9, 8, 7]), .restored, .described(#"{"count":1}"#), .log("a line"),
            .activeNodes(nil), .activeNodes([]), .activeNodes(["X to move", "é"]),
        ]
        for reply in replies { #expect(Self.decodeReply(reply.frame) == .success(reply)) }
        // A manifest of version 2, with and without its diagram, and one of version 1.
        var manifest = Self.counter.manifest
        manifest.abiVersion = 2
        manifest.diagram = "digraph { a -> b }"
        manifest.namesActiveNodes = true
        #expect(Self.decodeReply(WorkerReply.loaded(manifest).frame) == .success(.loaded(manifest)))
        manifest.diagram = nil
        #expect(Self.decodeReply(WorkerReply.loaded(manifest).frame) == .success(.loaded(manifest)))
        manifest.abiVersion = 1
        manifest.namesActiveNodes = false
        #expect(Self.decodeReply(WorkerReply.loaded(manifest).frame) == .success(.loaded(manifest)))
    }

    @Test func malformedFramesAreViolations() {
        // An unknown tag, either way.
        #expect(Self.decodeRequest([1, 0, 0, 0, 200]) == .failure(.init("unknown frame tag 200")))
        #expect(Self.decodeReply([1, 0, 0, 0, 0]) == .failure(.init("unknown frame tag 0")))
        // A reply where a request belongs, and the other way round.
        #expect(Self.decodeRequest(WorkerReply.restored.frame) == .failure(.init("a malformed restored frame: a restored frame is not a request")))
        #expect(Self.decodeReply(WorkerRequest.snapshot.frame) == .failure(.init("a malformed snapshot frame: a snapshot frame is not a reply")))
        // Cut short, and one byte too many.
        let perform = WorkerRequest.perform(name: "add", arguments: [.int(1)]).frame
        #expect(Self.decodeRequest(Array(perform.dropLast())) == .failure(.init("a malformed perform frame: a frame ends early")))
        #expect(Self.decodeRequest(perform + [0]) == .failure(.init("a malformed perform frame: a frame has 1 bytes too many")))
        // Effect requests before a plugin is loaded, and naming an action it does not have.
        let performed = WorkerReply.performed([.cancel(id: "x")]).frame
        #expect(Self.decodeReply(performed, vocabulary: nil) == .failure(.init("a malformed performed frame: it came before a plugin was loaded")))
        // A string past its limit: an action name one byte past ACTOMATON_MAX_NAME_LENGTH.
        let longName = String(repeating: "a", count: ManifestLimits.maxNameBytes + 1)
        #expect(Self.decodeRequest(WorkerRequest.perform(name: longName, arguments: []).frame)
            == .failure(.init("a malformed perform frame: a string of \(ManifestLimits.maxNameBytes + 1) bytes passes its limit of \(ManifestLimits.maxNameBytes)")))
        let atLimit = WorkerRequest.perform(name: String(longName.dropLast()), arguments: [])
        #expect(Self.decodeRequest(atLimit.frame) == .success(atLimit))
        // Arguments: ACTOMATON_MAX_PARAMETERS at most.
        let most = WorkerRequest.perform(name: "add", arguments: Array(repeating: .int(0), count: ManifestLimits.maxParameters))
        #expect(Self.decodeRequest(most.frame) == .success(most))
        let tooMany = WorkerRequest.perform(name: "add", arguments: Array(repeating: .int(0), count: ManifestLimits.maxParameters + 1))
        #expect(Self.decodeRequest(tooMany.frame)
            == .failure(.init("a malformed perform frame: \(ManifestLimits.maxParameters + 1) arguments pass the limit of \(ManifestLimits.maxParameters)")))
    }

    @Test func unknownActionsInEffectRequestsAreViolations() throws {
        let vocabulary = try Plugin.load(path: plugin("LoginPlugin"))
        let foreign = try vocabulary.checkedAction("login", [.string("ada")])
        let result = Self.decodeReply(WorkerReply.performed([.next(foreign)]).frame)
        guard case let .failure(violation) = result else {
            Issue.record("an action of another plugin was accepted: \(result)")
            return
        }
        #expect(violation.description.hasPrefix("a malformed performed frame: a request names an action the plugin does not have"))
    }

    @Test func aManifestOfAnotherABIVersionIsAViolation() {
        var manifest = Self.counter.manifest
        manifest.abiVersion = ManifestReader.supportedABIVersion + 1
        #expect(Self.decodeReply(WorkerReply.loaded(manifest).frame)
            == .failure(.init("a malformed loaded frame: the manifest has ABI version \(manifest.abiVersion), not one of 1 to \(ManifestReader.supportedABIVersion)")))
    }

    /// Active nodes a worker sends are checked again: past the count, an empty name, a name
    /// with a newline or past its length is a violation.
    @Test func badActiveNodesAreViolations() {
        let atLimit = (0..<ActiveNodes.maxCount).map { "n\($0)" }
        #expect(Self.decodeReply(WorkerReply.activeNodes(atLimit).frame) == .success(.activeNodes(atLimit)))
        #expect(Self.decodeReply(WorkerReply.activeNodes(atLimit + ["one more"]).frame)
            == .failure(.init("a malformed activeNodes frame: 65 active nodes pass the limit of 64")))
        #expect(Self.decodeReply(WorkerReply.activeNodes(["a", ""]).frame)
            == .failure(.init("a malformed activeNodes frame: active node 2 is empty")))
        #expect(Self.decodeReply(WorkerReply.activeNodes(["a\nb"]).frame)
            == .failure(.init("a malformed activeNodes frame: active node 1 holds the control character U+000A")))
        let longest = String(repeating: "x", count: ActiveNodes.maxNameBytes)
        #expect(Self.decodeReply(WorkerReply.activeNodes([longest]).frame) == .success(.activeNodes([longest])))
        #expect(Self.decodeReply(WorkerReply.activeNodes([longest + "x"]).frame)
            == .failure(.init("a malformed activeNodes frame: a string of 257 bytes passes its limit of 256")))
    }

    /// A diagram in a frame is held to the manifest's limit, like any other text of it.
    @Test func aDiagramPastItsLimitInAFrameIsRefused() {
        var manifest = Self.counter.manifest
        manifest.abiVersion = 2
        manifest.diagram = String(repeating: " ", count: ManifestLimits.maxDiagramBytes)
        #expect(Self.decodeReply(WorkerReply.loaded(manifest).frame) == .success(.loaded(manifest)))
        manifest.diagram! += " "
        #expect(Self.decodeReply(WorkerReply.loaded(manifest).frame)
            == .failure(.init("a malformed loaded frame: the manifest breaks the contract: invalid manifest: the diagram is longer than 65536 bytes")))
    }

    /// A worker that is asked out of turn says why in one log line, then exits with status 2.
    @Test func aWorkerAskedOutOfTurnSaysWhyAndExits() async throws {
        // A worker's start and its answers block: on a thread of their own, not the pool's.
        let (line, next, end) = try await onThreadOfItsOwn { () throws -> (WorkerReply, WorkerReply?, String) in
            let worker = try WorkerProcess.start(WorkerOptions(executable: "\(pluginDirectory)/actomaton-host", loadTimeout: .seconds(20)),
                                                 pluginPath: plugin("ActomatonHostTestFixtures"))
            try worker.channel.send(WorkerRequest.describe, deadline: .now + .seconds(20))
            let line = try worker.channel.receiveReply(deadline: .now + .seconds(20), vocabulary: nil)
            let next = try? worker.channel.receiveReply(deadline: .now + .seconds(20), vocabulary: nil)
            return (line, next, worker.stopAfterClosing())
        }
        #expect(line == .log("worker: the host broke the worker protocol: a describe frame came before a plugin was loaded"))
        #expect(next == nil, "nothing after that line")
        #expect(end == "exited with status 2")
    }

    /// A worker that never says hello is killed at the load timeout, and the line says what it
    /// did: nothing (too slow to start), or frames written on the socket, as workers of
    /// protocol 2 did (another version). Both were "of another version?" before.
    @Test func aWorkerThatNeverSaysHelloIsReportedByWhatItDid() async throws {
        let directory = try temporaryDirectory()
        let (silent, older) = (directory + "/silent-worker", directory + "/older-worker")
        try "#!/bin/sh\nexec sleep 120\n".write(toFile: silent, atomically: true, encoding: .utf8)
        // Protocol 2's hello on the socket (descriptor 3): its length (5), its tag, version 2.
        try "#!/bin/sh\nprintf '\\005\\000\\000\\000\\001\\002\\000\\000\\000' >&3\nexec sleep 120\n"
            .write(toFile: older, atomically: true, encoding: .utf8)
        for path in [silent, older] { chmod(path, 0o755) }
        @Sendable func failure(of executable: String, loadTimeout: Duration) async -> String {
            await onThreadOfItsOwn { () -> String in
                do throws(WorkerChannel.Failure) {
                    _ = try WorkerProcess.start(WorkerOptions(executable: executable, loadTimeout: loadTimeout),
                                                pluginPath: plugin("ActomatonHostTestFixtures"))
                    return "it started"
                } catch let .ended(line) {
                    return line
                } catch {
                    return "\(error)"
                }
            }
        }
        // The older one has seconds to write its frame, even on a loaded machine.
        async let silentFailure = failure(of: silent, loadTimeout: .seconds(1))
        async let olderFailure = failure(of: older, loadTimeout: .seconds(5))
        #expect(await silentFailure == "did not say hello within 1s and was killed: it said nothing (too slow to start: a loaded "
            + "machine, or a plugin whose loading takes that long)")
        #expect(await olderFailure == "did not say hello within 5s and was killed: it wrote its frames on the socket, as workers "
            + "before protocol \(WorkerProtocol.version) did (an actomaton-worker of another version than this host)")
    }

    /// A worker loads only the plugin it was started for (the one file its Landlock domain lets
    /// it read): asked for another, it says so and exits.
    @Test func aWorkerLoadsOnlyThePluginItWasStartedFor() async throws {
        let (line, end) = try await onThreadOfItsOwn { () throws -> (WorkerReply, String) in
            let worker = try WorkerProcess.start(WorkerOptions(executable: "\(pluginDirectory)/actomaton-host", loadTimeout: .seconds(20)),
                                                 pluginPath: plugin("ActomatonHostTestFixtures"))
            try worker.channel.send(WorkerRequest.load(path: "/etc/passwd", entrySymbol: "entry", maxFileSize: 1 << 20, allowWritableByOthers: false),
                                    deadline: .now + .seconds(20))
            return (try worker.channel.receiveReply(deadline: .now + .seconds(20), vocabulary: nil), worker.stopAfterClosing())
        }
        #expect(line == .log("worker: the host broke the worker protocol: it asked for /etc/passwd, the worker was started for \(plugin("ActomatonHostTestFixtures"))"))
        #expect(end == "exited with status 2")
    }

    /// Every prefix and every one-byte change of valid frames decodes or is refused, never traps.
    @Test func damagedFramesNeverTrap() {
        let frames = [
            WorkerReply.loaded(Self.counter.manifest).frame,
            WorkerReply.performed([.cancel(id: "tick")]).frame,
            WorkerReply.failed(.refused(action: "add", message: "no")).frame,
            WorkerRequest.perform(name: "add", arguments: [.string("x"), .float(2)]).frame,
            WorkerRequest.load(path: "/p", entrySymbol: "e", maxFileSize: 1, allowWritableByOthers: false).frame,
        ]
        var decoded = 0
        for frame in frames {
            for length in 5...frame.count {
                let cut = Array(frame[..<length])
                if case .success = Self.decodeReply(cut) { decoded += 1 }
                if case .success = Self.decodeRequest(cut) { decoded += 1 }
            }
            for index in 5..<frame.count {
                for value: UInt8 in [0, 1, 0x7F, 0xFF] {
                    var damaged = frame
                    damaged[index] = value
                    if case .success = Self.decodeReply(damaged) { decoded += 1 }
                    if case .success = Self.decodeRequest(damaged) { decoded += 1 }
                }
            }
        }
        #expect(decoded > 0)
    }
}
