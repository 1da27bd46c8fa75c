import ActomatonCore
import ActomatonEffect
import Clocks
/// The test clock a ``TestMachine`` runs on, re-exported so that a test can make one without
/// depending on swift-clocks itself.
@_exported import class Clocks.TestClock

/// A machine for exhaustive state-transition tests, in the style of swift-composable-architecture's
/// `TestStore`.
///
/// It runs the reducer under test on the real `EffectQueueManager`, on a `TestClock` the test
/// moves by hand, and checks every step:
///
/// ```swift
/// let machine = TestMachine(state: .loggedOut, reducer: reducer, environment: environment)
///
/// await machine.send(.login) { $0 = .loggingIn }
/// await machine.advance(by: .seconds(1))
/// await machine.receive(.loginOK) { $0 = .loggedIn }
/// ```
///
/// - ``send(_:assert:fileID:filePath:line:column:)`` runs an action; its closure turns the
///   state from before into the state expected after, and the test fails with a diff when the
///   actual state differs.
/// - Actions that effects send back run at once, as they would in an `Actomaton`, and wait
///   in a queue until `receive(_:)` asserts them, in order, with the state change each one
///   caused.
/// - Time moves only through ``advance(by:)`` and ``run(timeout:fileID:filePath:line:column:)``,
///   so delays and timers run instantly and deterministically. Effects must sleep on
///   `context.clock` (or on ``clock``, passed through their environment).
/// - When the test ends (the machine is released, or ``finish(timeout:fileID:filePath:line:column:)``
///   is called), actions not received and effects still running are failures, unless
///   ``exhaustivity`` is ``Exhaustivity/off``.
///
/// Failures go through IssueReporting, so they are recorded by Swift Testing (and caught by
/// `withKnownIssue`) or by XCTest, at the file and line of the call that failed.
public actor TestMachine<Action: Sendable, State: Sendable & Equatable>: EffectQueueHost {
    /// The clock effects sleep on; it moves only when the test says so.
    public nonisolated let clock: TestClock<Duration>

    /// How strictly the test is checked; see ``Exhaustivity``.
    public private(set) var exhaustivity: Exhaustivity

    /// How long, in real time, `receive(_:)` and ``finish(timeout:fileID:filePath:line:column:)``
    /// wait for running effects by default.
    ///
    /// Waiting is by yielding, and ends as soon as what is awaited happens, or when no effect
    /// runs any more; only a test that is failing waits this long.
    public private(set) var timeout: Duration

    private var machine: MealyMachine<RecordingReducer<Action, State>, EffectQueueManager<Action>>
    private let effects: EffectQueueManager<Action>
    private let recorder: StepRecorder<Action, State>
    /// Steps of actions effects sent back, not yet asserted by `receive`, oldest first.
    private var received: [Step<Action, State>] = []
    private var phase = Phase.testing
    /// Where the machine was created: end-of-test failures found on release are reported there.
    private let origin: SourceLocation

    /// Where the test is: the end-of-test checks run once, and again only if it goes on.
    private enum Phase {
        /// Sending and receiving; the end-of-test checks are still to run.
        case testing
        /// `finish()` ran the end-of-test checks.
        case finished
    }

    /// Creates a machine in `state` running `reducer`, with `environment` handed to every
    /// reducer call.
    ///
    /// `reducer` is any `MealyReducerProtocol` whose output is `Effect<Action>`: a closure
    /// `MealyReducer` (`Reducer`), or a struct reducer, as an `Actomaton` takes.
    ///
    /// - Parameters:
    ///   - state: The state the machine starts in.
    ///   - reducer: The reducer under test.
    ///   - environment: The dependencies handed to every reducer call.
    ///   - clock: The clock of `context.clock` and of queue delays. Pass your own to share it
    ///     with an environment that sleeps on it too.
    ///   - exhaustivity: ``Exhaustivity/on`` by default; see ``setExhaustivity(_:)``.
    ///   - timeout: The default wait for running effects; see ``timeout``.
    ///   - randomSeed: Seeds `EffectQueueDelay.random` delays, so they are the same every run.
    ///   - onFailure: Receives the failures no caller sees (an effect's thrown error, a
    ///     feedback loop cut off: `EffectFailure`). By default (`nil`) each fails the test, at
    ///     the line that created the machine.
    ///   - fileID: Where failures found when the machine is released are reported.
    ///   - filePath: Where failures found when the machine is released are reported.
    ///   - line: Where failures found when the machine is released are reported.
    ///   - column: Where failures found when the machine is released are reported.
    public init<R: MealyReducerProtocol & Sendable>(
        state: State,
        reducer: R,
        environment: R.Environment,
        clock: TestClock<Duration> = TestClock(),
        exhaustivity: Exhaustivity = .on,
        timeout: Duration = .seconds(1),
        randomSeed: UInt64 = 0,
        onFailure: (@Sendable (EffectFailure) -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) where R.Action == Action, R.State == State, R.Output == Effect<Action>, R.Environment: Sendable {
        self.init(
            state: state,
            base: MealyReducer { action, state, _ in reducer.reduce(action, into: &state, environment: environment) },
            clock: clock, exhaustivity: exhaustivity, timeout: timeout, randomSeed: randomSeed, onFailure: onFailure,
            origin: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }

    /// Creates a machine in `state` running `reducer`, which needs no environment.
    ///
    /// The parameters are those of the initializer that takes an `environment`.
    public init<R: MealyReducerProtocol & Sendable>(
        state: State,
        reducer: R,
        clock: TestClock<Duration> = TestClock(),
        exhaustivity: Exhaustivity = .on,
        timeout: Duration = .seconds(1),
        randomSeed: UInt64 = 0,
        onFailure: (@Sendable (EffectFailure) -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) where R.Action == Action, R.State == State, R.Output == Effect<Action>, R.Environment == Void {
        self.init(
            state: state, reducer: reducer, environment: (), clock: clock, exhaustivity: exhaustivity,
            timeout: timeout, randomSeed: randomSeed, onFailure: onFailure,
            fileID: fileID, filePath: filePath, line: line, column: column
        )
    }

    /// Creates a machine in `state` running a closure reducer, with `environment` handed to
    /// every reducer call.
    ///
    /// The parameters are those of the initializer that takes an `environment`.
    public init<Environment: Sendable>(
        state: State,
        reducer: MealyReducer<Action, State, Environment, Effect<Action>>,
        environment: Environment,
        clock: TestClock<Duration> = TestClock(),
        exhaustivity: Exhaustivity = .on,
        timeout: Duration = .seconds(1),
        randomSeed: UInt64 = 0,
        onFailure: (@Sendable (EffectFailure) -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) {
        self.init(
            state: state, base: reducer.contramap(environment: { _ in environment }),
            clock: clock, exhaustivity: exhaustivity, timeout: timeout, randomSeed: randomSeed, onFailure: onFailure,
            origin: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }

    /// Creates a machine in `state` running a closure reducer that needs no environment.
    ///
    /// The parameters are those of the initializer that takes an `environment`.
    public init(
        state: State,
        reducer: MealyReducer<Action, State, Void, Effect<Action>>,
        clock: TestClock<Duration> = TestClock(),
        exhaustivity: Exhaustivity = .on,
        timeout: Duration = .seconds(1),
        randomSeed: UInt64 = 0,
        onFailure: (@Sendable (EffectFailure) -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) {
        self.init(
            state: state, base: reducer,
            clock: clock, exhaustivity: exhaustivity, timeout: timeout, randomSeed: randomSeed, onFailure: onFailure,
            origin: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }

    /// The initializer the public ones call, with the reducer under test as a closure.
    private init(
        state: State,
        base: MealyReducer<Action, State, Void, Effect<Action>>,
        clock: TestClock<Duration>,
        exhaustivity: Exhaustivity,
        timeout: Duration,
        randomSeed: UInt64,
        onFailure: (@Sendable (EffectFailure) -> Void)?,
        origin: SourceLocation
    ) {
        let effects = EffectQueueManager<Action>(
            clock: clock, randomSeed: randomSeed,
            onFailure: onFailure ?? { failure in origin.fail(Failure.effectFailure(failure)) }
        )
        let recorder = StepRecorder<Action, State>()
        self.clock = clock
        self.exhaustivity = exhaustivity
        self.timeout = timeout
        self.effects = effects
        self.recorder = recorder
        self.origin = origin
        machine = MealyMachine(
            state: state,
            reducer: RecordingReducer(base: base, recorder: recorder),
            effectManager: effects
        )
        effects.connect(to: self)
    }

    deinit {
        if phase == .testing, exhaustivity == .on {
            Self.checkEndOfTest(received: received, runningEffects: effects.stillRunningEffectCount, at: origin)
        }
        effects.shutDown()
    }

    /// The current state: after every action sent and every action effects sent back so far.
    public var state: State { machine.state }

    /// How many effects are running or waiting in a queue.
    public var runningEffectCount: Int { effects.runningEffectCount }

    /// How many effects are running or waiting, leaving out one that threw and whose failure is
    /// being reported: those the end of the test fails for.
    var stillRunningEffectCount: Int { effects.stillRunningEffectCount }

    /// Changes how strictly the rest of the test is checked.
    public func setExhaustivity(_ exhaustivity: Exhaustivity) {
        self.exhaustivity = exhaustivity
    }

    /// Changes the default wait for running effects; see ``timeout``.
    public func setTimeout(_ timeout: Duration) {
        self.timeout = timeout
    }

    // MARK: Running actions

    /// Runs `action` and the actions its effects feed back synchronously; returns the steps
    /// (the first is `action`'s) and the task of the effects started.
    func perform(
        _ action: Action, tracksFeedbacks: Bool = false, returnsTask: Bool = true
    ) -> (steps: [Step<Action, State>], task: Task<Void, Error>?) {
        phase = .testing
        machine.effectManager.sendOptions = .init(tracksFeedbacks: tracksFeedbacks, returnsTask: returnsTask)
        let task = machine.send(action)
        return (recorder.take(), task)
    }

    /// Takes the oldest received steps, up to and including the one at `index`.
    func takeReceived(through index: Int) -> Step<Action, State> {
        let step = received[index]
        received.removeFirst(index + 1)
        return step
    }

    /// Received steps, oldest first.
    var receivedSteps: [Step<Action, State>] { received }

    /// Queues steps as received, for `receive` to assert.
    func enqueueReceived(_ steps: some Collection<Step<Action, State>>) {
        received.append(contentsOf: steps)
    }

    /// Forgets the received steps.
    func clearReceived() {
        received.removeAll()
    }

    /// Marks the end-of-test checks as done.
    func markFinished() {
        phase = .finished
    }

    /// Cancels every running effect.
    func cancelEffects() {
        effects.cancelAll()
    }

    // MARK: Checking

    /// Checks a step's state change: `update` turns the expected state into the one expected
    /// after the step.
    func expectState(
        of step: Step<Action, State>,
        _ update: ((inout State) throws -> Void)?,
        at location: SourceLocation
    ) {
        var expected = exhaustivity == .on ? step.before : step.after
        do {
            try update?(&expected)
        } catch {
            location.fail(error, "The closure asserting the state threw an error.")
            return
        }
        if expected != step.after {
            location.fail(Failure.stateMismatch(action: step.action, expected: expected, actual: step.after))
        } else if exhaustivity == .on, update != nil, step.before == step.after {
            location.fail(Failure.noStateChange(action: step.action))
        }
    }

    /// The end-of-test checks: no action left to receive, no effect still running.
    static func checkEndOfTest(received: [Step<Action, State>], runningEffects: Int, at location: SourceLocation) {
        if !received.isEmpty {
            location.fail(Failure.unreceivedActionsAtEnd(received.map(\.action)))
        }
        if runningEffects > 0 {
            location.fail(Failure.effectsStillRunning(runningEffects))
        }
    }
}

extension TestMachine {
    /// Runs an action sent back by one of the machine's effects, at once, and queues it for
    /// `receive(_:)` to assert; the effect manager calls it. Tests call `receive` instead.
    public func send(effectAction action: Action, tracksFeedbacks: Bool) -> Task<Void, Error>? {
        let (steps, task) = perform(action, tracksFeedbacks: tracksFeedbacks, returnsTask: false)
        enqueueReceived(steps)
        return task
    }
}
