// SCXML's run-to-completion step (appendix D of the recommendation) on 128-bit state sets.
// Scratch space (the enabled transitions and the internal queue of done and raised events) is
// on the stack.

extension Statechart {
    /// Sends `event`: takes the enabled transitions and everything they lead to, emitting the
    /// exit, transition and entry outputs into `outputs` and telling `trace` of each exit,
    /// transition and entry.
    ///
    /// This is the form that allocates nothing: pass a sink that does not (a counter, a fixed
    /// buffer, a ``SinkEffectManager``'s sink) and ``StatechartNoTrace``.
    @inlinable
    public func send<Sink: OutputSink, Trace: StatechartTrace>(
        _ event: Event,
        to state: inout StatechartState<StateID>,
        outputs: inout Sink,
        trace: inout Trace
    ) -> StatechartStatus where Sink.Output == Output {
        var evaluation = StatechartDirectEvaluation<StateID, Event, Output>()
        return step(event, &state, &outputs, &trace, &evaluation)
    }

    /// ``send(_:to:outputs:trace:)`` with the context's functions called through `evaluation`.
    @inlinable
    func step<Sink: OutputSink, Trace: StatechartTrace, Evaluation: StatechartEvaluation<StateID, Event, Output>>(
        _ event: Event,
        _ state: inout StatechartState<StateID>,
        _ outputs: inout Sink,
        _ trace: inout Trace,
        _ evaluation: inout Evaluation
    ) -> StatechartStatus where Sink.Output == Output {
        if state.active.intersects(topLevelFinalStates) { return .finished }
        // Read here, not in the closures below: the fewer of the chart's fields they read, the
        // less of it the optimizer copies into them.
        let raisedLimit = raisedEventLimit
        let doneLimit = doneQueueCapacity
        let eventCapacity = eventQueueCapacity
        return withUnsafeTemporaryAllocation(of: Int16.self, capacity: enabledCapacity) { enabled in
            let occurrence = Occurrence.event(event)
            let count = select(occurrence, state, enabled, &evaluation)
            if count == 0 { return .ignored }
            // The queue's two rings, written out here rather than in a helper taking a closure:
            // a closure over `self` in a method of `self` made the optimizer copy the chart
            // (a retain and release per table) on every event.
            return withUnsafeTemporaryAllocation(of: Int16.self, capacity: queueCapacity) { order in
                withUnsafeTemporaryAllocation(of: Event.self, capacity: eventCapacity) { events in
                    var queue = InternalQueue(order: order, events: events, raisedLimit: raisedLimit, doneLimit: doneLimit)
                    microstep(enabled, count, occurrence, &state, &queue, &outputs, &trace, &evaluation)
                    let status = settle(after: 1, &state, enabled, &queue, &outputs, &trace, &evaluation)
                    queue.removeAll()
                    return status
                }
            }
        }
    }

    /// Sends `event` and returns what happened with every output, in order.
    @inlinable
    @discardableResult
    public func send(_ event: Event, to state: inout StatechartState<StateID>) -> StatechartReply<[Output]> {
        var outputs: [Output] = []
        var trace = StatechartNoTrace()
        let status = send(event, to: &state, outputs: &outputs, trace: &trace)
        return StatechartReply(status: status, outputs: outputs)
    }

