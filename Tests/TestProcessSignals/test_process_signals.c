// The test process ignores SIGPIPE from its start, before any test runs.
//
// A test that writes to a child's standard input, or to a socket, after the other end closed
// (a host that refused its command line and exited at once; a server that closed the
// connection) would otherwise end the whole test run by SIGPIPE: no failure, no line, the
// run's output cut off (CI, once). SwiftNIO ignores SIGPIPE too, but only once it makes its
// first socket, which tests started early did not wait for. The write then fails with EPIPE,
// which the test sees. Children inherit the disposition: a test of how the host meets a
// broken pipe restores the default for it (`env --default-signal=PIPE`).
#include <signal.h>
#include "test_process_signals.h"

__attribute__((constructor)) static void ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

int actomaton_test_sigpipe_ignored(void) {
    struct sigaction current;
    return sigaction(SIGPIPE, 0, &current) == 0 && current.sa_handler == SIG_IGN;
}
