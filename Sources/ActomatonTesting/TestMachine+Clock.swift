import Clocks
import IssueReporting

extension TestMachine {
    /// Moves the test clock forward by `duration`, waking every effect whose sleep ends by then,
    /// in order of their deadlines.
    ///
    /// Effects started just before get to their sleep first. Actions the woken effects send
    /// back run as they arrive; assert them with `receive`.
    public func advance(by duration: Duration = .zero) async {
        await settle()
        await clock.advance(by: duration)
        await settle()
    }

    /// Moves the test clock forward until no effect sleeps on it any more.
    ///
    /// Fails if effects keep sleeping (a timer that is never stopped) after `timeout` of real
    /// time; use ``advance(by:)`` for those. The default is generous (30 seconds): on a loaded
    /// machine, with other tests holding the concurrency pool's threads, the effects may take
    /// a while to reach their sleeps, and only a test that fails waits for all of it.
    public func run(
        timeout: Duration = .seconds(30),
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        let realClock = ContinuousClock()
        let deadline = realClock.now.advanced(by: timeout)
        while true {
            await settle()
            // An effect woken by the last round may sleep again only once it has run on: go
            // round until nothing sleeps, or the time is up (the test clock then reports).
            guard await hasSleepers else { return }
            guard realClock.now < deadline else {
                SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
                    .fail(Failure.clockStillHasSleepers(timeout: timeout))
                return
            }
            // `TestClock.run` reports its own timeout (naming the time left, not `timeout`) and
            // then ends every sleep with `CancellationError`, so nothing would sleep any more
            // when the loop looks again: silence it, and report here that the time ran out.
            await withIssueReporters([]) {
                await clock.run(timeout: realClock.now.duration(to: deadline))
            }
            guard realClock.now < deadline else {
                SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
                    .fail(Failure.clockStillHasSleepers(timeout: timeout))
                return
            }
        }
    }

    /// Whether some task sleeps on the test clock.
    private var hasSleepers: Bool {
        get async {
            do {
                try await clock.checkSuspension()
                return false
            } catch {
                return true
            }
        }
    }
}