    /// Starts the chart in `state`: enters the initial states from nothing and takes the
    /// eventless transitions and internal events that follows, emitting the entry and transition
    /// outputs into `outputs` and telling `trace` of each entry, exit and transition — SCXML's
    /// first macrostep, with your sink and trace.
    ///
    /// Whatever `state` held, active states, history and context, is replaced: the context
    /// starts as ``initialContext``. Building the chart runs this same start, so it ends in
    /// ``initialState`` with ``initialOutputs`` and ``initialStatus``: call this to see the
    /// start through your own sink or trace (for coverage, for generated tests, for an effect
    /// manager), or to restart a state in place.
    ///
    /// - Returns: ``StatechartStatus/transitioned``; or, when the start stops at a limit,
    ///   ``StatechartStatus/stoppedAtMicrostepLimit`` or
    ///   ``StatechartStatus/stoppedAtRaisedEventLimit``, with `state` legal where it stopped.
    @inlinable
    public func start<Sink: OutputSink, Trace: StatechartTrace>(
        into state: inout StatechartState<StateID>,
        outputs: inout Sink,
        trace: inout Trace
    ) -> StatechartStatus where Sink.Output == Output {
        state = StatechartState(context: initialContext)
        var evaluation = StatechartDirectEvaluation<StateID, Event, Output>()
        return withUnsafeTemporaryAllocation(of: Int16.self, capacity: enabledCapacity) { enabled in
            withUnsafeTemporaryAllocation(of: Int16.self, capacity: queueCapacity) { order in
                withUnsafeTemporaryAllocation(of: Event.self, capacity: eventQueueCapacity) { events in
                    var queue = InternalQueue(order: order, events: events, raisedLimit: raisedEventLimit, doneLimit: doneQueueCapacity)
                    var entering = StatechartStateSet()
                    var defaults = StatechartStateSet()
                    for initial in content.rootInitials {
                        addDescendants(initial, to: &entering, defaults: &defaults, history: state.history)
                    }
                    for initial in content.rootInitials {
                        addAncestors(of: initial, below: -1, to: &entering, defaults: &defaults, history: state.history)
                    }
                    enter(entering, defaults, .none, &state, &queue, &outputs, &trace, &evaluation)
                    let status = settle(after: 1, &state, enabled, &queue, &outputs, &trace, &evaluation)
                    queue.removeAll()
                    return status
                }
            }
        }
    }

    /// Starts the chart in `state` and returns what happened with every output, in order:
    /// ``start(into:outputs:trace:)`` collecting the outputs in an array.
    @inlinable
    @discardableResult
    public func start(into state: inout StatechartState<StateID>) -> StatechartReply<[Output]> {
        var outputs: [Output] = []
        var trace = StatechartNoTrace()
        let status = start(into: &state, outputs: &outputs, trace: &trace)
        return StatechartReply(status: status, outputs: outputs)
    }

    // MARK: - Scratch space

    /// The most transitions one selection can enable: one per active atomic state.
    @inlinable
    var enabledCapacity: Int { Swift.max(atomicStates.count, 1) }

    /// The most done events that may wait at once: two per final state below the top. Entering
    /// a final state raises at most two (its parent's, and its parallel grandparent's), and a
    /// microstep enters each final state at most once, so one microstep's done events always
    /// fit (entering a parallel state whose regions start in final states raises one for every
    /// region). More can pile up only when microsteps keep entering final states faster than
    /// the queue is taken (eventless transitions that loop through them); the step then stops
    /// with ``StatechartStatus/stoppedAtRaisedEventLimit``. Not a bound for the whole step
    /// (``microstepLimit`` times this): a queue that large was past the 1 KiB the standard
    /// library keeps on the stack, so a chart of three final states allocated on every event.
    @inlinable
    var doneQueueCapacity: Int {
        Swift.max(2 &* finalStates.subtracting(topLevelFinalStates).count, 1)
    }

    /// Room for the raised events waiting: ``raisedEventLimit``, or one (unused) when the chart
    /// raises nothing.
    @inlinable
    var raisedQueueCapacity: Int { raisesEvents ? raisedEventLimit : 1 }

    /// The internal queue's entries: every done event and raised event that can wait at once.
    @inlinable
    var queueCapacity: Int { doneQueueCapacity &+ raisedQueueCapacity }

    /// Room for the events the queue holds: the raised ones, and the done events of the
    /// chart's type (``StatechartNode/doneEvent``) when it has any.
    @inlinable
    var eventQueueCapacity: Int { hasDoneEvents ? raisedQueueCapacity &+ doneQueueCapacity : raisedQueueCapacity }

    /// Whether each ``send(_:to:outputs:trace:)`` and ``start(into:outputs:trace:)`` allocates
    /// its scratch space on the heap, and frees it: when one of its buffers — the transitions
    /// one selection enables (2 bytes per atomic state), the internal queue's order (2 bytes per
    /// raised or done event that may wait) and its events (``raisedEventLimit`` times the
    /// event's size, more with done events of the chart's type) — is past the 1 KiB that
    /// `withUnsafeTemporaryAllocation` keeps on the stack. Lower ``raisedEventLimit``, or make
    /// the event smaller, to keep a step from allocating.
    public var allocatesPerEvent: Bool {
        let stackBytes = 1024
        return enabledCapacity &* MemoryLayout<Int16>.stride > stackBytes || queueCapacity &* MemoryLayout<Int16>.stride > stackBytes
            || eventQueueCapacity &* MemoryLayout<Event>.stride > stackBytes
    }

