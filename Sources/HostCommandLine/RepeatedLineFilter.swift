/// Keeps a flood of one error line from drowning the terminal: a line identical to the last
/// one printed is printed again at most once per ``interval``, with how many times it was
/// suppressed in between; a different line, or the end (``finish()``), first says how many
/// repeats of the previous one were suppressed.
///
/// A pure state machine: the caller gives the time, so tests drive it without a clock.
///
/// ```swift
/// var filter = RepeatedLineFilter()
/// for line in filter.admit("error: x", at: .now) { print(line) }
/// ```
public struct RepeatedLineFilter: Sendable {
    /// How often a repeated line is printed again.
    public let interval: Duration
    private var last: String?
    private var lastPrinted: ContinuousClock.Instant?
    private var suppressed = 0

    /// A filter that prints a repeated line at most once per `interval`.
    public init(interval: Duration = .seconds(1)) {
        self.interval = interval
    }

    /// The lines to print for `line`, arriving at `now`: none while it repeats within the
    /// interval.
    public mutating func admit(_ line: String, at now: ContinuousClock.Instant) -> [String] {
        if line == last, let lastPrinted {
            if now - lastPrinted < interval {
                suppressed += 1
                return []
            }
            self.lastPrinted = now
            defer { suppressed = 0 }
            return suppressed == 0 ? [line] : ["\(line) (repeated \(Self.moreTimes(suppressed)) since it was last printed)"]
        }
        var lines = finish()
        lines.append(line)
        last = line
        lastPrinted = now
        return lines
    }

    /// A note of the repeats suppressed since the last line printed, if any: for the end of
    /// the output.
    public mutating func finish() -> [String] {
        defer { suppressed = 0 }
        guard suppressed > 0 else { return [] }
        return ["error: the error above was repeated \(Self.moreTimes(suppressed)) (not printed)"]
    }

    private static func moreTimes(_ count: Int) -> String {
        count == 1 ? "1 more time" : "\(count) more times"
    }
}
