#ifndef TEST_PROCESS_SIGNALS_H
#define TEST_PROCESS_SIGNALS_H

/// Whether SIGPIPE is ignored in the test process (it is from its start: see the .c file).
int actomaton_test_sigpipe_ignored(void);

#endif
