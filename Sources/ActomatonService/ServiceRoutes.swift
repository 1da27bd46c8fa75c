import ActomatonHost
import ActomatonPluginContract
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import HostCommandLine
import NIOCore
import NIOWebSocket
import Synchronization

/// The handlers of the API, version 1: small async functions over typed values; access,
/// draining and errors are middleware's (see ``ActomatonServer/makeRouter()``).
struct ServiceRoutes: Sendable {
    let registry: InstanceRegistry
    let configuration: ServiceConfiguration
    let metrics: ServiceMetrics
    let lifecycle: ServiceLifecycleState
    let idempotency: IdempotencyCache
    /// The actions and deletions of each instance, in the order they came.
    let arrivals: ArrivalOrder
    /// In a cluster: sends requests for instances other hosts own on to them.
    let forwarder: (any RequestForwarder)?
    /// In a cluster: wakes this host's watchers of instances other hosts own.
    let journalChanges: (any JournalChangeSignal)?
    /// How many watchers this host serves from the journal, per instance.
    let journalWatchers: JournalWatcherCount
    /// How many watchers the service has, against `--max-watchers`.
    let watcherBudget: WatcherBudget
    /// How often a watcher fed from the journal reads it when no change was signalled.
    static let journalPollInterval: Duration = .seconds(1)
    /// How long a watcher has to answer the service's close frame once it is written (or
    /// ``ServiceConfiguration/watcherCloseTimeout``, if shorter) before its connection is cut: a
    /// client that never answers held a shutdown for the whole close timeout.
    static let closeReplyTimeout: Duration = .seconds(1)
    /// The most messages a watcher fed from the journal reads at a time.
    static let journalReadLimit = 1000

    static let idempotencyKeyHeader = HTTPField.Name("Idempotency-Key")!
    /// The most transitions a watcher is sent from the journal on `?after=SEQ`.
    static let maxJournaledBacklog = 10_000
    static let replayedHeader = HTTPField.Name("Idempotent-Replayed")!
    /// The largest `Content-Length` a forwarded HEAD's answer passes on: the longest answer the
    /// cluster's forwarder takes from a peer (16 MiB).
    static let maxForwardedHeadLength = 16 << 20

    func add(to router: Router<ServiceRequestContext>) {
        router.get("/healthz") { _, _ in Response.json(#"{"status":"ok"}"#) }
        router.get("/readyz") { [placement = registry.placement] _, _ in
            if lifecycle.isDraining { return Response.json(#"{"status":"shutting down"}"#, status: .serviceUnavailable) }
            // In a cluster: its database out of reach, this host would answer only 503s, or wait.
            if let why = placement?.unavailability {
                return Response.json(JSONText.object([("status", ServiceJSON.string("unavailable")), ("reason", ServiceJSON.string(why))]),
                                     status: .serviceUnavailable)
            }
            return Response.json(#"{"status":"ready"}"#)
        }
        router.get("/metrics") { _, _ in
            // Read from the total every instance's effects count against, not from each machine:
            // asked in its turn, one instance running a long action held every scrape until it
            // ended (a .wasm loop under --fuel off, for good: client review).
            metrics.effectsInFlight(registry.effectTotal.count)
            metrics.wasmMemory(of: registry.catalog)
            metrics.watchHistoryKept(registry.historyBudget.used)
            metrics.passivatedInstancesKeep(registry.passivatedBytes.used)
            metrics.idempotentAnswersKeep(idempotency.keptBytes)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                     body: ResponseBody(byteBuffer: ByteBuffer(string: metrics.prometheusText())))
        }
        // The limits it gives are this service's.
        let document = OpenAPIDocument.yaml(maxPageSize: configuration.maxPageSize)
        router.get("/v1/openapi.yaml") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/yaml"],
                     body: ResponseBody(byteBuffer: ByteBuffer(string: document)))
        }
        router.get("/v1/plugins") { _, _ in Response.json(ServiceJSON.plugins(registry.catalog)) }
        router.get("/v1/machines/:plugin") { request, context in try await listKeys(request, context) }
        router.post("/v1/machines/:plugin/:key") { request, context in try await send(request, context) }
        router.get("/v1/machines/:plugin/:key") { request, context in try await status(request, context) }
        router.delete("/v1/machines/:plugin/:key") { request, context in try await delete(request, context) }
        router.ws("/v1/machines/:plugin/:key/watch") { request, context in
            // Checked before the upgrade, so a refusal is an ordinary error response.
            let address = try address(context)
            if registry.placement != nil, journalChanges != nil, try await owner(of: address, creating: false) != nil {
                // Another host owns it: watched here from the journal.
                guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                    throw ServiceError.badRequest("this route takes a WebSocket upgrade (Connection: Upgrade, Upgrade: websocket)")
                }
                _ = try Self.after(request)
                guard watcherBudget.hasRoom else { throw watcherBudget.refusal }
                return .upgrade(WebSocketToken.upgradeHeaders(for: request.headers))
            }
            let instance = try await registry.instance(at: address, creating: false)
            guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                throw ServiceError.badRequest("this route takes a WebSocket upgrade (Connection: Upgrade, Upgrade: websocket)")
            }
            guard watcherBudget.hasRoom else { throw watcherBudget.refusal }
            guard instance.watcherCount < configuration.maxWatchersPerInstance else {
                throw ServiceError.overLimit("\(instance.address) already has \(configuration.maxWatchersPerInstance) watchers, "
                                             + "its limit (--max-watchers-per-instance)")
            }
            if let after = try Self.after(request) {
                do {
                    try instance.watchers.check(after: after)
                } catch ServiceError.gone where registry.journal != nil {
                    // The journal may still hold them: looked up once upgraded.
                }
            }
            return .upgrade(WebSocketToken.upgradeHeaders(for: request.headers))
        } onUpgrade: { inbound, outbound, context in
            try await watch(context.request, inbound, outbound, context.requestContext)
        }
    }