    /// What a selection looks for.
    @usableFromInline
    enum Occurrence {
        case event(Event)
        /// An event raised by the chart, taken from the internal queue.
        case raised(Event)
        case done(Int)
        /// The done event of a state, as an event of the chart's type.
        case doneEvent(Int, Event)
        case none

        /// The event an action sees: `nil` for a done event, an eventless transition and the
        /// start.
        @inlinable
        var event: Event? {
            switch self {
            case let .event(event), let .raised(event), let .doneEvent(_, event): event
            default: nil
            }
        }
    }

    /// SCXML's internal queue: the done events and raised events generated and not yet
    /// processed, first in first out, in two rings on the stack. `order` says, entry by entry,
    /// whether the next is a done event (the raw value of its state), a raised one (-1, the
    /// next of `events`), or a done event of the chart's type (-2 - the raw value of its
    /// state, its event the next of `events`).
    @usableFromInline
    struct InternalQueue {
        @usableFromInline let order: UnsafeMutableBufferPointer<Int16>
        @usableFromInline let events: UnsafeMutableBufferPointer<Event>
        /// The most raised events (done events not counted) that may wait at once.
        @usableFromInline let raisedLimit: Int
        /// The most done events that may wait at once (``Statechart/doneQueueCapacity``): the
        /// entries that are not raised events.
        @usableFromInline let doneLimit: Int
        @usableFromInline var head = 0
        @usableFromInline var count = 0
        @usableFromInline var eventHead = 0
        @usableFromInline var eventCount = 0
        @usableFromInline var raisedCount = 0
        /// An event was raised while `raisedLimit` were waiting: the step stops after this
        /// microstep.
        @usableFromInline var overflowed = false

        @inlinable
        init(order: UnsafeMutableBufferPointer<Int16>, events: UnsafeMutableBufferPointer<Event>, raisedLimit: Int, doneLimit: Int) {
            self.order = order
            self.events = events
            self.raisedLimit = raisedLimit
            self.doneLimit = doneLimit
        }

        /// The slot `offset` places after `start` in a ring of `capacity` slots.
        @inlinable
        static func slot(_ start: Int, _ offset: Int, _ capacity: Int) -> Int {
            let slot = start &+ offset
            return slot >= capacity ? slot &- capacity : slot
        }

        /// Queues the done event of the state `state`, or marks the queue as overflowed when
        /// `doneLimit` are waiting.
        @inlinable
        mutating func pushDone(_ state: Int) {
            guard count &- raisedCount < doneLimit, count < order.count else {
                overflowed = true
                return
            }
            order[Self.slot(head, count, order.count)] = Int16(truncatingIfNeeded: state)
            count &+= 1
        }

        /// Queues a raised event, or marks the queue as overflowed when `raisedLimit` are
        /// waiting.
        @inlinable
        mutating func raise(_ event: Event) {
            guard raisedCount < raisedLimit, eventCount < events.count, count < order.count else {
                overflowed = true
                return
            }
            raisedCount &+= 1
            push(event, entry: -1)
        }

        /// Queues the done event of the state `state` as `event`, or marks the queue as
        /// overflowed when `doneLimit` are waiting.
        @inlinable
        mutating func pushDone(_ state: Int, as event: Event) {
            guard count &- raisedCount < doneLimit, eventCount < events.count, count < order.count else {
                overflowed = true
                return
            }
            push(event, entry: Int16(truncatingIfNeeded: -2 &- state))
        }

        @inlinable
        mutating func push(_ event: Event, entry: Int16) {
            events.initializeElement(at: Self.slot(eventHead, eventCount, events.count), to: event)
            eventCount &+= 1
            order[Self.slot(head, count, order.count)] = entry
            count &+= 1
        }

