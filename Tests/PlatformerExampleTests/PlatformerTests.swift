import ActomatonCore
import Foundation
import ActomatonTesting
import PlatformerExample
import Testing

typealias P = Platformer.State

extension Platformer.State: CustomStringConvertible {
    public var description: String { name }
}

extension Platformer.Event: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .move(speed): "move(\(speed))"
        case .jump: "jump"
        case .apex: "apex"
        case .leaveGround: "leaveGround"
        case .land: "land"
        case .hit: "hit"
        case .recover: "recover"
        case .draw: "draw"
        case .holster: "holster"
        case .fire: "fire"
        case .tick: "tick"
        case .reload: "reload"
        }
    }
}

@Suite("Platformer: the character controller chart")
struct PlatformerTests {
    let chart = try! Platformer.chart()

    @Test func itStartsIdleWithTheWeaponHolstered() {
        #expect(chart.activeLeaves(in: chart.initialState) == [.idle, .holstered])
        #expect(chart.initialOutputs.isEmpty)
        let state = chart.initialState
        #expect(state.isIn(.character) && state.isIn(.body) && state.isIn(.control) && state.isIn(.grounded))
        #expect(chart.activeChild(of: .grounded, in: state) == .idle)
    }

    @Test func movingJumpingAndLanding() {
        var machine = StatechartTestMachine(chart)
        machine.send(.move(speed: 3), leaves: [.walking, .holstered], outputs: [])
        machine.send(.move(speed: 8), leaves: [.running, .holstered], outputs: [.dustOn])
        machine.send(.jump, leaves: [.jumping, .holstered], outputs: [.dustOff, .jumpSound])
        #expect(machine.send(.move(speed: 0)).status == .ignored) // no steering in the air
        machine.send(.apex, leaves: [.falling, .holstered])
        machine.send(.land, leaves: [.idle, .holstered], outputs: [.landSound])
        machine.send(.leaveGround, leaves: [.falling, .holstered], outputs: [])
    }

    @Test func aStunnedCharacterResumesExactlyWhereItWas() {
        var machine = StatechartTestMachine(chart)
        machine.send(.move(speed: 8))
        machine.send(.draw, leaves: [.running, .aiming], outputs: [.drawSound])
        // The hit stuns the body and drops the aim: the weapon exits first (it is later in the
        // chart), then the body; then the transitions' outputs.
        machine.send(.hit, leaves: [.stunned, .holstered], outputs: [.dustOff, .flash])
        #expect(machine.send(.move(speed: 3)).status == .ignored)
        machine.send(.draw, leaves: [.stunned, .aiming])
        #expect(machine.send(.fire).status == .ignored) // guarded: not while stunned
        // Deep history: back to running, not to the default idle.
        machine.send(.recover, leaves: [.running, .aiming], outputs: [.dustOn])

        machine.send(.jump)
        machine.send(.hit, leaves: [.stunned, .holstered], outputs: [.flash])
        machine.send(.recover, leaves: [.jumping, .holstered])
    }

    @Test func firingRunsItsAnimationAndReturnsToAimingWhenDone() {
        var machine = StatechartTestMachine(chart)
        machine.send(.draw)
        machine.send(.fire, leaves: [.idle, .recoil], outputs: [.shot])
        #expect(machine.state.isIn(.firing))
        machine.send(.tick, leaves: [.idle, .cooldown])
        // Entering the final shotDone raises firing's done event, taken in the same step.
        machine.send(.tick, leaves: [.idle, .aiming], outputs: [.ready])
        machine.send(.fire)
        machine.send(.hit, leaves: [.stunned, .holstered], outputs: [.flash])
    }