    /// The path's plugin and key, checked.
    func address(_ context: ServiceRequestContext) throws(ServiceError) -> InstanceAddress {
        guard let plugin = context.parameters.get("plugin"), let key = context.parameters.get("key") else {
            throw .notFound("no such route")
        }
        // The catalog's own spelling: one only equivalent to it (a Kelvin sign for a K) was a
        // second journal name of the same instance (review).
        let type = try registry.catalog.type(named: try PathParameter.decoded(plugin))
        return InstanceAddress(plugin: type.name, key: try InstanceKey(try PathParameter.decoded(key)))
    }

    /// The close code of a watch refused with `status`: 4000 + the status, before its
    /// handshake (``ServiceErrorMiddleware``) or after it (a watch fed from the journal).
    static func refusal(_ status: HTTPResponse.Status) -> WebSocketErrorCode {
        WebSocketErrorCode(codeNumber: 4000 + status.code)
    }

    /// The close code of a watch refused once upgraded: checked before the upgrade too, it is
    /// refused here when the instance changed meanwhile, or when another watcher took the last
    /// place first — with the code the check before would have given (4000 + the status; it was
    /// 1008, a slow reader's code, for a limit, and 1000, "done", for the rest). 1008 for what
    /// only the journal could tell (`journalAsked`), 1001 for a shutdown, as its watchers get.
    static func closeCode(ofLateRefusal error: ServiceError, journalAsked: Bool) -> WebSocketErrorCode {
        switch error {
        case .gone: journalAsked ? .policyViolation : refusal(error.status)
        case .shuttingDown: .goingAway
        default: refusal(error.status)
        }
    }

    /// The watch route's `after`: the seq the watcher saw last, a number from 0 (decimal
    /// digits only, at most 19 of them); `nil` without one.
    static func after(_ request: Request) throws(ServiceError) -> UInt64? {
        guard let text = try queryValue("after", of: request) else { return nil }
        guard (1...19).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let seq = UInt64(text) else {
            throw .badRequest("after must be a seq, a number from 0 to 9999999999999999999")
        }
        return seq
    }

    /// The value of the query parameter `name`, or `nil`; 400 when it is given more than once
    /// (`limit=1&limit=2000` was read as its first, without a word).
    static func queryValue(_ name: String, of request: Request) throws(ServiceError) -> String? {
        // A broken escape is left as it came, and its `%` was then told to be no key character.
        if let query = request.uri.query, PathParameter.hasBrokenEscape(query) {
            throw .badRequest("the query has a % not followed by two hexadecimal digits")
        }
        let values = request.uri.queryParameters.getAll(name)
        guard values.count <= 1 else { throw .badRequest("the query gives \(name) \(values.count) times; give it once") }
        return values.first
    }

    // MARK: Handlers

    /// `GET /v1/machines/{plugin}?after=KEY&limit=N`.
    func listKeys(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        guard let raw = context.parameters.get("plugin") else { throw ServiceError.notFound("no such route") }
        let plugin = try PathParameter.decoded(raw)
        let after = try Self.queryValue("after", of: request).map { text throws(ServiceError) in try InstanceKey(text) }
        var limit = configuration.maxPageSize
        if let text = try Self.queryValue("limit", of: request) {
            // Digits only: `+1` is no page size, though `Int` reads it.
            guard text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(text), (1...configuration.maxPageSize).contains(value) else {
                throw ServiceError.badRequest("limit must be a number from 1 to \(configuration.maxPageSize)")
            }
            limit = value
        }
        let page = try await registry.keys(of: plugin, after: after, limit: limit)
        return .json(ServiceJSON.keys(page.keys, of: plugin, more: page.more))
    }

    /// `GET /v1/machines/{plugin}/{key}`.
    func status(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let address = try address(context)
        if let (name, owner) = try await owner(of: address, creating: false) {
            return try await forward(request, body: ByteBuffer(), of: name, to: owner)
        }
        do {
            let instance = try await registry.instance(at: address, creating: false)
            return .json(ServiceJSON.status(await instance.machine.status(), address: address))
        } catch {
            throw Self.movedMeanwhile(error, forwarding: forwarder != nil)
        }
    }

    /// `error`, unless it says another host owns the instance while this host forwards
    /// requests: then the ownership moved between this host's claim and the request's turn
    /// (nothing was applied), which is 503, retry, as the API documents — not a 421.
    static func movedMeanwhile(_ error: ServiceError, forwarding: Bool) -> ServiceError {
        guard forwarding, case let .ownedElsewhere(name, _) = error else { return error }
        return .unavailable("the ownership of \(name) moved to another host while the request waited; nothing was applied: retry")
    }

    /// In a cluster whose database did not answer this host's last renewal of its lease: a 503
    /// at once, nothing applied. The action's commit would have waited up to 30 s, and the host
    /// then stopped, the request unanswered (and every other one with it).
    private func refuseWhileTheClusterIsOutOfReach() throws(ServiceError) {
        if let why = registry.placement?.unavailability {
            throw .unavailable("\(why); nothing was applied: retry, or send it to another host")
        }
    }

    /// The error of a request cut off by the end of a shutdown's time, counted.
    private func cutOff() -> ServiceError {
        lifecycle.noteCutOff()
        return .shuttingDown
    }