        /// The next event, first in first out; `nil` when none is waiting.
        @inlinable
        mutating func pop() -> Occurrence? {
            guard count > 0 else { return nil }
            let entry = order[head]
            head = Self.slot(head, 1, order.count)
            count &-= 1
            if entry >= 0 { return .done(Int(entry)) }
            let event = events.moveElement(from: eventHead)
            eventHead = Self.slot(eventHead, 1, events.count)
            eventCount &-= 1
            if entry == -1 {
                raisedCount &-= 1
                return .raised(event)
            }
            return .doneEvent(Int(-2 &- entry), event)
        }

        /// Drops every event still waiting.
        @inlinable
        mutating func removeAll() {
            while eventCount > 0 {
                events.deinitializeElement(at: eventHead)
                eventHead = Self.slot(eventHead, 1, events.count)
                eventCount &-= 1
            }
            count = 0
            raisedCount = 0
        }
    }

    // MARK: - The macrostep

    /// SCXML's macrostep after its first microstep: takes eventless transitions while any is
    /// enabled, else the next event of the internal queue, until neither is left.
    @inlinable
    func settle<Sink: OutputSink, Trace: StatechartTrace, Evaluation: StatechartEvaluation<StateID, Event, Output>>(
        after microsteps: Int,
        _ state: inout StatechartState<StateID>,
        _ enabled: UnsafeMutableBufferPointer<Int16>,
        _ queue: inout InternalQueue,
        _ outputs: inout Sink,
        _ trace: inout Trace,
        _ evaluation: inout Evaluation
    ) -> StatechartStatus where Sink.Output == Output {
        var microsteps = microsteps
        while true {
            if queue.overflowed { return .stoppedAtRaisedEventLimit }
            if state.active.intersects(topLevelFinalStates) { break }
            var occurrence = Occurrence.none
            var count = select(occurrence, state, enabled, &evaluation)
            if count == 0 {
                guard let next = queue.pop() else { break }
                occurrence = next
                count = select(occurrence, state, enabled, &evaluation)
                if count == 0 { continue }
            }
            if microsteps >= microstepLimit { return .stoppedAtMicrostepLimit }
            microstep(enabled, count, occurrence, &state, &queue, &outputs, &trace, &evaluation)
            microsteps &+= 1
        }
        return .transitioned
    }

    // MARK: - Selecting transitions

    /// Fills `enabled` with the optimal enabled transition set for `occurrence` and returns
    /// its size.
    @inlinable
    func select<Evaluation: StatechartEvaluation<StateID, Event, Output>>(
        _ occurrence: Occurrence, _ state: StatechartState<StateID>, _ enabled: UnsafeMutableBufferPointer<Int16>,
        _ evaluation: inout Evaluation
    ) -> Int {
        var count = 0
        for rank in documentRanks(of: state.active.intersection(atomicStates)) {
            let atom = rawValuesInDocumentOrder ? rank : Int(documentOrder[rank])
            for position in candidateRanges[atom] {
                let index = candidates[position]
                guard matches(index, occurrence, state, &evaluation) else { continue }
                var seen = false
                for earlier in 0..<count where enabled[earlier] == Int16(truncatingIfNeeded: index) { seen = true }
                if !seen {
                    enabled[count] = Int16(truncatingIfNeeded: index)
                    count &+= 1
                }
                break
            }
        }
        return count > 1 ? removeConflicts(enabled, count, state) : count
    }

    @inlinable
    func matches<Evaluation: StatechartEvaluation<StateID, Event, Output>>(
        _ index: Int, _ occurrence: Occurrence, _ state: StatechartState<StateID>, _ evaluation: inout Evaluation
    ) -> Bool {
        let transition = transitionTable[index]
        switch (transition.trigger, occurrence) {
        case let (.event, .event(event)), let (.event, .raised(event)), let (.event, .doneEvent(_, event)):
            guard eventMatchers[transition.argument].matches(event) else { return false }
        case let (.done, .done(done)), let (.done, .doneEvent(done, _)):
            guard transition.argument == done else { return false }
        case (.always, .none):
            break
        default:
            return false
        }
        return transition.condition < 0
            || evaluation.holds(condition: transition.condition, conditions[transition.condition], in: state)
    }

