import NIOCore

extension TimeAmount {
    /// `duration` (not negative) in NIO's nanoseconds, at most `Int64.max` of them (292 years).
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        self = .nanoseconds(overflow || overflowAgain ? .max : sum)
    }
}
