// The machine's state as an asynchronous sequence: any number of subscribers, each with a
// one-element buffer that holds the newest state.

extension Actomaton {
    /// The machine's state, now and after each transition, as an asynchronous sequence.
    ///
    /// Iterating starts a subscription: the first element is the state when the iteration
    /// began, then the state after each action the machine runs (sent by you or by an effect).
    /// Any number of tasks can iterate at once, each its own subscription.
    ///
    /// ```swift
    /// let machine = Actomaton<Int, Int>(state: 0, reducer: Reducer { action, state, _ in
    ///     state += action
    ///     return .empty
    /// })
    /// var states = machine.states.makeAsyncIterator()
    /// #expect(await states.next() == 0)
    /// await machine.send(5)
    /// #expect(await states.next() == 5)
    /// ```
    ///
    /// **Latest-value buffering.** Each subscription buffers one state: the newest. A subscriber
    /// slower than the machine skips the states it had no time for and sees the latest, never a
    /// backlog; it never sees an older state after a newer one. Equal states are not removed:
    /// an action that changes nothing still yields the state once more.
    ///
    /// The sequence ends when the machine is released, or for one subscriber when its task is
    /// cancelled. A machine nobody observes pays one emptiness check per send.
    public nonisolated var states: StateSequence<State> {
        StateSequence { [self] in
            let subscription = await self.subscribeToStateUpdates()
            return (subscription.current.state, subscription.updates)
        }
    }

    /// Subscribes to the states after each transition: the current state and its number, and
    /// the stream of those to come (newest-first buffering, one element).
    package func subscribeToStateUpdates() -> (current: StateUpdate<State>, updates: AsyncStream<StateUpdate<State>>) {
        let id = nextStateObserverID
        nextStateObserverID += 1
        let (updates, continuation) = AsyncStream<StateUpdate<State>>.makeStream(bufferingPolicy: .bufferingNewest(1))
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            Task { await self.removeStateObserver(id) }
        }
        stateObservers[id] = continuation
        return (StateUpdate(generation: stateGeneration, state: state), updates)
    }

    /// How many subscriptions to ``states`` are open.
    package var stateObserverCount: Int { stateObservers.count }

    /// The current state with its number (the number of the last state handed to subscribers).
    package var currentStateUpdate: StateUpdate<State> {
        StateUpdate(generation: stateGeneration, state: state)
    }

    /// Sends `action` and returns, from the same turn of the actor, the task ``send(_:priority:tracksFeedbacks:)``
    /// returns and the state after the transition with its number.
    package func sendReportingState(
        _ action: Action,
        priority: TaskPriority?,
        tracksFeedbacks: Bool
    ) -> (task: Task<Void, Error>?, update: StateUpdate<State>) {
        let task = send(action, priority: priority, tracksFeedbacks: tracksFeedbacks)
        return (task, currentStateUpdate)
    }

    /// Hands the state after a transition to every subscriber; only called when there is one.
    @usableFromInline
    func publishState() {
        stateGeneration &+= 1
        let update = StateUpdate(generation: stateGeneration, state: state)
        for observer in stateObservers.values { observer.yield(update) }
    }

    private func removeStateObserver(_ id: UInt64) {
        stateObservers[id] = nil
    }
}

/// A state after a transition and its number: the numbers of the states one machine hands to
/// its subscribers grow by one per transition, so a reader with two sources (a send's answer
/// and the stream) keeps the newer.
@usableFromInline
package struct StateUpdate<State: Sendable>: Sendable {
    /// The state's number; `0` until the machine has a subscriber.
    package var generation: UInt64
    /// The state.
    package var state: State

    @usableFromInline
    package init(generation: UInt64, state: State) {
        self.generation = generation
        self.state = state
    }
}

/// The states of an `Actomaton`: the current one, then the one after each transition, with
/// latest-value buffering. See `Actomaton.states`.
public struct StateSequence<State: Sendable>: AsyncSequence, Sendable {
    /// A state of the machine.
    public typealias Element = State
    /// The sequence never throws.
    public typealias Failure = Never

    let subscribe: @Sendable () async -> (State, AsyncStream<StateUpdate<State>>)

    init(subscribe: @escaping @Sendable () async -> (State, AsyncStream<StateUpdate<State>>)) {
        self.subscribe = subscribe
    }

    /// Makes an iterator; it subscribes to the machine when first asked for an element.
    public func makeAsyncIterator() -> Iterator {
        Iterator(subscribe: subscribe)
    }

    /// Iterates the states of one subscription.
    public struct Iterator: AsyncIteratorProtocol {
        /// Subscribes; dropped once called, so that a subscriber does not keep the machine alive.
        var subscribe: (@Sendable () async -> (State, AsyncStream<StateUpdate<State>>))?
        var updates: AsyncStream<StateUpdate<State>>.Iterator?

        /// The next state: the current one on the first call, then the newest after each
        /// transition; `nil` once the machine is released or the task cancelled.
        public mutating func next() async -> State? {
            if var updates {
                let update = await updates.next()
                self.updates = updates
                return update?.state
            }
            guard let subscribe, !Task.isCancelled else { return nil }
            self.subscribe = nil
            let (current, stream) = await subscribe()
            updates = stream.makeAsyncIterator()
            return current
        }
    }
}
