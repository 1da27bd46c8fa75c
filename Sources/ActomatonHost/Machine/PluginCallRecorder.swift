import ActomatonPluginContract
import ActomatonPluginABI

/// What one call into a plugin collects through the host functions — the effects it
/// requests, the message it fails with, its first invalid request — and the outcome the call
/// then has. The native runtime (``PluginInstance``, through `HostBinding`) and the
/// WebAssembly runtime (through its host imports) each keep one; both hand it what they read
/// from the plugin, so the rules and the statuses are the same whatever the backend.
struct PluginCallRecorder {
    /// The effects the current action requested, in order.
    private(set) var requests: [PluginEffectRequest] = []
    /// How many of `requests` are delayed or repeating (they count against the effect limit).
    private var timedRequests = 0
    /// The bytes the delayed and repeating ones carry (they count against the byte limit).
    private var timedBytes = 0
    /// How many of `requests` are next actions (at most ``PluginLimits/maxFeedbackSteps``).
    private var nextActions = 0
    /// The bytes `requests` carry (at most ``PluginLimits/maxRequestBytesPerAction``).
    private var requestBytes = 0
    /// What the plugin said through `fail` during the current call.
    private(set) var failureMessage: String?
    /// The first invalid request of the current action, if any.
    private var invalidRequest: InvalidRequest?

    /// Records the request `read` reads from the plugin for the host function `function`
    /// (`"delayed_action"`), checked against the machine's effect `budget`; returns the status
    /// the host function returns: `ACTOMATON_OK`, or `ACTOMATON_INVALID_REQUEST` (the action
    /// then fails, with the first such request's reason).
    mutating func record(
        _ function: String, budget: EffectBudget, _ read: () throws(HostRequestError) -> PluginEffectRequest
    ) -> Int32 {
        let request: PluginEffectRequest
        do {
            request = try read()
        } catch {
            return refuse(.message("\(function): \(error.message)"))
        }
        guard requests.count < PluginLimits.maxRequestsPerAction else {
            return refuse(.message("\(function): one action may make at most \(PluginLimits.maxRequestsPerAction) effect requests"))
        }
        let bytes = request.carriedBytes
        guard requestBytes + bytes <= PluginLimits.maxRequestBytesPerAction else {
            return refuse(.message("\(function): one action's effect requests may carry at most \(PluginLimits.maxRequestBytesPerAction) "
                                   + "bytes of names and strings, and this one would take them to \(requestBytes + bytes)"))
        }
        switch request {
        case .delayed, .repeating:
            if let refusal = budget.refusal(adding: timedRequests + 1, bytes: timedBytes + bytes) {
                return refuse(refusal)
            }
            timedRequests += 1
            timedBytes += bytes
        case .next:
            guard nextActions < PluginLimits.maxFeedbackSteps else { return refuse(.message(InvalidRequest.tooManyNextActions)) }
            nextActions += 1
        case .cancel:
            break
        }
        requests.append(request)
        requestBytes += bytes
        return ACTOMATON_OK
    }

    /// Keeps the first `fail` message of the current call; an empty one says so (the error
    /// line ended at "failed: ").
    mutating func fail(_ message: String) {
        if failureMessage == nil { failureMessage = message.isEmpty ? "(the plugin's message is empty)" : message }
    }

    private mutating func refuse(_ reason: InvalidRequest) -> Int32 {
        if invalidRequest == nil { invalidRequest = reason }
        return Int32(ACTOMATON_INVALID_REQUEST)
    }

    /// The outcome of `action`, whose call returned `status`: its requests when it returned
    /// `ACTOMATON_OK` and made no invalid request, else why it failed. Starts over for the next
    /// call.
    mutating func outcome(of action: PluginAction, status: Int32) -> PluginInstance.Outcome {
        defer { reset() }
        if status == ACTOMATON_OK && invalidRequest == nil {
            return .success(requests)
        }
        switch invalidRequest {
        case let invalid?:
            return .failure(invalid.failure(of: action))
        case nil:
            // The contract's statuses are OK, ERROR and INVALID_REQUEST; a refusal (ERROR) leaves
            // the state as it was. Another status breaks the contract, and the state may not be.
            let broken = status != ACTOMATON_ERROR && status != ACTOMATON_INVALID_REQUEST
            let unknown = "status \(status), which the contract does not have (0 for done, 1 for refused); its state may have changed"
            let message = switch (failureMessage, broken) {
            case let (said?, true): "\(said) (and \(unknown))"
            case let (said?, false): said
            case (nil, true): "the plugin returned \(unknown)"
            case (nil, false): "the plugin returned status \(status) without saying why"
            }
            return .failure(.refused(action: action.description, message: message))
        }
    }

    /// Why `restore`, which returned `status`, refused the snapshot; `nil` when it accepted it.
    /// Starts over for the next call.
    mutating func restoreRefusal(status: Int32) -> String? {
        defer { reset() }
        guard status != ACTOMATON_OK else { return nil }
        return failureMessage ?? "restore returned status \(status)"
    }

    /// Forgets what the current call recorded.
    mutating func reset() {
        if !requests.isEmpty { requests.removeAll(keepingCapacity: true) }
        timedRequests = 0
        timedBytes = 0
        nextActions = 0
        requestBytes = 0
        failureMessage = nil
        invalidRequest = nil
    }
}

/// The first invalid request of an action.
enum InvalidRequest: Equatable {
    /// A request the host could not accept, and why.
    case message(String)
    /// One effect more than the machine's limit.
    case effectLimitReached(Int)
    /// One effect more than all machines' limit (their budgets' total).
    case effectTotalReached(Int)

    /// The action's failure for this reason.
    func failure(of action: PluginAction) -> PluginCallError.Reason {
        switch self {
        case let .effectLimitReached(limit): .effectLimitReached(action: action.description, limit: limit)
        case let .effectTotalReached(limit): .effectTotalReached(action: action.description, limit: limit)
        case let .message(message): .invalidRequest(action: action.description, message: message)
        }
    }

    /// Why one next action more than ``PluginLimits/maxFeedbackSteps`` is refused: a chain
    /// could not run them all, and running some would split the action's outcome.
    static let tooManyNextActions = "next_action: one action may request at most \(PluginLimits.maxFeedbackSteps) next actions, "
        + "as many as a chain may run"
}

/// Why the host refused one host-function call.
struct HostRequestError: Error {
    let message: String

    init(_ message: String) {
        self.message = message
    }
}

extension PluginEffectRequest {
    /// Whether the request is a delayed or repeating action: one that stays pending, against
    /// the machine's ``EffectBudget``.
    var isTimed: Bool {
        switch self {
        case .delayed, .repeating: true
        case .next, .cancel: false
        }
    }

    /// The bytes the request carries, against ``PluginLimits/maxRequestBytesPerAction``: its
    /// action's name and string arguments (8 for another argument), its effect ID and queue name.
    var carriedBytes: Int {
        func size(_ action: PluginAction) -> Int {
            action.arguments.reduce(action.name.utf8.count) { total, argument in
                if case let .string(text) = argument { total + text.utf8.count } else { total + 8 }
            }
        }
        func size(_ options: PluginEffectOptions) -> Int { (options.id?.utf8.count ?? 0) + (options.queue?.name.utf8.count ?? 0) }
        return switch self {
        case let .next(action): size(action)
        case let .delayed(action, _, options), let .repeating(action, _, options): size(action) + size(options)
        case let .cancel(id): id.utf8.count
        }
    }
}
