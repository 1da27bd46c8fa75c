// Code blocks of the DocC articles that are not already in the README tour, verbatim.
// `make readme-check` verifies that each article's block appears in a test file.

import ActomatonCore
import Testing

// The Transition tables and diagrams article's stored machine, whole: the types, the table and
// the struct that keeps the machine (file scope, as a user's code would have them).
enum DoorState: String, Sendable, CustomStringConvertible { case closed, open, locked; var description: String { rawValue } }
enum DoorInput: String, Sendable, CustomStringConvertible { case open, close, lock, unlock; var description: String { rawValue } }

let doorTable = TransitionTable<DoorInput, DoorState, String>([
    .open   | .closed => .open,
    .close  | .open   => .closed,
    .lock   | .closed => .locked | "engage bolt",
    .unlock | .locked => .closed | "release bolt",
])

struct Door {
    var machine: TransitionMachine<DoorInput, DoorState, String>

    init() {
        machine = doorTable.machine(state: .closed)
    }

    mutating func press(_ input: DoorInput) -> String? {
        machine.send(input).output
    }
}

@Suite("Documentation: ActomatonCore articles")
struct DocumentationCoreExamplesTests {
    @Test func aStoredTransitionMachine() {
        var door = Door()
        #expect(door.press(.lock) == "engage bolt")
        #expect(door.press(.open) == nil)            // no row: still locked
        #expect(door.machine.state == .locked)
        #expect(door.press(.unlock) == "release bolt")
        #expect(door.press(.open) == nil)            // a row without an output
        #expect(door.machine.state == .open)
    }

    @Test func mapOutputBeforeContramapAction() {
        enum AppAction { case door(DoorInput), other }

        let doorReducer = doorTable.reducer
            .map(output: { reply in reply.output.map { [$0] } ?? [] }) // [String] is a ReducerOutput
            .contramap(action: { (action: AppAction) in
                if case let .door(input) = action { input } else { nil }
            })

        var machine = MealyMachine(state: DoorState.closed, reducer: doorReducer, effectManager: ReplyEffectManager())
        #expect(machine.send(.door(.lock)) == ["engage bolt"])
        #expect(machine.send(.other) == [])
        #expect(machine.state == .locked)
    }
}

@Suite("Documentation: the Statecharts article")
struct DocumentationStatechartExamplesTests {
    @Test func theDoorChart() throws {
        enum Door: Int, StatechartStateID {
            case door, closed, shut, locked, open, resume
        }
        enum DoorEvent: Equatable, Sendable { case open, close, lock, unlock, slam }

        let chart = try Statechart<Door, DoorEvent, String>(states: [
            .compound(.door, children: [
                .compound(.closed, transitions: [.on(.open, to: .open, when: { !$0.isIn(.locked) })], children: [
                    .history(.resume),
                    .atomic(.shut, transitions: [.on(.lock, to: .locked, outputs: ["click"])]),
                    .atomic(.locked, transitions: [.on(.unlock, to: .shut, outputs: ["clack"])]),
                ]),
                .atomic(.open, onEntry: ["creak"], transitions: [
                    .on(.close, to: .closed),
                    .on(.slam, to: .resume, outputs: ["bang"]),
                ]),
            ]),
        ])

        var state = chart.initialState                  // door, closed, shut
        #expect(chart.send(.open, to: &state).outputs == ["creak"])
        #expect(chart.activeChild(of: .door, in: state) == .open)
        chart.send(.close, to: &state)
        chart.send(.lock, to: &state)
        #expect(chart.send(.open, to: &state).status == .ignored) // guarded: it is locked
        #expect(state.isIn(.locked) && state.isIn(.closed))
    }

    @Test func theContextAndActions() throws {
        struct Magazine: Hashable, Sendable {
            var rounds = 2
        }
        enum Gun: Int, StatechartStateID {
            typealias Context = Magazine
            case ready, empty
        }
        enum Trigger: Equatable, Sendable { case fire, reload }

        let chart = try Statechart<Gun, Trigger, String>(context: Magazine(), states: [
            .atomic(.ready, transitions: [
                .on(.fire, actions: [
                    .assign { $0.rounds -= 1 },
                    .if({ $0.context.rounds == 0 }, then: [.emit("bang, empty")],
                        else: [.emit { state, _ in "bang, \(state.context.rounds) left" }]),
                ]),
                .always(to: .empty, when: { $0.context.rounds == 0 }),
            ]),
            .atomic(.empty, transitions: [
                .on(.reload, to: .ready, actions: [.assign { $0.rounds = 2 }]),
            ]),
        ])

        var state = chart.initialState
        #expect(chart.send(.fire, to: &state).outputs == ["bang, 1 left"])
        #expect(chart.send(.fire, to: &state).outputs == ["bang, empty"])
        #expect(state.isIn(.empty))
        #expect(chart.send(.fire, to: &state).status == .ignored)
        chart.send(.reload, to: &state)
        #expect(state.context.rounds == 2)
    }

    @Test func raisedEvents() throws {
        enum Step: Int, StatechartStateID { case idle, saving, saved }
        enum Command: Equatable, Sendable { case save, written, notify }

        let chart = try Statechart<Step, Command, String>(states: [
            .atomic(.idle, transitions: [.on(.save, to: .saving, outputs: ["write"])]),
            .atomic(.saving, raiseOnEntry: [.written], transitions: [
                .on(.written, to: .saved, raise: [.notify]),
            ]),
            .atomic(.saved, transitions: [.on(.notify, outputs: ["toast"])]),
        ])

        var state = chart.initialState
        let reply = chart.send(.save, to: &state)       // save, then written, then notify
        #expect(reply.outputs == ["write", "toast"])
        #expect(state.isIn(.saved))
    }
}
