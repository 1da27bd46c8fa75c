import IssueReporting

/// Where a test called the machine: every failure is reported there.
struct SourceLocation: Sendable {
    let fileID: StaticString
    let filePath: StaticString
    let line: UInt
    let column: UInt

    /// Reports a failure at this location, to Swift Testing or XCTest.
    func fail(_ message: String) {
        reportIssue(message, fileID: fileID, filePath: filePath, line: line, column: column)
    }

    /// Reports an error thrown by the test's own closure at this location.
    func fail(_ error: any Error, _ message: String) {
        reportIssue(error, message, fileID: fileID, filePath: filePath, line: line, column: column)
    }
}
