import Foundation
import Testing

/// The private server's own promises to the other tests.
@Suite("Cluster tests: the private PostgreSQL server")
struct PostgresTestServerTests {
    /// The server inherited every descriptor the tests had open when it started: holding the
    /// write end of another test's pipe, it kept that test's reader from ever seeing the end,
    /// and `make test` hung. What it starts now holds none of them.
    @Test func whatItStartsHoldsNoneOfTheTestsDescriptors() async throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]) }
        // A child left running in the background, as the server is.
        try PostgresTestServer.run("/bin/sh", ["-c", "sleep 5 &"])
        close(ends[1])
        var reader = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        // At once when nobody else holds the write end; after the child's 5 s otherwise.
        let ready = poll(&reader, 1, 3000)
        #expect(ready == 1 && reader.revents & Int16(POLLHUP) != 0, "the background child holds the pipe's write end")
    }
}