    /// Drops the transitions that conflict with an earlier or an inner one; the kept ones stay
    /// in order at the front of `enabled`.
    @inlinable
    func removeConflicts(_ enabled: UnsafeMutableBufferPointer<Int16>, _ count: Int, _ state: StatechartState<StateID>) -> Int {
        var kept = 0
        for position in 0..<count {
            let first = Int(enabled[position])
            let firstExits = exitSet(of: first, state)
            var preempted = false
            for keptPosition in 0..<kept {
                let second = Int(enabled[keptPosition])
                if firstExits.intersects(exitSet(of: second, state))
                    && !nodes[transitionTable[second].source].descendants.contains(transitionTable[first].source) {
                    preempted = true
                    break
                }
            }
            if preempted { continue }
            var write = 0
            for keptPosition in 0..<kept {
                let second = enabled[keptPosition]
                if !firstExits.intersects(exitSet(of: Int(second), state)) {
                    enabled[write] = second
                    write &+= 1
                }
            }
            enabled[write] = Int16(first)
            kept = write &+ 1
        }
        return kept
    }

    // MARK: - The microstep

    @inlinable
    func microstep<Sink: OutputSink, Trace: StatechartTrace, Evaluation: StatechartEvaluation<StateID, Event, Output>>(
        _ enabled: UnsafeMutableBufferPointer<Int16>,
        _ count: Int,
        _ occurrence: Occurrence,
        _ state: inout StatechartState<StateID>,
        _ queue: inout InternalQueue,
        _ outputs: inout Sink,
        _ trace: inout Trace,
        _ evaluation: inout Evaluation
    ) where Sink.Output == Output {
        var exiting = StatechartStateSet()
        for position in 0..<count { exiting = exiting.union(exitSet(of: Int(enabled[position]), state)) }
        if !exiting.isEmpty {
            // History is recorded from the configuration before anything exits.
            for node in exiting where nodes[node].kind == .compound || nodes[node].kind == .parallel {
                let children = nodes[node].children
                state.history = state.history.subtracting(children).union(state.active.intersection(children))
            }
            // Loops written out rather than through a closure over `self`, which the optimizer
            // may copy the chart into.
            var ranks = documentRanks(of: exiting)
            while !ranks.isEmpty {
                let rank = ranks.last!
                ranks.remove(rank)
                let node = rawValuesInDocumentOrder ? rank : Int(documentOrder[rank])
                trace.exited(state: node)
                emit(nodes[node].exitOutputs, &outputs)
                raise(exitRaises, node, &queue)
                if hasActions { run(content.exitActions, node, occurrence, &state, &queue, &outputs, &evaluation) }
                state.active.remove(node)
            }
        }
        var entering = StatechartStateSet()
        var defaults = StatechartStateSet()
        for position in 0..<count {
            let index = Int(enabled[position])
            let transition = transitionTable[index]
            trace.took(transition: index)
            emit(transition.outputs, &outputs)
            raise(transitionRaises, index, &queue)
            if hasActions { run(content.transitionActions, index, occurrence, &state, &queue, &outputs, &evaluation) }
            guard !transition.targets.isEmpty else { continue }
            if !transition.targetsHistory {
                // When no history decides it, what a transition enters never changes: it was
                // worked out when the chart was built.
                entering = entering.union(staticEntrySets[index])
                if hasInitialActions { defaults = defaults.union(content.staticDefaultEntries[index]) }
                continue
            }
            for target in transition.targets {
                addDescendants(target, to: &entering, defaults: &defaults, history: state.history)
            }
            let domain = domain(of: transition, history: state.history)
            for target in effectiveTargets(of: transition, history: state.history) {
                addAncestors(of: target, below: domain, to: &entering, defaults: &defaults, history: state.history)
            }
        }
        enter(entering, defaults, occurrence, &state, &queue, &outputs, &trace, &evaluation)
    }

