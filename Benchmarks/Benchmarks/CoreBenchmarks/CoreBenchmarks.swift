// ActomatonCore against the physical limit: each machine is measured beside a hand-written
// loop doing the same work on a plain struct, in the same run. `make bench` prints the ratios.
//
// Naming: "<group>: <variant>"; the variant "baseline" is the hand-written loop of its group.

import ActomatonCore
import Benchmark
import BenchmarkSupport
import CSVExample
import PlatformerExample

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .perOperation

    // MARK: Counter on NoOpEffectManager

    Benchmark("counter: baseline") { benchmark in
        var state = CounterState()
        for index in benchmark.scaledIterations {
            handWrittenCounter(counterActions[index & counterMask], &state)
        }
        blackHole(state)
    }

    Benchmark("counter: MealyMachine, struct reducer, NoOpEffectManager") { benchmark in
        var machine = MealyMachine(state: CounterState(), reducer: CounterReducer())
        for index in benchmark.scaledIterations {
            machine.send(counterActions[index & counterMask])
        }
        blackHole(machine.state)
    }

    Benchmark("counter: MealyMachine, closure MealyReducer, NoOpEffectManager") { benchmark in
        var machine = MealyMachine(state: CounterState(), reducer: MealyReducer(CounterReducer()))
        for index in benchmark.scaledIterations {
            machine.send(counterActions[index & counterMask])
        }
        blackHole(machine.state)
    }

    // MARK: Feedback chain on ActionEffectManager

    Benchmark("feedback: baseline") { benchmark in
        var state = ChainState()
        for index in benchmark.scaledIterations {
            handWrittenChain(chainActions[index & counterMask], &state)
        }
        blackHole(state)
    }

    Benchmark("feedback: MealyMachine, struct reducer, ActionEffectManager, Feedback output") { benchmark in
        var machine = MealyMachine(state: ChainState(), reducer: InlineChainReducer(), effectManager: ActionEffectManager())
        for index in benchmark.scaledIterations {
            blackHole(machine.send(chainActions[index & counterMask]))
        }
        blackHole(machine.state)
    }

    Benchmark("feedback: MealyMachine, struct reducer, ActionEffectManager, [Action] output") { benchmark in
        var machine = MealyMachine(state: ChainState(), reducer: ArrayChainReducer(), effectManager: ActionEffectManager())
        for index in benchmark.scaledIterations {
            blackHole(machine.send(chainActions[index & counterMask]))
        }
        blackHole(machine.state)
    }

    // MARK: Statechart: the platformer character controller

    let chart = try! Platformer.chart()
    precondition(chartPlatformer(chart, platformerEvents) == handWrittenPlatformer(platformerEvents),
                 "the platformer chart and the hand-written switch disagree")

    Benchmark("platformer: baseline (hand-written nested switch)") { benchmark in
        var character = HandWrittenPlatformer()
        var tally = OutputTally()
        for index in benchmark.scaledIterations {
            blackHole(character.send(platformerEvents[index & platformerMask], outputs: &tally))
        }
        blackHole(tally)
    }

    let compiled = try! Platformer.compiled(chart)
    precondition(compiledPlatformer(compiled, platformerEvents) == handWrittenPlatformer(platformerEvents),
                 "the compiled platformer chart and the hand-written switch disagree")

    Benchmark("platformer: CompiledStatechart.send, outputs into a sink") { benchmark in
        var state = compiled.initialState
        var tally = OutputTally()
        for index in benchmark.scaledIterations {
            blackHole(compiled.send(platformerEvents[index & platformerMask], to: &state, outputs: &tally))
        }
        blackHole(tally)
    }

    let evaluating = try! Platformer.compiledEvaluatingContext(chart)
    precondition(evaluatingPlatformer(evaluating, platformerEvents) == handWrittenPlatformer(platformerEvents),
                 "the platformer chart compiled with its context at run time and the hand-written switch disagree")

    Benchmark("platformer: CompiledContextStatechart.send (context at run time), outputs into a sink") { benchmark in
        var state = evaluating.initialState
        var tally = OutputTally()
        for index in benchmark.scaledIterations {
            blackHole(evaluating.send(platformerEvents[index & platformerMask], to: &state, outputs: &tally))
        }
        blackHole(tally)
    }

    Benchmark("platformer: CompiledStatechart.send(eventClass:), classified by the caller") { benchmark in
        var state = compiled.initialState
        var tally = OutputTally()
        for index in benchmark.scaledIterations {
            let event = platformerEvents[index & platformerMask]
            blackHole(compiled.send(eventClass: Platformer.eventClass(event), to: &state, outputs: &tally))
        }
        blackHole(tally)
    }

    Benchmark("platformer: MealyMachine, CompiledStatechartReducer, ReplyEffectManager") { benchmark in
        var machine = MealyMachine(
            state: compiled.initialState, reducer: CompiledStatechartReducer(compiled, collecting: OutputTally.self),
            effectManager: ReplyEffectManager())
        for index in benchmark.scaledIterations {
            blackHole(machine.send(platformerEvents[index & platformerMask]))
        }
    }

    Benchmark("platformer: Statechart.send, outputs into a sink") { benchmark in
        var state = chart.initialState
        var tally = OutputTally()
        var trace = StatechartNoTrace()
        for index in benchmark.scaledIterations {
            blackHole(chart.send(platformerEvents[index & platformerMask], to: &state, outputs: &tally, trace: &trace))
        }
        blackHole(tally)
    }

    Benchmark("platformer: MealyMachine, StatechartReducer, ReplyEffectManager") { benchmark in
        var machine = MealyMachine(
            state: chart.initialState, reducer: StatechartReducer(chart, collecting: OutputTally.self),
            effectManager: ReplyEffectManager())
        for index in benchmark.scaledIterations {
            blackHole(machine.send(platformerEvents[index & platformerMask]))
        }
    }

    Benchmark("platformer: Statechart.send, outputs as an [Output]") { benchmark in
        var state = chart.initialState
        for index in benchmark.scaledIterations {
            blackHole(chart.send(platformerEvents[index & platformerMask], to: &state))
        }
    }

    // MARK: CSV tokenizer

    let csv = sampleCSV(byteCount: 1 << 20)
    let expected = machineCSV(csv)
    var handWritten = FieldSink()
    handWrittenCSV(csv, into: &handWritten)
    precondition(handWritten == expected, "the hand-written CSV loop disagrees with CSVTokenizer: \(handWritten) vs \(expected)")
    let csvConfiguration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal, .throughput],
        timeUnits: .microseconds,
        warmupIterations: 1,
        scalingFactor: .one,
        maxDuration: .seconds(3),
        maxIterations: 200
    )

    Benchmark("csv: baseline", configuration: csvConfiguration) { benchmark in
        for _ in benchmark.scaledIterations {
            var sink = FieldSink()
            handWrittenCSV(csv, into: &sink)
            blackHole(sink)
        }
    }

    Benchmark("csv: MealyMachine, CSVTokenizer, ReplyEffectManager", configuration: csvConfiguration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(machineCSV(csv))
        }
    }

    let scanned = scannedCSV(csv)
    precondition((scanned.fields, scanned.records) == (expected.fields, expected.records),
                  "CSVScanner disagrees with CSVTokenizer: \(scanned) vs \(expected)")
    Benchmark("csv: MealyMachine, CSVScanner, bulk into a sink", configuration: csvConfiguration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(scannedCSV(csv))
        }
    }

    // MARK: CSV parsers, on 64 MiB: the machine against the parsers users already have

    let big = sampleCSV(byteCount: 64 << 20)
    let bigText = String(decoding: big, as: UTF8.self)
    let parserConfiguration = Benchmark.Configuration.perWorkload(
        metrics: [.wallClock, .mallocCountTotal, .throughput],
        maxDuration: .seconds(20),
        maxIterations: 5
    )
    Benchmark("csv-64mib: baseline (CSVScanner on a MealyMachine, bulk, fields as ranges)", configuration: parserConfiguration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(scannedCSV(big)) }
    }
    Benchmark("csv-64mib: CSVScanner, every field made a String", configuration: parserConfiguration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(scannedCSVStrings(big)) }
    }
    Benchmark("csv-64mib: yaslab/CSV.swift 2.5.2 (CSVReader, every row)", configuration: parserConfiguration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try csvSwiftRows(bigText)) }
    }
    Benchmark("csv-64mib: swiftcsv/SwiftCSV 0.10.0 (EnumeratedCSV, loadColumns false)", configuration: parserConfiguration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try swiftCSVRows(bigText)) }
    }
}
