import ActomatonCore
import Testing

private enum Letter: Equatable, Sendable { case a, b }

private struct Pair: Equatable, Sendable {
    var left = 0
    var right = 0
}

private enum Screen: Equatable, Sendable {
    case counter(Int)
    case text(String)
}

private enum AppAction: Equatable, Sendable {
    case counter(Int)
    case other
}

@Suite("MealyReducer composition")
struct MealyReducerCompositionTests {
    /// Appends its tag to the state and outputs it, so both order and outputs are visible.
    private func tagger(_ tag: String) -> MealyReducer<Letter, [String], Void, [String]> {
        MealyReducer { action, log, _ in
            log.append("\(tag)\(action == .a ? "a" : "b")")
            return [tag]
        }
    }

    @Test func combineRunsReducersInOrderAndJoinsOutputsInOrder() {
        let reducer = MealyReducer.combine(tagger("1"), tagger("2"), tagger("3"))
        var log: [String] = []
        let output = reducer.run(.a, &log, ())
        #expect(log == ["1a", "2a", "3a"])
        #expect(output == ["1", "2", "3"])
    }

    @Test func combineOfNothingIsTheEmptyReducer() {
        let reducer = MealyReducer<Letter, [String], Void, [String]>.combine([])
        var log: [String] = ["kept"]
        #expect(reducer.run(.b, &log, ()) == [])
        #expect(log == ["kept"])
    }

    @Test func laterReducersSeeEarlierReducersState() {
        let double = MealyReducer<Letter, Int, Void, Void> { _, n, _ in n *= 2 }
        let increment = MealyReducer<Letter, Int, Void, Void> { _, n, _ in n += 1 }
        var n = 5
        MealyReducer.combine(double, increment).run(.a, &n, ())
        #expect(n == 11)
        n = 5
        MealyReducer.combine(increment, double).run(.a, &n, ())
        #expect(n == 12)
    }

    @Test func contramapActionRunsOnlyForItsOwnActions() {
        let counter = MealyReducer<Int, Int, Void, [Int]> { delta, count, _ in
            count += delta
            return [count]
        }
        let app = counter.contramap(action: { (action: AppAction) -> Int? in
            if case let .counter(delta) = action { delta } else { nil }
        })
        var count = 10
        #expect(app.run(.counter(5), &count, ()) == [15])
        #expect(app.run(.other, &count, ()) == [])
        #expect(count == 15)
    }

    @Test func contramapActionWithVoidOutput() {
        let counter = MealyReducer<Int, Int, Void, Void> { delta, count, _ in count += delta }
        let app = counter.contramap(action: { (action: AppAction) -> Int? in
            if case let .counter(delta) = action { delta } else { nil }
        })
        var count = 0
        app.run(.counter(2), &count, ())
        app.run(.other, &count, ())
        #expect(count == 2)
    }

    @Test func contramapStateThroughALensModifiesOnlyThePart() {
        let increment = MealyReducer<Letter, Int, Void, [Int]> { _, n, _ in n += 1; return [n] }
        let right = StateLens<Pair, Int>(get: { $0.right }, modify: { pair, body in body(&pair.right) })
        var pair = Pair(left: 7, right: 1)
        #expect(increment.contramap(state: right).run(.a, &pair, ()) == [2])
        #expect(pair == Pair(left: 7, right: 2))
        #expect(right.get(pair) == 2)
    }

    @Test func lensBuiltFromGetAndSetBehavesLikeModify() {
        let increment = MealyReducer<Letter, Int, Void, Void> { _, n, _ in n += 1 }
        let left = StateLens<Pair, Int>(get: { $0.left }, set: { $0.left = $1 })
        var pair = Pair()
        increment.contramap(state: left).run(.a, &pair, ())
        #expect(pair == Pair(left: 1, right: 0))
    }

    @Test func contramapStateThroughAPrismRunsOnlyInItsCase() {
        let increment = MealyReducer<Letter, Int, Void, [String]> { _, n, _ in n += 1; return ["counted"] }
        let counter = StatePrism<Screen, Int>(
            extract: { if case let .counter(n) = $0 { n } else { nil } },
            embed: { .counter($0) }
        )
        let screen = increment.contramap(state: counter)

        var state = Screen.counter(1)
        #expect(screen.run(.a, &state, ()) == ["counted"])
        #expect(state == .counter(2))

        state = .text("hello")
        #expect(screen.run(.a, &state, ()) == [])
        #expect(state == .text("hello"))
    }

    @Test func optionalRunsOnlyWhileThereIsAState() {
        let increment = MealyReducer<Letter, Int, Void, Void> { _, n, _ in n += 1 }.optional()
        var state: Int? = nil
        increment.run(.a, &state, ())
        #expect(state == nil)
        state = 3
        increment.run(.a, &state, ())
        #expect(state == 4)
    }

    @Test func contramapEnvironmentPicksTheLocalDependencies() {
        struct Dependencies { var step: Int }
        let add = MealyReducer<Letter, Int, Int, Void> { _, n, step in n += step }
        let app = add.contramap(environment: { (dependencies: Dependencies) in dependencies.step })
        var n = 0
        app.run(.a, &n, Dependencies(step: 3))
        #expect(n == 3)
    }

    @Test func mapOutputTransformsEveryOutput() {
        let reducer = MealyReducer<Letter, Int, Void, Int> { _, n, _ in n += 1; return n }
            .map(output: { [$0, $0 * 10] })
        var n = 0
        #expect(reducer.run(.a, &n, ()) == [1, 10])
    }

    @Test func composedReducersLiftStepByStep() {
        // counter on Int -> case of Screen -> optional field of an app state, for app actions.
        struct App: Equatable { var screen: Screen? }
        let counter = MealyReducer<Int, Int, Void, Void> { delta, n, _ in n += delta }
        let app = counter
            .contramap(action: { (action: AppAction) -> Int? in
                if case let .counter(delta) = action { delta } else { nil }
            })
            .contramap(state: StatePrism<Screen, Int>(
                extract: { if case let .counter(n) = $0 { n } else { nil } },
                embed: { .counter($0) }
            ))
            .optional()
            .contramap(state: StateLens<App, Screen?>(get: { $0.screen }, modify: { app, body in body(&app.screen) }))

        var state = App(screen: .counter(1))
        app.run(.counter(4), &state, ())
        app.run(.other, &state, ())
        #expect(state == App(screen: .counter(5)))

        state = App(screen: nil)
        app.run(.counter(4), &state, ())
        #expect(state == App(screen: nil))
    }
}
