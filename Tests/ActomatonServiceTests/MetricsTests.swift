@testable import ActomatonService
import Testing

@Suite struct MetricsTests {
    /// Regression (audit): `/metrics` had no `# HELP` lines, so an operator reading it (or a
    /// dashboard tool) had only the names. Every metric the service serves, the journal's and
    /// the cluster's included, is described once, right before its `# TYPE` line.
    @Test func everyMetricIsDescribed() {
        let metrics = ServiceMetrics(journaled: true, clustered: true)
        metrics.actionFinished(plugin: "counter", outcome: "ok", duration: .milliseconds(1))
        metrics.actionFinished(plugin: "counter", outcome: "failed", duration: .milliseconds(1))
        metrics.effectActionFinished(plugin: "counter", applied: true)
        metrics.journalCommitted(duration: .microseconds(300), records: 2)
        metrics.requestForwarded()
        metrics.fencingRefused(1)
        let lines = metrics.prometheusText().split(separator: "\n", omittingEmptySubsequences: false)
        let typed = lines.enumerated().filter { $0.element.hasPrefix("# TYPE ") }
        #expect(typed.count == ServiceMetrics.help.count, "\(lines)")
        for (index, line) in typed {
            let name = line.dropFirst("# TYPE ".count).split(separator: " ")[0]
            #expect(index > 0 && lines[index - 1] == "# HELP \(name) \(ServiceMetrics.help[String(name)] ?? "?")", "\(name)")
        }
        #expect(lines.filter { $0.hasPrefix("# HELP ") }.count == typed.count, "one line each")
        #expect(lines.last == "", "the text ends with its last line's newline")
    }

    /// The lines are added around the registry's text, nothing of it changed.
    @Test func helpLinesLeaveTheRestAsItWas() {
        #expect(ServiceMetrics.withHelp("") == "")
        #expect(ServiceMetrics.withHelp("# TYPE other counter\nother 1\n") == "# TYPE other counter\nother 1\n")
        #expect(ServiceMetrics.withHelp("# TYPE actomaton_watchers gauge\nactomaton_watchers 2\n")
            == "# HELP actomaton_watchers WebSocket watchers connected.\n# TYPE actomaton_watchers gauge\nactomaton_watchers 2\n")
    }
}