    @Test func theMagazineEmptiesClicksAndReloads() {
        var machine = StatechartTestMachine(chart)
        #expect(machine.state.context.ammo == Platformer.magazineSize)
        machine.send(.draw)
        #expect(machine.send(.reload).status == .ignored) // already full
        for left in (0..<Platformer.magazineSize).reversed() {
            machine.send(.fire, leaves: [.idle, .recoil], outputs: [.shot])
            #expect(machine.state.context.ammo == left)
            machine.send(.tick)
            machine.send(.tick, leaves: [.idle, .aiming], outputs: [.ready])
        }
        // Empty: the trigger clicks and the weapon stays aimed.
        machine.send(.fire, leaves: [.idle, .aiming], outputs: [.click])
        machine.send(.reload, leaves: [.idle, .aiming], outputs: [.reloadSound])
        #expect(machine.state.context.ammo == Platformer.magazineSize)
        machine.send(.fire, leaves: [.idle, .recoil], outputs: [.shot])
        // No reloading in the middle of a shot; the magazine is kept when holstered.
        #expect(machine.send(.reload).status == .ignored)
        machine.send(.hit, leaves: [.stunned, .holstered], outputs: [.flash])
        #expect(machine.state.context.ammo == Platformer.magazineSize - 1)
        // Stunned, the trigger does nothing, not even click.
        machine.send(.draw)
        #expect(machine.send(.fire).status == .ignored)
    }

    @Test func aStunWearsOffAfterItsTicks() {
        var machine = StatechartTestMachine(chart)
        machine.send(.move(speed: 8))
        machine.send(.hit, leaves: [.stunned, .holstered], outputs: [.dustOff, .flash])
        #expect(machine.state.context.stunTicks == Platformer.stunDuration)
        for left in (1..<Platformer.stunDuration).reversed() {
            machine.send(.tick, leaves: [.stunned, .holstered], outputs: [])
            #expect(machine.state.context.stunTicks == left)
        }
        // The last tick resumes the body where it was.
        machine.send(.tick, leaves: [.running, .holstered], outputs: [.dustOn])
        #expect(machine.state.context.stunTicks == 0)
        #expect(machine.send(.tick).status == .ignored)

        // A hit while a shot cools down drops the aim; `recover` ends a stun before its ticks.
        machine.send(.draw)
        machine.send(.fire)
        machine.send(.tick, leaves: [.running, .cooldown])
        machine.send(.hit, leaves: [.stunned, .holstered], outputs: [.dustOff, .flash])
        machine.send(.recover, leaves: [.running, .holstered], outputs: [.dustOn])
        #expect(machine.state.context.stunTicks == 0)
    }

    @Test func theWeaponWaitsAimedWhileTheStunWearsOff() {
        var machine = StatechartTestMachine(chart)
        machine.send(.move(speed: 8))
        machine.send(.hit)
        for _ in 1..<Platformer.stunDuration { machine.send(.tick) }
        // Drawing while stunned is allowed, firing is not; the weapon waits aimed, and the
        // last tick of the stun is the body's alone.
        machine.send(.draw, leaves: [.stunned, .aiming])
        machine.send(.tick, leaves: [.running, .aiming], outputs: [.dustOn])
        machine.send(.fire)
        machine.send(.tick, leaves: [.running, .cooldown])
        machine.send(.tick, leaves: [.running, .aiming], outputs: [.ready])
    }

    @Test func oneJumpInTheAir() {
        var machine = StatechartTestMachine(chart)
        machine.send(.jump, leaves: [.jumping, .holstered], outputs: [.jumpSound])
        #expect(machine.state.context.jumps == 1)
        machine.send(.apex, leaves: [.falling, .holstered])
        machine.send(.jump, leaves: [.jumping, .holstered], outputs: [.doubleJumpSound])
        #expect(machine.state.context.jumps == 2)
        #expect(machine.send(.jump).status == .ignored) // no third jump
        // A stun in the air keeps the jumps used.
        machine.send(.hit)
        machine.send(.recover, leaves: [.jumping, .holstered])
        #expect(machine.send(.jump).status == .ignored)
        machine.send(.land, leaves: [.idle, .holstered], outputs: [.landSound])
        #expect(machine.state.context.jumps == 0)
        // Walking off a ledge uses the first jump: one is left in the air.
        machine.send(.leaveGround, leaves: [.falling, .holstered])
        machine.send(.jump, leaves: [.jumping, .holstered], outputs: [.doubleJumpSound])
        #expect(machine.send(.jump).status == .ignored)
    }

