import HostCommandLine
import Testing

/// A flood of one error line is printed once a second, with the count of what was not.
@Suite("RepeatedLineFilter: identical errors are rate-limited")
struct RepeatedLineFilterTests {
    let start = ContinuousClock.now

    @Test func repeatsWithinTheIntervalAreCountedNotPrinted() {
        var filter = RepeatedLineFilter(interval: .seconds(1))
        var printed: [String] = []
        for step in 0..<10_000 {
            printed += filter.admit("error: x", at: start + .microseconds(step * 50))
        }
        #expect(printed == ["error: x"], "10,000 in half a second: one line")
        printed += filter.admit("error: x", at: start + .seconds(1))
        #expect(printed.last == "error: x (repeated 9999 more times since it was last printed)")
        printed += filter.admit("error: x", at: start + .milliseconds(1500))
        #expect(filter.finish() == ["error: the error above was repeated 1 more time (not printed)"])
        #expect(filter.finish() == [], "said once")
    }

    @Test func aDifferentLineFirstCountsTheRepeatsOfTheOneBefore() {
        var filter = RepeatedLineFilter()
        #expect(filter.admit("error: a", at: start) == ["error: a"])
        #expect(filter.admit("error: a", at: start) == [])
        #expect(filter.admit("error: a", at: start) == [])
        #expect(filter.admit("error: b", at: start) == ["error: the error above was repeated 2 more times (not printed)", "error: b"])
        #expect(filter.admit("error: a", at: start) == ["error: a"], "a line seen before, but not the last one, prints")
        #expect(filter.finish() == [])
    }

    @Test func aLineRepeatedSlowlyPrintsEveryTime() {
        var filter = RepeatedLineFilter(interval: .seconds(1))
        var printed: [String] = []
        for second in 0..<5 { printed += filter.admit("error: slow", at: start + .seconds(second)) }
        #expect(printed == Array(repeating: "error: slow", count: 5))
    }
}
