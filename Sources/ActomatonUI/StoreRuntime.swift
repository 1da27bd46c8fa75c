import Actomaton

/// What a root ``Store`` runs on: its machine, the queue that takes its actions to the machine
/// in order, and the subscription that brings the machine's states back to the main actor.
///
/// It is a small state machine of its own: each send is a ``PendingSend`` that goes from
/// waiting to sent (with the machine's task) or dropped (the store was released first); each
/// state from the machine is taken only if it is newer than the last taken (the machine numbers
/// them), so a send's answer and the subscription never move the store back in time.
///
/// Lifetime: the store holds the runtime; the runtime holds its machine through the task that
/// feeds it. When the store goes, the runtime's deinit closes the queue; the task sends what is
/// left, cancels the subscription's task (the machine may be held elsewhere too) and ends,
/// releasing the machine, which, if nothing else holds it, cancels its running effects.
@MainActor
final class StoreRuntime<Action: Sendable, State: Sendable> {
    private let actomaton: Actomaton<Action, State>
    private let requests: AsyncStream<Request>
    private let requestQueue: AsyncStream<Request>.Continuation
    /// The number of the last state taken; `nil` before the first.
    private var takenGeneration: UInt64?
    private var apply: (@MainActor (State) -> Void)?

    /// An action on its way to the machine.
    struct Request: Sendable {
        let action: Action
        let priority: TaskPriority?
        let tracksFeedbacks: Bool
        let pending: PendingSend
    }

    init(actomaton: Actomaton<Action, State>) {
        self.actomaton = actomaton
        (requests, requestQueue) = AsyncStream<Request>.makeStream()
    }

    deinit {
        requestQueue.finish()
    }

    /// Subscribes to the machine's states, handing each new one to `apply`, then sends the
    /// queued actions one by one, in order.
    func start(apply: @escaping @MainActor (State) -> Void) {
        self.apply = apply
        let actomaton = actomaton
        let requests = requests
        Task { [weak self] in
            let subscription = await actomaton.subscribeToStateUpdates()
            self?.take(subscription.current)
            let updates = Task { [weak self] in
                for await update in subscription.updates { self?.take(update) }
            }
            for await request in requests {
                let (task, update) = await actomaton.sendReportingState(
                    request.action, priority: request.priority, tracksFeedbacks: request.tracksFeedbacks
                )
                self?.take(update)
                request.pending.resolve(.sent(task))
            }
            // The store is gone. Its machine may live on (a machine made elsewhere, shared with
            // other code): end the subscription, or it would outlive the store.
            updates.cancel()
        }
    }

    /// Queues `action` and returns the task that waits for its effects.
    func send(_ action: Action, priority: TaskPriority?, tracksFeedbacks: Bool) -> Task<Void, Error> {
        let pending = PendingSend()
        let request = Request(action: action, priority: priority, tracksFeedbacks: tracksFeedbacks, pending: pending)
        if case .terminated = requestQueue.yield(request) { pending.resolve(.dropped) }
        return Task { [weak self] in
            try await withTaskCancellationHandler {
                let task = try await pending.sent()
                do {
                    try await task?.value
                } catch {
                    await self?.catchUp()
                    throw error
                }
                await self?.catchUp()
            } onCancel: {
                Task { @MainActor in pending.cancel() }
            }
        }
    }

    /// Takes the machine's current state, so that a finished send's task leaves the store
    /// showing every transition made before it finished.
    private func catchUp() async {
        take(await actomaton.currentStateUpdate)
    }

    /// Takes `update` unless an equal or newer one was taken.
    private func take(_ update: StateUpdate<State>) {
        if let takenGeneration, update.generation <= takenGeneration { return }
        takenGeneration = update.generation
        apply?(update.state)
    }
}

/// One ``StoreRuntime`` send: waiting for the machine, then sent with the machine's task, or
/// dropped.
@MainActor
final class PendingSend: Sendable {
    /// What became of the send.
    enum Outcome {
        /// The machine ran the action; its task, `nil` if it started no effect.
        case sent(Task<Void, Error>?)
        /// The store was released before the action reached the machine.
        case dropped
    }

    private var outcome: Outcome?
    private var isCancelled = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Records what became of the send, and wakes whoever waits for it.
    func resolve(_ outcome: Outcome) {
        guard self.outcome == nil else { return }
        self.outcome = outcome
        if isCancelled, case .sent(let task) = outcome { task?.cancel() }
        for waiter in waiters { waiter.resume() }
        waiters = []
    }

    /// Cancels the machine's task, now or when the action has been sent.
    func cancel() {
        isCancelled = true
        if case .sent(let task) = outcome { task?.cancel() }
    }

    /// The machine's task once the action has been sent; throws `CancellationError` if the
    /// action was dropped.
    func sent() async throws -> Task<Void, Error>? {
        if outcome == nil {
            await withCheckedContinuation { waiters.append($0) }
        }
        switch outcome {
        case .sent(let task): return task
        case .dropped, nil: throw CancellationError()
        }
    }
}