    @Test func theGeneratedTestsTakeEveryTransitionAndTheHandWrittenSwitchAgrees() {
        var machine = StatechartTestMachine(chart)
        var handWritten = HandWrittenPlatformer()
        let paths = machine.runCoveringPaths(events: Platformer.sampleEvents) { path, position, reply, state in
            if position == 0 { handWritten = HandWrittenPlatformer() }
            let event = path[position]
            var outputs: [Platformer.Output] = []
            let handled = handWritten.send(event, outputs: &outputs)
            #expect(handled == (reply.status == .transitioned), "\(path) at \(event)")
            #expect(outputs == reply.outputs, "\(path) at \(event)")
            #expect(handWritten.activeLeaves == chart.activeLeaves(in: state), "\(path) at \(event)")
            #expect(handWritten.counters == state.context, "\(path) at \(event)")
        }
        machine.expectEveryTransitionTaken()
        #expect(machine.untakenTransitions.isEmpty)
        #expect(!paths.isEmpty)
        #expect(chart.unreachedStates(events: Platformer.sampleEvents).isEmpty)
    }

    @Test func tenThousandRandomEventsAgreeWithTheHandWrittenSwitch() {
        var random = SplitMix64(seed: 42)
        var state = chart.initialState
        var handWritten = HandWrittenPlatformer()
        for step in 0..<10_000 {
            let event = Platformer.sampleEvents[Int(random.next() % UInt64(Platformer.sampleEvents.count))]
            let reply = chart.send(event, to: &state)
            var outputs: [Platformer.Output] = []
            let handled = handWritten.send(event, outputs: &outputs)
            guard handled == (reply.status == .transitioned), outputs == reply.outputs,
                  handWritten.activeLeaves == chart.activeLeaves(in: state), handWritten.counters == state.context else {
                Issue.record("step \(step): \(event): chart \(reply) \(chart.activeLeaves(in: state)) \(state.context), hand-written \(handled) \(outputs) \(handWritten.activeLeaves) \(handWritten.counters)")
                return
            }
        }
    }

    @Test func diagramsShowTheHierarchyAndTheRegions() {
        let mermaid = chart.mermaidStateDiagram()
        #expect(mermaid.hasPrefix("stateDiagram-v2\n    [*] --> character\n    state character {\n"))
        #expect(mermaid.contains("        state body {"))
        #expect(mermaid.contains("\n        --\n        state weapon {"))
        #expect(mermaid.contains("state \"H*\" as resume"))
        #expect(mermaid.contains("idle --> walking : move 1…5"))
        #expect(mermaid.contains("control --> stunned : hit"))
        #expect(mermaid.contains("firing --> aiming : done.state.firing"))
        #expect(mermaid.contains("aiming --> firing : fire [guarded]"))
        #expect(mermaid.contains("shotDone --> [*]"))

        let dot = chart.graphvizDOT(name: "Platformer")
        #expect(dot.hasPrefix("digraph \"Platformer\" {\n    compound=true;"))
        #expect(dot.contains("subgraph \"cluster_\(P.grounded.rawValue)\""))
        #expect(dot.contains("style=\"rounded,dashed\""))
        #expect(dot.contains("[shape=circle, label=\"H*\"]"))
        #expect(dot.contains("[shape=doublecircle, label=\"shotDone\"]"))
        // The chart starts in a parallel state: the start arrow points at its cluster.
        #expect(dot.contains("\"[*]\" -> \"\(P.character.rawValue)\" [lhead=\"cluster_\(P.character.rawValue)\"];"))
        #expect(dot.contains("\"\(P.control.rawValue)\" -> \"\(P.stunned.rawValue)\" [label=\"hit\", ltail=\"cluster_\(P.control.rawValue)\"]"))
    }

    @Test func theExamplesReadmeShowsTheCurrentDiagram() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readmeURL = root.appendingPathComponent("Plugins/PlatformerExample/README.md")
        var readme = try String(contentsOf: readmeURL, encoding: .utf8)
        let diagram = chart.mermaidStateDiagram(stateName: { $0.name }, eventName: { $0.description })
        if ProcessInfo.processInfo.environment["ACTOMATON_REGENERATE"] != nil,
           let start = readme.range(of: "```mermaid\n"),
           let end = readme.range(of: "```\n", range: start.upperBound..<readme.endIndex) {
            readme.replaceSubrange(start.lowerBound..<end.upperBound, with: "```mermaid\n" + diagram + "```\n")
            try readme.write(to: readmeURL, atomically: true, encoding: .utf8)
        }
        #expect(readme.contains("```mermaid\n" + diagram + "```\n"), "regenerate the diagram in Plugins/PlatformerExample/README.md")
    }
}