    /// Enters `entering` in document order, running each state's entry content — then, for a
    /// state in `defaults`, its initial transition's actions, and those of its history states'
    /// defaults in `defaults` — and queueing, for a final state, the done events it causes.
    @inlinable
    func enter<Sink: OutputSink, Trace: StatechartTrace, Evaluation: StatechartEvaluation<StateID, Event, Output>>(
        _ entering: StatechartStateSet,
        _ defaults: StatechartStateSet,
        _ occurrence: Occurrence,
        _ state: inout StatechartState<StateID>,
        _ queue: inout InternalQueue,
        _ outputs: inout Sink,
        _ trace: inout Trace,
        _ evaluation: inout Evaluation
    ) where Sink.Output == Output {
        for rank in documentRanks(of: entering) {
            let node = rawValuesInDocumentOrder ? rank : Int(documentOrder[rank])
            state.active.insert(node)
            trace.entered(state: node)
            emit(nodes[node].entryOutputs, &outputs)
            raise(entryRaises, node, &queue)
            if hasActions {
                run(content.entryActions, node, occurrence, &state, &queue, &outputs, &evaluation)
                if hasInitialActions {
                    runDefaultEntryActions(of: node, defaults, occurrence, &state, &queue, &outputs, &evaluation)
                }
            }
            guard nodes[node].kind == .final else { continue }
            let parent = nodes[node].parent
            guard parent >= 0 else { continue }
            pushDone(of: parent, madeBy: node, state, &queue)
            let grandparent = nodes[parent].parent
            if grandparent >= 0, nodes[grandparent].kind == .parallel,
               nodes[grandparent].children.allSatisfy({ isInFinalState($0, state.active) }) {
                pushDone(of: grandparent, madeBy: grandparent, state, &queue)
            }
        }
    }

    /// Queues the done event of `completed`: as an event of the chart's type when `maker` (the
    /// final state entered, or the parallel state itself) has one, else as a plain done event.
    @inlinable
    func pushDone(of completed: Int, madeBy maker: Int, _ state: StatechartState<StateID>, _ queue: inout InternalQueue) {
        if hasDoneEvents {
            let index = Int(content.doneEventIndices[maker])
            if index >= 0 {
                queue.pushDone(completed, as: content.doneEventMakers[index].make(state))
                return
            }
        }
        queue.pushDone(completed)
    }

    /// Queues the events that `ranges[index]` picks out of ``raiseTable``. A chart that raises
    /// nothing skips the range's load altogether.
    @inlinable
    @inline(__always)
    func raise(_ ranges: [Range<Int>], _ index: Int, _ queue: inout InternalQueue) {
        guard !raiseTable.isEmpty else { return }
        for position in ranges[index] { queue.raise(raiseTable[position]) }
    }

    /// Runs, when `node` was entered by default, its initial transition's actions, then those of
    /// its history states' defaults taken.
    @inlinable
    func runDefaultEntryActions<Sink: OutputSink, Evaluation: StatechartEvaluation<StateID, Event, Output>>(
        of node: Int,
        _ defaults: StatechartStateSet,
        _ occurrence: Occurrence,
        _ state: inout StatechartState<StateID>,
        _ queue: inout InternalQueue,
        _ outputs: inout Sink,
        _ evaluation: inout Evaluation
    ) where Sink.Output == Output {
        guard defaults.intersects(nodes[node].descendants.union(StatechartStateSet(index: node))) else { return }
        if defaults.contains(node) { run(content.initialActions, node, occurrence, &state, &queue, &outputs, &evaluation) }
        for history in defaults.intersection(nodes[node].descendants) where nodes[history].isHistory && nodes[history].parent == node {
            run(content.initialActions, history, occurrence, &state, &queue, &outputs, &evaluation)
        }
    }

    /// Runs the actions that `ranges[index]` picks out of the action table, in order. Callers
    /// check ``hasActions`` first, so a chart without actions never loads the ranges.
    @inlinable
    func run<Sink: OutputSink, Evaluation: StatechartEvaluation<StateID, Event, Output>>(
        _ ranges: [Range<Int>],
        _ index: Int,
        _ occurrence: Occurrence,
        _ state: inout StatechartState<StateID>,
        _ queue: inout InternalQueue,
        _ outputs: inout Sink,
        _ evaluation: inout Evaluation
    ) where Sink.Output == Output {
        for position in ranges[index] { execute(content.actions[position], occurrence, &state, &queue, &outputs, &evaluation) }
    }