    /// `DELETE /v1/machines/{plugin}/{key}`.
    func delete(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let address = try address(context)
        _ = try registry.catalog.type(named: address.plugin)
        // After the actions that came before it, and before those that come after it (which
        // make the instance anew): an action sent after the DELETE was applied, then deleted.
        guard let arrival = await arrivals.enter(address) else { throw cutOff() }
        defer { arrival.leave() }
        try refuseWhileTheClusterIsOutOfReach()
        if registry.placement != nil {
            // Claimed first: only its owner deletes an instance.
            if let (name, owner) = try await owner(of: address, creating: false) {
                arrival.leave()
                return try await forward(request, body: ByteBuffer(), of: name, to: owner)
            }
        }
        guard try await registry.remove(address) else { throw ServiceError.notFound("no instance \(address)") }
        // Its answers go with it, as its journaled receipts do: a retry is a new request. Those
        // of the actions that came after it are not yet begun: they are kept.
        idempotency.forget(address)
        return .json(JSONText.object([("plugin", ServiceJSON.string(address.plugin)), ("key", ServiceJSON.string(address.key.text)),
                                      ("deleted", "true")]))
    }

    /// `POST /v1/machines/{plugin}/{key}`, with or without an `Idempotency-Key`.
    func send(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let address = try address(context)
        let type = try registry.catalog.type(named: address.plugin)
        // Counted here, whatever ends it: a refusal before the action's turn (its body too long,
        // its key reused with another body) was not counted at all.
        let start = ContinuousClock.now
        do {
            let (response, outcome) = try await send(request, context, to: address, of: type)
            if let outcome {
                metrics.actionFinished(plugin: address.plugin, outcome: outcome, duration: outcome == "replayed" ? nil : ContinuousClock.now - start)
            }
            return response
        } catch let forwarded as NotCountedHere {
            throw forwarded.error
        } catch let cut as RequestCutShort {
            // Not an action: it never arrived whole.
            throw cut
        } catch {
            let serviceError = ServiceErrorMiddleware.serviceError(for: error, request: request, maxBodySize: configuration.maxBodySize)
            metrics.actionFinished(plugin: address.plugin, outcome: Self.outcome(serviceError), duration: ContinuousClock.now - start)
            throw error
        }
    }

    /// An error of a request forwarded to the host that owns its instance: that host counts the
    /// action (a 502 or 504 here may have been applied and counted there).
    private struct NotCountedHere: Error {
        let error: any Error
    }

