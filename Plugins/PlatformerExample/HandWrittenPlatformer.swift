import ActomatonCore

/// The platformer controller of ``Platformer/chart()`` written by hand as a nested `switch`:
/// the baseline the statechart is benchmarked against, held to the chart's behaviour (state
/// and outputs, in order) by tests generated from the chart.
public struct HandWrittenPlatformer: Equatable, Sendable {
    /// Where the body is when it is not stunned (and where it resumes after).
    public enum Motion: UInt8, Sendable {
        case idle, walking, running, jumping, falling
    }

    /// The weapon region.
    public enum Weapon: UInt8, Sendable {
        case holstered, aiming, recoil, cooldown
    }

    /// The body's motion, kept while stunned.
    public var motion = Motion.idle
    /// Whether the body is stunned.
    public var isStunned = false
    /// The weapon's state.
    public var weapon = Weapon.holstered
    /// The chart's context: rounds left, stun ticks left, jumps used.
    public var counters = Platformer.Counters()

    /// A character standing idle with its weapon holstered.
    @inlinable
    public init() {}

    /// Runs `event`, emitting what the chart would, in the same order; returns whether
    /// anything happened.
    @inlinable
    public mutating func send<Sink: OutputSink>(_ event: Platformer.Event, outputs: inout Sink) -> Bool
    where Sink.Output == Platformer.Output {
        switch event {
        case let .move(speed):
            guard !isStunned else { return false }
            let target: Motion = speed <= 0 ? .idle : speed <= 5 ? .walking : .running
            switch motion {
            case .idle, .walking, .running:
                guard target != motion else { return false }
                if motion == .running { outputs.receive(.dustOff) }
                motion = target
                if target == .running { outputs.receive(.dustOn) }
                return true
            case .jumping, .falling:
                return false
            }
        case .jump, .leaveGround:
            guard !isStunned else { return false }
            switch motion {
            case .idle, .walking, .running:
                if motion == .running { outputs.receive(.dustOff) }
                if event == .jump { outputs.receive(.jumpSound) }
                motion = event == .jump ? .jumping : .falling
                counters.jumps = 1
                return true
            case .jumping, .falling:
                // One more jump in the air, up to the limit.
                guard event == .jump, counters.jumps < Platformer.jumpLimit else { return false }
                outputs.receive(.doubleJumpSound)
                motion = .jumping
                counters.jumps += 1
                return true
            }
        case .apex:
            guard !isStunned, motion == .jumping else { return false }
            motion = .falling
            return true
        case .land:
            guard !isStunned, motion == .jumping || motion == .falling else { return false }
            outputs.receive(.landSound)
            motion = .idle
            counters.jumps = 0
            return true
        case .hit:
            // The weapon drops its aim (it exits first, silently), and the body is stunned.
            var handled = false
            switch weapon {
            case .aiming, .recoil, .cooldown:
                weapon = .holstered
                handled = true
            case .holstered:
                break
            }
            if !isStunned {
                if motion == .running { outputs.receive(.dustOff) }
                outputs.receive(.flash)
                isStunned = true
                counters.stunTicks = Platformer.stunDuration
                handled = true
            }
            return handled
        case .recover:
            guard isStunned else { return false }
            recover(outputs: &outputs)
            return true
        case .draw:
            guard weapon == .holstered else { return false }
            outputs.receive(.drawSound)
            weapon = .aiming
            return true
        case .holster:
            guard weapon == .aiming else { return false }
            outputs.receive(.holsterSound)
            weapon = .holstered
            return true
        case .fire:
            guard weapon == .aiming, !isStunned else { return false }
            if counters.ammo == 0 {
                outputs.receive(.click)
                return true
            }
            counters.ammo -= 1
            outputs.receive(.shot)
            weapon = .recoil
            return true
        case .reload:
            guard weapon == .aiming, counters.ammo < Platformer.magazineSize else { return false }
            outputs.receive(.reloadSound)
            counters.ammo = Platformer.magazineSize
            return true
        case .tick:
            // Both regions take the tick: the stun counts down (and wears off, the body
            // resuming), then the weapon's animation steps; its `ready` comes from the done
            // event, after the step's entries.
            var handled = false
            if isStunned {
                if counters.stunTicks <= 1 {
                    recover(outputs: &outputs)
                } else {
                    counters.stunTicks -= 1
                }
                handled = true
            }
            switch weapon {
            case .recoil:
                weapon = .cooldown
                handled = true
            case .cooldown:
                outputs.receive(.ready)
                weapon = .aiming
                handled = true
            case .holstered, .aiming:
                break
            }
            return handled
        }
    }

    /// The stun wears off: the body resumes where it was.
    @inlinable
    mutating func recover<Sink: OutputSink>(outputs: inout Sink) where Sink.Output == Platformer.Output {
        isStunned = false
        counters.stunTicks = 0
        if motion == .running { outputs.receive(.dustOn) }
    }

    /// The active leaves, as the chart names them: the body's, then the weapon's.
    public var activeLeaves: [Platformer.State] {
        let body: Platformer.State = if isStunned {
            .stunned
        } else {
            switch motion {
            case .idle: .idle
            case .walking: .walking
            case .running: .running
            case .jumping: .jumping
            case .falling: .falling
            }
        }
        let weapon: Platformer.State = switch weapon {
        case .holstered: .holstered
        case .aiming: .aiming
        case .recoil: .recoil
        case .cooldown: .cooldown
        }
        return [body, weapon]
    }
}