    /// Runs one action: SCXML's executeContent.
    @inlinable
    func execute<Sink: OutputSink, Evaluation: StatechartEvaluation<StateID, Event, Output>>(
        _ action: StatechartAction<StateID, Event, Output>,
        _ occurrence: Occurrence,
        _ state: inout StatechartState<StateID>,
        _ queue: inout InternalQueue,
        _ outputs: inout Sink,
        _ evaluation: inout Evaluation
    ) where Sink.Output == Output {
        switch action.kind {
        case let .assign(update):
            evaluation.assign(action, update, &state, occurrence)
        case let .output(output):
            outputs.receive(output)
        case let .computedOutput(make):
            evaluation.emit(action, make, state, occurrence, &outputs)
        case let .raise(event):
            queue.raise(event)
        case let .choose(branches):
            for branch in branches where branch.condition == nil || evaluation.holds(branch: branch, in: state) {
                for inner in branch.actions { execute(inner, occurrence, &state, &queue, &outputs, &evaluation) }
                return
            }
        }
    }

    @inlinable
    func emit<Sink: OutputSink>(_ range: Range<Int>, _ outputs: inout Sink) where Sink.Output == Output {
        for index in range { outputs.receive(outputTable[index]) }
    }

    // MARK: - Domains, exit and entry sets

    /// The active states `transition` exits.
    @inlinable
    func exitSet(of index: Int, _ state: StatechartState<StateID>) -> StatechartStateSet {
        let transition = transitionTable[index]
        if transition.targets.isEmpty { return StatechartStateSet() }
        let domain = domain(of: transition, history: state.history)
        return domain < 0 ? state.active : state.active.intersection(nodes[domain].descendants)
    }

    /// The transition's domain: a raw value, or -1 for the whole chart.
    @inlinable
    func domain(of transition: CompiledTransition, history: StatechartStateSet) -> Int {
        if !transition.targetsHistory { return transition.staticDomain }
        return Self.domain(
            source: transition.source, targets: effectiveTargets(of: transition, history: history),
            isInternal: transition.isInternal, nodes: nodes)
    }

    /// SCXML's transition domain: the source for an internal transition into itself, else the
    /// innermost compound proper ancestor of the source that contains every target (-1: the
    /// whole chart).
    @inlinable
    static func domain(source: Int, targets: StatechartStateSet, isInternal: Bool, nodes: [CompiledNode]) -> Int {
        if isInternal && nodes[source].kind == .compound && targets.isSubset(of: nodes[source].descendants) {
            return source
        }
        var ancestor = nodes[source].parent
        while ancestor >= 0 {
            if nodes[ancestor].kind == .compound && targets.isSubset(of: nodes[ancestor].descendants) { return ancestor }
            ancestor = nodes[ancestor].parent
        }
        return -1
    }

    /// The targets with each history state replaced by what it resumes.
    @inlinable
    func effectiveTargets(of transition: CompiledTransition, history: StatechartStateSet) -> StatechartStateSet {
        if !transition.targetsHistory { return transition.targets }
        var targets = StatechartStateSet()
        for target in transition.targets {
            targets = targets.union(nodes[target].isHistory ? resumed(by: target, history: history) : StatechartStateSet(index: target))
        }
        return targets
    }

    /// What the history state `node` enters: the remembered children (shallow) or leaves
    /// (deep), or its default when nothing is remembered.
    @inlinable
    func resumed(by node: Int, history: StatechartStateSet) -> StatechartStateSet {
        let parent = nodes[node].parent
        let remembered = history.intersection(nodes[parent].children)
        if remembered.isEmpty {
            if nodes[node].initial >= 0 { return StatechartStateSet(index: nodes[node].initial) }
            if nodes[node].initial == -2 { return content.initialTargetSets[node] }
            return nodes[parent].kind == .compound ? defaultEntry(of: parent) : nodes[parent].children
        }
        return nodes[node].kind == .shallowHistory ? remembered : rememberedLeaves(remembered, history: history)
    }

    @inlinable
    func rememberedLeaves(_ states: StatechartStateSet, history: StatechartStateSet) -> StatechartStateSet {
        var leaves = StatechartStateSet()
        for state in states {
            let below = history.intersection(nodes[state].children)
            if nodes[state].kind == .compound || nodes[state].kind == .parallel, !below.isEmpty {
                leaves = leaves.union(rememberedLeaves(below, history: history))
            } else {
                leaves.insert(state)
            }
        }
        return leaves
    }

    /// The targets of a compound state's default entry.
    @inlinable
    func defaultEntry(of node: Int) -> StatechartStateSet {
        let initial = nodes[node].initial
        return initial >= 0 ? StatechartStateSet(index: initial) : content.initialTargetSets[node]
    }

