import ActomatonCore
@testable import ActomatonEffect

/// The smallest host of an EffectQueueManager: a MealyMachine on an actor.
actor TestHost<Action: Sendable, State: Sendable>: EffectQueueHost {
    private var machine: MealyMachine<MealyReducer<Action, State, Void, Effect<Action>>, EffectQueueManager<Action>>
    private let effects: EffectQueueManager<Action>

    init(
        state: State, reducer: MealyReducer<Action, State, Void, Effect<Action>>, clock: some Clock<Duration>,
        reclaimer: EffectMemoryReclaimer = .shared,
        onFailure: @escaping @Sendable (EffectFailure) -> Void = EffectFailure.writeToStandardError
    ) {
        let effects = EffectQueueManager<Action>(
            clock: clock, randomSeed: 42, maxFeedbackDepth: 100, reclaimer: reclaimer, onFailure: onFailure
        )
        self.effects = effects
        machine = MealyMachine(state: state, reducer: reducer, effectManager: effects)
        effects.connect(to: self)
    }

    deinit {
        effects.shutDown()
    }

    var state: State { machine.state }
    var runningEffectCount: Int { effects.runningEffectCount }
    var context: EffectContext { effects.context }

    @discardableResult
    func send(_ action: Action, tracksFeedbacks: Bool = false) -> Task<Void, Error>? {
        machine.effectManager.sendOptions.tracksFeedbacks = tracksFeedbacks
        return machine.send(action)
    }

    @discardableResult
    func send(_ action: Action, options: EffectQueueManager<Action>.SendOptions) -> Task<Void, Error>? {
        machine.effectManager.sendOptions = options
        return machine.send(action)
    }

    func send(effectAction action: Action, tracksFeedbacks: Bool) -> Task<Void, Error>? {
        send(action, tracksFeedbacks: tracksFeedbacks)
    }

    /// Waits until no effect is left, as a host does; returns early when cancelled.
    func waitUntilIdle() async {
        while effects.runningEffectCount > 0, !Task.isCancelled {
            await effects.waitUntilIdle()
        }
    }
}

/// Effects that finish only when the test says so: `wait(for:)` returns once `release(_:)`
/// was called for that key (before or after), or at once when its task is cancelled.
actor Gates {
    private var released: Set<Int> = []
    private var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    private(set) var entered: [Int] = []
    /// The keys whose work began in a task already cancelled.
    private(set) var enteredCancelled: [Int] = []

    func wait(for key: Int) async {
        entered.append(key)
        if Task.isCancelled { enteredCancelled.append(key) }
        guard !released.contains(key) else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if released.contains(key) || Task.isCancelled {
                    continuation.resume()
                } else {
                    waiters[key] = continuation
                }
            }
        } onCancel: {
            Task { await self.release(key) }
        }
    }

    func release(_ key: Int) {
        released.insert(key)
        waiters.removeValue(forKey: key)?.resume()
    }
}

/// Waits, by yielding (never sleeping), until `condition` holds; `false` if it never does.
func eventually(_ condition: () async -> Bool) async -> Bool {
    for _ in 0..<10_000 {
        if await condition() { return true }
        await Task.yield()
    }
    return await condition()
}