    /// `POST /v1/machines/{plugin}/{key}`: the answer, and the outcome to count (`nil` for a
    /// request forwarded to another host, which counts it).
    private func send(_ request: Request, _ context: ServiceRequestContext, to address: InstanceAddress,
                      of type: PluginType) async throws -> (Response, outcome: String?) {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: configuration.maxBodySize)
        } catch is NIOTooManyBytesError {
            throw ServiceError.bodyTooLarge(limit: configuration.maxBodySize)
        } catch is CancellationError {
            // Cut off by the end of a shutdown's time (it was logged as a 400).
            throw cutOff()
        } catch let cut as RequestCutShort {
            // The connection's gate answered it (400 or 408), and logged it.
            throw cut
        } catch {
            // Not too long: unreadable (a transfer coding the server does not speak, a cut body).
            throw ServiceError.badRequest("the request body cannot be read: \(error)")
        }
        // In the order it came, among the instance's other actions and deletions: before its
        // key is looked at, so that a deletion that came first forgets only what came before it,
        // and before its instance is claimed (in a cluster, claims end in no order).
        guard let arrival = await arrivals.enter(address) else { throw cutOff() }
        defer { arrival.leave() }
        try refuseWhileTheClusterIsOutOfReach()
        if registry.placement != nil {
            // In a cluster, the instance's owner answers: this host, once it claimed it, or the
            // host the request is forwarded to, which orders it among its own.
            if let (name, owner) = try await owner(of: address, creating: true) {
                arrival.leave()
                do {
                    return (try await forward(request, body: body, of: name, to: owner), nil)
                } catch {
                    throw NotCountedHere(error: error)
                }
            }
        }
        guard let keyText = request.headers[Self.idempotencyKeyHeader] else {
            return (.json(try await apply(body, to: address, of: type, arrival: arrival)), "ok")
        }
        try IdempotencyCache.check(keyText)
        let key = IdempotencyCache.Key(token: context.token?.identity ?? IdempotencyCache.noToken, address: address, key: keyText)
        let fingerprint = IdempotencyCache.Fingerprint(of: body, action: try? Self.action(from: body, for: address, of: type))
        if registry.placement != nil, let journal = registry.journal {
            // In a cluster the journal's receipts are the truth: the answer may have been given by
            // the instance's previous owner, and the instance may have been deleted on another
            // host since this one kept an answer (which was then replayed for an action that no
            // longer existed). A retry that cannot be checked is not run.
            let name = InstanceRegistry.journalName(of: address)
            let journalKey = IdempotencyCache.journalKey(key)
            // An answer kept here while the receipt is read is newer than what is read.
            let mark = idempotency.mark()
            let kept: JournaledReceipt?
            do {
                kept = try await onThreadOfItsOwn { () throws(PluginJournalError) in try journal.receipt(of: name, key: journalKey) }
            } catch {
                throw ServiceError.unavailable("cannot read the answers kept for \(address): \(error); retry")
            }
            idempotency.settle(key, with: kept, readAfter: mark, wallNow: ServiceClock.wallMilliseconds())
        }
        let former = IdempotencyCache.Fingerprint(body.readableBytesView)
        var begun = try await idempotency.begin(key, fingerprint: fingerprint, formerFingerprint: former)
        if case .replayFromJournal = begun {
            if let stored = try await answerKeptInTheJournal(for: key) {
                begun = .replay(stored)
            } else {
                // Deleted since its answer was kept: it runs anew, as after a deletion.
                idempotency.forgetAnswer(key)
                begun = try await idempotency.begin(key, fingerprint: fingerprint, formerFingerprint: former)
            }
        }
        switch begun {
        case .replayFromJournal:
            throw ServiceError.unavailable("the answer kept for this Idempotency-Key is being replaced; retry")
        case let .replay(stored):
            return (.json(stored.body, status: .init(code: stored.status), headers: [Self.replayedHeader: "true"]), "replayed")
        case .proceed:
            let text: String
            do {
                // With a journal, the answer is kept with the action, in its commit.
                let receipt = registry.journal.map { _ in
                    JournalReceiptRequest(key: IdempotencyCache.journalKey(key), fingerprint: fingerprint.description,
                                          expires: ServiceClock.wallMilliseconds() + Int64(idempotency.keptFor / .milliseconds(1))) {
                        ServiceJSON.transition(InstanceTransition($0, seq: $0.sequence, origin: .input, effectID: nil), address: address)
                    }
                }
                text = try await apply(body, to: address, of: type, receipt: receipt, arrival: arrival)
            } catch {
                let serviceError = ServiceErrorMiddleware.serviceError(for: error, request: request, maxBodySize: configuration.maxBodySize)
                idempotency.finish(key, status: Int(serviceError.status.code), body: serviceError.json)
                throw serviceError
            }
            idempotency.finish(key, status: 200, body: text)
            return (.json(text), "ok")
        }
    }

    /// The answer the journal keeps for `key`, once what was acknowledged is committed (an
    /// answer is acknowledged before its commit under `--sync batch` and `off`); `nil` when it
    /// keeps none. 503 when the journal cannot be read.
    private func answerKeptInTheJournal(for key: IdempotencyCache.Key) async throws(ServiceError) -> IdempotencyCache.Stored? {
        guard let journal = registry.journal else { return nil }
        let (name, journalKey) = (InstanceRegistry.journalName(of: key.address), IdempotencyCache.journalKey(key))
        let receipt: JournaledReceipt?
        do {
            try await journal.waitUntilCommitted()
            receipt = try await onThreadOfItsOwn { () throws(PluginJournalError) in try journal.receipt(of: name, key: journalKey) }
        } catch {
            throw .unavailable("cannot read the answer kept for this Idempotency-Key: \(error); retry")
        }
        return receipt.flatMap(IdempotencyCache.stored(fromReceipt:))
    }

    /// In a cluster: claims the instance at `address` for this host (making it when `creating`)
    /// and returns `nil`, or returns its journal name and the URL of the host that owns it.
    func owner(of address: InstanceAddress, creating: Bool) async throws(ServiceError) -> (name: String, owner: String)? {
        do {
            _ = try await registry.instance(at: address, creating: creating)
            return nil
        } catch {
            guard case let .ownedElsewhere(name, owner) = error else { throw error }
            return (name, owner)
        }
    }

    /// The statuses an owner's answer may have to be passed on: those the API answers.
    static let forwardableStatuses: Set<Int> = [200, 400, 401, 403, 404, 405, 410, 413, 421, 422, 429, 431, 500, 502, 503, 504]

    /// Sends `request` (with its `body`, already read) to the host at `owner`, which owns the
    /// instance journaled as `name`, and returns its answer: 503 when it cannot be reached, or
    /// when the request was forwarded here by another host already (ownership is moving); 504
    /// when it was sent and not answered in time (it may have been applied); 502 when the
    /// answer is not one this API gives.
    func forward(_ request: Request, body: ByteBuffer, of name: String, to owner: String) async throws -> Response {
        guard let forwarder else { throw ServiceError.ownedElsewhere(name: name, owner: owner) }
        guard request.headers[ForwardedRequest.forwardedByHeader] == nil else {
            throw ServiceError.unavailable("the ownership of \(name) is moving between hosts; retry")
        }
        var headers = HTTPFields()
        for name in [HTTPField.Name.authorization, .contentType, Self.idempotencyKeyHeader] {
            if let value = request.headers[name] { headers[name] = value }
        }
        headers[ForwardedRequest.forwardedByHeader] = registry.placement?.advertisedURL ?? "unknown"
        // Once sent, the owner may have applied it without an answer that came back.
        let outcome = request.method == .get || request.method == .head ? "retry"
            : "it may have been applied there: retry with the same Idempotency-Key, or read the instance, to find out"
        let answer: ForwardedResponse
        do {
            answer = try await forwarder.forward(ForwardedRequest(method: request.method, path: request.uri.description, headers: headers,
                                                                  body: body), to: owner)
        } catch let error as RequestForwardingError where !error.mayHaveReachedTheOwner {
            throw ServiceError.unavailable("\(name) is owned by the host at \(owner), which could not be reached (\(error)); retry")
        } catch let error as RequestForwardingError where error.ownerAnswered {
            throw ServiceError.badGateway("\(name) is owned by the host at \(owner), whose answer could not be read (\(error)); \(outcome)")
        } catch {
            throw ServiceError.gatewayTimeout("\(name) is owned by the host at \(owner), which did not answer (\(error)); \(outcome)")
        }
        metrics.requestForwarded()
        // A peer is untrusted: only what this API answers is passed on.
        guard Self.forwardableStatuses.contains(answer.status) else {
            throw ServiceError.badGateway("\(name) is owned by the host at \(owner), which answered status \(answer.status), not one this API uses")
        }
        // A HEAD's answer has no body; every other is a JSON object.
        var isJSONObject = false
        if answer.headers[.contentType] == "application/json", let text = String(validating: answer.body.readableBytesView, as: UTF8.self),
           // A state as deep as a state may be, in an answer's object, is one level deeper: such
           // answers were 502 "may have been applied", retries too (review).
           case .object? = try? JSONParser.parse(text, maxDepth: JSONParser.maxDepth + 1) {
            isJSONObject = true
        }
        guard isJSONObject || (request.method == .head && answer.body.readableBytes == 0) else {
            throw ServiceError.badGateway("\(name) is owned by the host at \(owner), which answered status \(answer.status) without a JSON object")
        }
        var fields = HTTPFields()
        for name in [HTTPField.Name.contentType, Self.replayedHeader] {
            if let value = answer.headers[name] { fields[name] = value }
        }
        // A HEAD's answer says how long the GET's body would be; a length that is not a plain
        // number within the body limit is left out.
        if request.method == .head, let length = answer.headers[.contentLength], let count = Int(length), count >= 0,
           count <= Self.maxForwardedHeadLength, String(count) == length {
            fields[.contentLength] = length
        }
        return Response(status: .init(code: answer.status), headers: fields, body: ResponseBody(byteBuffer: answer.body))
    }

    /// Reads an action from `body`, applies it to the instance at `address`, and returns the
    /// transition as JSON; leaves `arrival` once the action has its turn on the instance (a
    /// `.wasm` plugin's: once it is answered).
    func apply(_ body: ByteBuffer, to address: InstanceAddress, of type: PluginType,
               receipt: JournalReceiptRequest? = nil, arrival: Arrival? = nil) async throws(ServiceError) -> String {
        do {
            let action = try Self.action(from: body, for: address, of: type)
            // A `.wasm` action may be sent again once room is made for its memory: it keeps its
            // place until then, so that none that came after it is applied first.
            let onTurn: (@Sendable () -> Void)? = type.plugin.isWebAssembly ? nil : { @Sendable in arrival?.leave() }
            var madeRoom = false
            // Held from when room is made for the action until it is answered.
            var roomTurn: TurnLock?
            defer { roomTurn?.release() }
            while true {
                let instance = try await registry.instance(at: address, creating: true)
                // `nil`: passivated before the action's turn came (sent again to the restored
                // instance), or cut off by the end of a shutdown's time (nothing applied).
                let sent: Result<InstanceTransition?, PluginCallError>
                do {
                    sent = .success(try await instance.machine.send(action, receipt: receipt, onTurn: onTurn))
                } catch {
                    sent = .failure(error)
                }
                // Not when the plugin may have changed its state first: the change is kept,
                // and the action would be applied twice.
                if !madeRoom, case let .failure(error) = sent, !error.reason.mayHaveChangedState,
                   case let .wasmMemoryTotalReached(_, size, needed, _) = error.reason {
                    // A first action that failed applied nothing: it leaves no instance behind,
                    // and is not among those passivated to make room; made again, it needs
                    // all its memory, not only what the grow lacked.
                    let discarded = await registry.discardIfUntouched(address)
                    // Nothing applied: once, with room made, the action is sent again, one
                    // such action at a time (`InstanceRegistry.roomTurn(of:)`).
                    if let turn = await registry.roomTurn(of: type) {
                        guard await turn.acquireUnlessCancelled() else { throw cutOff() }
                        roomTurn = turn
                    }
                    if await registry.makeRoom(inWasmMemoryOf: type, bytes: discarded ? size : needed, excluding: address) {
                        madeRoom = true
                        continue
                    }
                }
                guard let transition = try sent.get() else {
                    if Task.isCancelled { throw cutOff() }
                    continue
                }
                return ServiceJSON.transition(transition, address: address)
            }
        } catch let error as PluginCallError {
            let serviceError = ServiceError(error)
            // A first action that failed applied nothing: it leaves no instance behind.
            await registry.discardIfUntouched(address)
            throw serviceError
        } catch let error as ServiceError {
            throw Self.movedMeanwhile(error, forwarding: forwarder != nil)
        } catch {
            throw .pluginFailed("internal error")
        }
    }

    static func outcome(_ error: ServiceError) -> String {
        switch error {
        case .badRequest: "bad_request"
        case .unprocessable: "refused"
        case .overLimit: "over_limit"
        case .notFound: "not_found"
        case .bodyTooLarge: "too_large"
        case .shuttingDown, .unavailable, .ownedElsewhere, .badGateway, .gatewayTimeout: "unavailable"
        default: "failed"
        }
    }

    /// The action a body asks for: `{"action": "add", "args": [5]}` (or named arguments,
    /// `{"action": "add", "args": {"amount": 5}}`), read and checked as the command line reads
    /// a JSON line, with its messages.
    static func action(from body: ByteBuffer, for address: InstanceAddress, of type: PluginType) throws -> PluginAction {
        guard let text = String(validating: body.readableBytesView, as: UTF8.self) else {
            throw ServiceError.badRequest("the request body is not valid UTF-8")
        }
        // RFC 8259, 8.1: JSON sent over a network has none; it is not whitespace, and the body
        // was told to be no JSON object at all.
        if text.unicodeScalars.first == "\u{FEFF}" {
            throw ServiceError.badRequest("the request body starts with a UTF-8 byte order mark (EF BB BF), which JSON over HTTP does not have "
                                          + "(RFC 8259, 8.1): send the object without it")
        }
        // JSON's whitespace around it (RFC 8259): a line break before the object made it read
        // as a line of words, and refused for an action named after the object (review).
        let isJSONSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        guard let start = text.utf8.firstIndex(where: { !isJSONSpace($0) }), text.utf8[start] == UInt8(ascii: "{"),
              let end = text.utf8.lastIndex(where: { !isJSONSpace($0) }) else {
            throw ServiceError.badRequest(#"the request body must be a JSON object, as in {"action": "add", "args": [5]}"#)
        }
        let line: InputLine
        do {
            // The body's own limit (--max-body-size, up to 64M) bounds it, not an input line's (1 MiB):
            // a body past 1 MiB was refused as a line "skipped".
            line = try InputLine.parse(String(text[start...end]), namesPlugin: false, limit: .max)
        } catch {
            throw ServiceError.badRequest(error.description)
        }
        guard case let .action(plugin, name, arguments) = line else {
            throw ServiceError.badRequest(#"the request body must be a JSON object, as in {"action": "add", "args": [5]}"#)
        }
        if let plugin, plugin != address.plugin {
            throw ServiceError.badRequest("the body names plugin '\(plugin)' but the path names '\(address.plugin)'")
        }
        return try type.action(name, arguments)
    }

    // MARK: Watching

    /// Sends the instance's transitions to a WebSocket until the client leaves or the service
    /// ends the watcher (then with the close code and reason of ``Watcher/EndReason``).
    func watch(_ request: Request, _ inbound: WebSocketInboundStream, _ outbound: WebSocketOutboundWriter,
               _ context: ServiceRequestContext) async throws {
        // Counted from the upgrade to the end, whichever way it is fed.
        guard watcherBudget.take() else {
            // As before the handshake: 4000 + the status (another watcher took the last place meanwhile).
            try await outbound.close(Self.refusal(watcherBudget.refusal.status), line: watcherBudget.refusal.description)
            return
        }
        defer { watcherBudget.giveBack() }
        if let bytes = configuration.watchSendBufferBytes {
            try? await context.channel.setOption(ChannelOptions.socketOption(.so_sndbuf), value: SocketOptionValue(bytes)).get()
        }
        let address = try address(context)
        if registry.placement != nil, let changes = journalChanges, let journal = registry.journal {
            let elsewhere: (name: String, owner: String)?
            do {
                elsewhere = try await owner(of: address, creating: false)
            } catch {
                try await outbound.close(.normalClosure, line: error.description)
                return
            }
            if let elsewhere {
                try await watchFromJournal(elsewhere.name, request: request, journal: journal, changes: changes, inbound, outbound,
                                           channel: context.channel)
                return
            }
        }
        let instance: Instance
        let watcher: Watcher
        do {
            instance = try await registry.instance(at: address, creating: false)
            let after = try Self.after(request)
            do {
                watcher = try instance.watchers.add(buffer: configuration.watcherBuffer, bufferBytes: configuration.watcherBufferBytes, after: after)
            } catch ServiceError.gone where registry.journal != nil {
                watcher = try await addBridgedByTheJournal(to: instance, at: address, after: after ?? 0, journal: registry.journal!)
            }
        } catch {
            try await outbound.close(Self.closeCode(ofLateRefusal: error, journalAsked: registry.journal != nil), line: error.description)
            return
        }
        defer { instance.watchers.remove(watcher) }
        // Shutdown ends the watchers of the instances it finds; one made after (a request in
        // flight brought its instance back) is ended here, or it would keep the host running.
        if lifecycle.isDraining { watcher.end(.shuttingDown) }
        let (channel, closeTimeout) = (context.channel, configuration.watcherCloseTimeout)
        let (closeWritten, closeWrittenSink) = AsyncStream.makeStream(of: Never.self)
        await withTaskGroup(of: WatchPart.self) { group in
            group.addTask {
                for await message in watcher.messages {
                    // Taken when it leaves the buffer: the one being written does not count.
                    watcher.took(message)
                    do { try await outbound.write(.text(message)) } catch { return .writer }
                }
                if let reason = watcher.endReason,
                   (try? await outbound.close(WebSocketErrorCode(codeNumber: Int(reason.closeCode)), line: reason.description)) != nil {
                    closeWrittenSink.finish()
                }
                return .writer
            }
            group.addTask {
                // Everything is written, the close included: the client has a moment to answer it.
                for await _ in closeWritten {}
                guard !Task.isCancelled else { return .deadline }
                do { try await Task.sleep(for: min(Self.closeReplyTimeout, closeTimeout)) } catch { return .deadline }
                channel.close(promise: nil)
                return .deadline
            }
            group.addTask {
                // A client that reads nothing would hold its connection and its place among
                // the watchers for ever, the writes waiting on its full socket: once the
                // watcher is ended, it has a while to take what is buffered and the close.
                await watcher.waitUntilEnded()
                do { try await Task.sleep(for: closeTimeout) } catch { return .deadline }
                channel.close(promise: nil)
                return .deadline
            }
            // The client's frames are read (and dropped) to notice when it leaves, or answers
            // the service's close.
            await Self.readClientFrames(inbound, outbound)
            watcher.finish()
            while let part = await group.next(), part != .writer {}
            group.cancelAll()
        }
    }

    /// Adds a watcher after `seq` to `instance` when memory no longer holds the transitions
    /// after it: the journal's messages bridge them.
    ///
    /// The journal is read before the watcher is added, so a transition told meanwhile (or, under
    /// `--sync batch`, one acknowledged and not yet committed) can leave the bridge short of
    /// where memory begins: then the rest is read once it is committed, and the watcher added
    /// again, for as long as each read brings more, up to ``maxBridgeReads`` reads (an instance
    /// busier than that with a short history in memory is refused as the history's limit has
    /// it). A bridge that does not begin at `seq + 1` is what the journal no longer keeps:
    /// ``ServiceError/gone(_:)``; a journal that cannot be read is 503.
    private func addBridgedByTheJournal(to instance: Instance, at address: InstanceAddress, after seq: UInt64,
                                        journal: PluginJournal) async throws(ServiceError) -> Watcher {
        let name = InstanceRegistry.journalName(of: address)
        @Sendable func read(after ordinal: Int64, limit: Int) async throws(ServiceError) -> [(ordinal: Int64, message: String)] {
            do {
                return try await onThreadOfItsOwn { () throws(PluginJournalError) in
                    try journal.journaledMessages(of: name, after: ordinal, limit: limit)
                }
            } catch {
                throw .unavailable("the journal cannot be read: \(error)")
            }
        }
        var journaled = try await read(after: Int64(seq), limit: Self.maxJournaledBacklog)
        var reads = 1
        while true {
            do {
                return try instance.watchers.add(buffer: configuration.watcherBuffer, bufferBytes: configuration.watcherBufferBytes,
                                                 after: seq, journaled: journaled)
            } catch {
                guard case .gone = error else { throw error }
                let end = journaled.last?.ordinal ?? Int64(seq)
                let contiguous = (journaled.first.map { $0.ordinal == Int64(seq) + 1 } ?? true)
                    && end - Int64(seq) == Int64(journaled.count)
                guard contiguous, journaled.count < Self.maxJournaledBacklog, reads < Self.maxBridgeReads else { throw error }
                try? await journal.waitUntilCommitted()
                let more = try await read(after: end, limit: Self.maxJournaledBacklog - journaled.count)
                reads += 1
                guard !more.isEmpty else { throw error }
                journaled += more
            }
        }
    }

    /// Reads a watcher's frames, which the service drops, until the client leaves — or sends
    /// what RFC 6455 says ends a connection, which is closed then: a continuation with no
    /// message begun, or a new message before the last one ended (1002), a text message that is
    /// not UTF-8 (1007), or a text message longer than ``maxClientMessageBytes`` (1009; a binary
    /// one is dropped frame by frame, never held). They were dropped like any other.
    static func readClientFrames(_ inbound: WebSocketInboundStream, _ outbound: WebSocketOutboundWriter) async {
        var message: (isText: Bool, bytes: [UInt8])?
        var violation: (WebSocketErrorCode, String)?
        do {
            for try await frame in inbound {
                switch frame.opcode {
                case .text, .binary:
                    guard message == nil else {
                        violation = (.protocolError, "a new message began before the last one ended")
                        break
                    }
                    message = (frame.opcode == .text, [])
                case .continuation:
                    guard message != nil else {
                        violation = (.protocolError, "a continuation frame came with no message begun")
                        break
                    }
                }
                if violation != nil { break }
                guard var current = message else { continue }
                if current.isText {
                    guard current.bytes.count + frame.data.readableBytes <= maxClientMessageBytes else {
                        violation = (.messageTooLarge, "a message is longer than \(maxClientMessageBytes) bytes")
                        break
                    }
                    current.bytes += frame.data.readableBytesView
                }
                message = current
                if frame.fin {
                    if current.isText, String(validating: current.bytes, as: UTF8.self) == nil {
                        violation = (.dataInconsistentWithMessage, "a text message is not UTF-8")
                        break
                    }
                    message = nil
                }
            }
        } catch {}
        if let (code, reason) = violation { try? await outbound.close(code, line: reason) }
    }

    /// The longest text message a watcher may send (it is dropped), in bytes.
    static let maxClientMessageBytes = 1 << 16

    /// The longest frame the WebSocket decoder reads, in bytes: past it, the connection is cut
    /// at once. Twice ``maxClientMessageBytes``, so that a message past its limit in one frame is
    /// read and answered 1009 with a reason.
    static let maxClientFrameBytes = 2 * maxClientMessageBytes

    /// The most reads of the journal that bridge one resuming watcher.
    static let maxBridgeReads = 8

    /// The tasks of one watcher's connection.
    private enum WatchPart { case writer, reader, deadline }

    /// In a cluster: sends a watcher the transitions of an instance another host owns, read
    /// from the journal after each change signal (and at least every
    /// ``journalPollInterval``), until the client leaves. Closes with 1008 when `after` is past
    /// the instance's last transition, or before what the journal still keeps; with 1001 when
    /// the service shuts down (within a poll interval).
    ///
    /// It goes at the client's pace, a read of the journal at a time; a connection on which
    /// nothing written reaches the client for ``ServiceConfiguration/watcherCloseTimeout`` (its
    /// socket full) is cut (``WriteStallDeadline``), so that a client that reads nothing does not
    /// hold its place among the watchers for ever.
    func watchFromJournal(_ name: String, request: Request, journal: PluginJournal, changes: any JournalChangeSignal,
                          _ inbound: WebSocketInboundStream, _ outbound: WebSocketOutboundWriter, channel: any Channel) async throws {
        let limit = configuration.maxWatchersPerInstance
        guard journalWatchers.add(name, limit: limit) else {
            // As the owner refuses a watch before its handshake: 4000 + the status.
            try await outbound.close(Self.refusal(.tooManyRequests), line: "\(name) already has \(limit) watchers on this host, its limit (--max-watchers-per-instance)")
            return
        }
        metrics.watchersChanged(by: 1)
        defer {
            journalWatchers.remove(name)
            metrics.watchersChanged(by: -1)
        }
        let count: Int64
        let after: UInt64?
        do {
            after = try Self.after(request)
            count = try await onThreadOfItsOwn { () throws(PluginJournalError) in try journal.transitionCount(of: name) }
        } catch let error as ServiceError {
            try await outbound.close(Self.refusal(error.status), line: error.description)
            return
        } catch {
            try await outbound.close(.unexpectedServerError, line: "the journal cannot be read: \(error)")
            return
        }
        if let after, after > UInt64(clamping: count) {
            try await outbound.close(Self.refusal(.badRequest), line: "after=\(after) is past \(name)'s last transition, seq \(count)")
            return
        }
        let start = after.map(Int64.init) ?? count
        // Where the life of the name it watches stands in the journal: the position of the
        // action numbered `start`. An action numbered `start` or below journaled after it is of
        // a later life (deleted, then made again).
        let startPosition: Int64
        do {
            startPosition = start == 0 ? 0 : try await onThreadOfItsOwn { () throws(PluginJournalError) in
                try journal.journaledMessages(of: name, after: start - 1, orJournaledAfter: .max, limit: 1)
            }.first.flatMap { $0.ordinal == start ? $0.position : nil } ?? 0
        } catch {
            try await outbound.close(.unexpectedServerError, line: "the journal cannot be read: \(error)")
            return
        }
        let readLimit = Self.journalReadLimit
        let stallTimeout = configuration.watcherCloseTimeout
        do {
            try await channel.eventLoop.submit {
                try channel.pipeline.syncOperations.addHandler(WriteStallDeadline(timeout: stallTimeout), position: .first)
            }.get()
        } catch {
            return  // Closed already.
        }
        @Sendable func close(_ code: WebSocketErrorCode, _ line: String) async {
            try? await outbound.close(code, line: line)
        }
        await withTaskGroup(of: WatchPart.self) { group in
            group.addTask {
                var last = start
                var position = startPosition
                var first = after != nil
                while !Task.isCancelled {
                    let messages: [(ordinal: Int64, message: String, position: Int64)]
                    let (seen, seenPosition) = (last, position)
                    do {
                        messages = try await onThreadOfItsOwn { () throws(PluginJournalError) in
                            try journal.journaledMessages(of: name, after: seen, orJournaledAfter: seenPosition, limit: readLimit)
                        }
                    } catch {
                        await close(.unexpectedServerError, "the journal cannot be read: \(error)")
                        return .writer
                    }
                    // A later life's transitions, once it made as many as this one had: read by
                    // their numbers alone, they went on as if they were this one's.
                    if messages.contains(where: { $0.ordinal <= seen }) {
                        let reason = Watcher.EndReason.instanceDeleted
                        await close(WebSocketErrorCode(codeNumber: Int(reason.closeCode)), reason.description)
                        return .writer
                    }
                    if first, let head = messages.first, head.ordinal > last + 1 {
                        let line = "the transitions of \(name) after seq \(last) are no longer kept (the journal keeps those since its "
                            + "older snapshot); read its state (GET) and watch from its seq"
                        // Only the journal could tell: 1008, as documented for the owner too.
                        await close(.policyViolation, line)
                        return .writer
                    }
                    first = false
                    for message in messages {
                        do { try await outbound.write(.text(message.message)) } catch { return .writer }
                        (last, position) = (message.ordinal, message.position)
                    }
                    if messages.count == readLimit { continue }
                    // Deleted: its count starts over. Read any other way, the watcher waited on
                    // and then took the next instance's transitions as if they went on.
                    if messages.isEmpty, let count = try? await onThreadOfItsOwn({ () throws(PluginJournalError) in
                        try journal.transitionCount(of: name)
                    }), count < last {
                        let reason = Watcher.EndReason.instanceDeleted
                        await close(WebSocketErrorCode(codeNumber: Int(reason.closeCode)), reason.description)
                        return .writer
                    }
                    if lifecycle.isDraining {
                        let reason = Watcher.EndReason.shuttingDown
                        await close(WebSocketErrorCode(codeNumber: Int(reason.closeCode)), reason.description)
                        return .writer
                    }
                    // A shutdown that begins while the journal is read wakes it too.
                    await withTaskGroup(of: Void.self) { wait in
                        wait.addTask { await changes.waitForChange(of: name, timeout: Self.journalPollInterval) }
                        wait.addTask { await lifecycle.waitUntilDraining() }
                        await wait.next()
                        wait.cancelAll()
                    }
                }
                return .writer
            }
            // The client's frames are read (and dropped) to notice when it leaves.
            group.addTask {
                await Self.readClientFrames(inbound, outbound)
                return .reader
            }
            if await group.next() == .writer {
                // Closed by the service, or cut: the client has a moment to answer the close.
                group.addTask {
                    do { try await Task.sleep(for: min(Self.closeReplyTimeout, stallTimeout)) } catch { return .deadline }
                    channel.close(promise: nil)
                    return .deadline
                }
                _ = await group.next()
            }
            group.cancelAll()
        }
    }
}

/// How many watchers a host serves from the journal, per instance (in a cluster).
final class JournalWatcherCount: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    private let noneWaiters = ConditionWaiters()

    /// Counts one more watcher of `name`; `false` when it has `limit` already.
    func add(_ name: String, limit: Int) -> Bool {
        counts.withLock { counts in
            guard counts[name, default: 0] < limit else { return false }
            counts[name, default: 0] += 1
            return true
        }
    }

    /// Counts one watcher of `name` less.
    func remove(_ name: String) {
        let none = counts.withLock { counts in
            counts[name, default: 1] -= 1
            if counts[name] == 0 { counts[name] = nil }
            return counts.isEmpty
        }
        if none { noneWaiters.wakeAll() }
    }

    /// How many watchers are counted, of every instance.
    var total: Int { counts.withLock { $0.values.reduce(0, +) } }

    /// Returns once no watcher is counted, or when the task is cancelled (a shutdown past its
    /// timeout).
    func waitUntilNone() async {
        await noneWaiters.wait { total == 0 }
    }
}
