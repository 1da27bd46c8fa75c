import ActomatonCore
import ActomatonEffect

/// One reducer run: the action, and the state before and after it.
struct Step<Action, State> {
    let action: Action
    let before: State
    let after: State
}

extension Step: Sendable where Action: Sendable, State: Sendable {}

/// Collects the steps of one `MealyMachine.send`: the sent action's first, then those of the
/// actions its effects fed back synchronously, in the order they ran.
final class StepRecorder<Action, State> {
    private var steps: [Step<Action, State>] = []

    func append(_ step: Step<Action, State>) {
        steps.append(step)
    }

    /// Returns the steps recorded since the last call.
    func take() -> [Step<Action, State>] {
        defer { steps.removeAll(keepingCapacity: true) }
        return steps
    }
}

/// The reducer under test, recording every step it runs.
struct RecordingReducer<Action: Sendable, State>: MealyReducerProtocol {
    let base: MealyReducer<Action, State, Void, Effect<Action>>
    let recorder: StepRecorder<Action, State>

    func reduce(_ action: Action, into state: inout State, environment: Void) -> Effect<Action> {
        let before = state
        let effect = base.run(action, &state, ())
        recorder.append(Step(action: action, before: before, after: state))
        return effect
    }
}
