// The platformer character controller: the statechart against the same controller written as
// a nested switch (HandWrittenPlatformer), on the same seeded stream of events.

import ActomatonCore
import PlatformerExample

/// 1,024 events drawn from every kind, seeded, so every run sends the same ones.
let platformerEvents: [Platformer.Event] = {
    var random = SplitMix64(seed: 2026)
    return (0..<1024).map { _ in Platformer.sampleEvents[Int(random.next() % UInt64(Platformer.sampleEvents.count))] }
}()
let platformerMask = platformerEvents.count - 1

/// Outputs folded into a count and a checksum: a sink that never allocates.
struct OutputTally: StatechartOutputs, Equatable {
    var count = 0
    var checksum: UInt64 = 0

    @inline(__always)
    mutating func receive(_ output: Platformer.Output) {
        count &+= 1
        checksum = checksum &* 31 &+ UInt64(output.rawValue)
    }
}

/// The hand-written controller over `events`, from the start.
func handWrittenPlatformer(_ events: [Platformer.Event]) -> (OutputTally, Int) {
    var character = HandWrittenPlatformer()
    var tally = OutputTally()
    var handled = 0
    for event in events where character.send(event, outputs: &tally) { handled &+= 1 }
    return (tally, handled)
}

/// The chart over `events`, from the start.
func chartPlatformer(_ chart: Statechart<Platformer.State, Platformer.Event, Platformer.Output>, _ events: [Platformer.Event]) -> (OutputTally, Int) {
    var state = chart.initialState
    var tally = OutputTally()
    var trace = StatechartNoTrace()
    var handled = 0
    for event in events where chart.send(event, to: &state, outputs: &tally, trace: &trace) == .transitioned { handled &+= 1 }
    return (tally, handled)
}

/// The compiled chart over `events`, from the start.
func compiledPlatformer(_ chart: CompiledStatechart<Platformer.State, Platformer.Event, Platformer.Output>, _ events: [Platformer.Event]) -> (OutputTally, Int) {
    var state = chart.initialState
    var tally = OutputTally()
    var handled = 0
    for event in events where chart.send(event, to: &state, outputs: &tally) == .transitioned { handled &+= 1 }
    return (tally, handled)
}

/// The chart compiled with its context at run time over `events`, from the start.
func evaluatingPlatformer(
    _ chart: CompiledContextStatechart<Platformer.State, Platformer.Event, Platformer.Output>, _ events: [Platformer.Event]
) -> (OutputTally, Int) {
    var state = chart.initialState
    var tally = OutputTally()
    var handled = 0
    for event in events where chart.send(event, to: &state, outputs: &tally) == .transitioned { handled &+= 1 }
    return (tally, handled)
}