    /// SCXML's addDescendantStatesToEnter. `defaults` collects the compound states entered by
    /// default and the history states whose default is taken: those whose initial (or default)
    /// transition's actions run.
    @inlinable
    func addDescendants(
        _ node: Int, to entering: inout StatechartStateSet, defaults: inout StatechartStateSet, history: StatechartStateSet
    ) {
        if nodes[node].isHistory {
            let parent = nodes[node].parent
            if !history.intersects(nodes[parent].children) { defaults.insert(node) }
            let targets = resumed(by: node, history: history)
            for target in targets { addDescendants(target, to: &entering, defaults: &defaults, history: history) }
            for target in targets { addAncestors(of: target, below: parent, to: &entering, defaults: &defaults, history: history) }
            return
        }
        entering.insert(node)
        switch nodes[node].kind {
        case .compound:
            defaults.insert(node)
            let initial = nodes[node].initial
            if initial >= 0 {
                addDescendants(initial, to: &entering, defaults: &defaults, history: history)
                addAncestors(of: initial, below: node, to: &entering, defaults: &defaults, history: history)
            } else {
                let targets = content.initialTargetSets[node]
                for target in targets { addDescendants(target, to: &entering, defaults: &defaults, history: history) }
                for target in targets where !nodes[target].isHistory {
                    addAncestors(of: target, below: node, to: &entering, defaults: &defaults, history: history)
                }
            }
        case .parallel:
            for child in nodes[node].children where !entering.intersects(nodes[child].descendants) {
                addDescendants(child, to: &entering, defaults: &defaults, history: history)
            }
        default:
            break
        }
    }

    /// SCXML's addAncestorStatesToEnter: the ancestors of `node` below `ancestor` (-1: all),
    /// with the other regions of any parallel one.
    @inlinable
    func addAncestors(
        of node: Int, below ancestor: Int, to entering: inout StatechartStateSet, defaults: inout StatechartStateSet,
        history: StatechartStateSet
    ) {
        var current = nodes[node].parent
        while current >= 0 && current != ancestor {
            entering.insert(current)
            if nodes[current].kind == .parallel {
                for child in nodes[current].children where !entering.intersects(nodes[child].descendants) {
                    addDescendants(child, to: &entering, defaults: &defaults, history: history)
                }
            }
            current = nodes[current].parent
        }
    }

    /// Whether `node` is done: a compound state with an active final child, or a parallel state
    /// whose every region is done.
    @inlinable
    func isInFinalState(_ node: Int, _ active: StatechartStateSet) -> Bool {
        switch nodes[node].kind {
        case .compound:
            return nodes[node].children.intersects(active.intersection(finalStates))
        case .parallel:
            return nodes[node].children.allSatisfy { isInFinalState($0, active) }
        default:
            return false
        }
    }

    // MARK: - Document order

    /// The document positions of `set`'s states (their raw values, when those follow document
    /// order): iterated in order, they give the states in document order.
    @inlinable
    func documentRanks(of set: StatechartStateSet) -> StatechartStateSet {
        if rawValuesInDocumentOrder { return set }
        var ranks = StatechartStateSet()
        for node in set { ranks.insert(Int(documentRank[node])) }
        return ranks
    }

    @inlinable
    func forEach(inDocumentOrder set: StatechartStateSet, _ body: (Int) -> Void) {
        if rawValuesInDocumentOrder {
            for node in set { body(node) }
            return
        }
        var ranks = StatechartStateSet()
        for node in set { ranks.insert(Int(documentRank[node])) }
        for rank in ranks { body(Int(documentOrder[rank])) }
    }
}

/// What one event did to a ``Statechart``, with the outputs it emitted.
public struct StatechartReply<Outputs> {
    /// Whether transitions were taken.
    public var status: StatechartStatus
    /// The exit, transition and entry outputs, in the order they were emitted.
    public var outputs: Outputs

    /// Creates a reply.
    @inlinable
    public init(status: StatechartStatus, outputs: Outputs) {
        self.status = status
        self.outputs = outputs
    }
}

extension StatechartReply: Equatable where Outputs: Equatable {}
extension StatechartReply: Sendable where Outputs: Sendable {}
